"""A network the test can take away from a browser page, as Wi-Fi and a
sleeping laptop take it away.

Playwright's context.set_offline fails new requests but leaves an open
WebSocket working, so the page is put behind this TCP relay (`Wire`), which
can hold every byte both ways (the network gone: no close frame, no FIN) and
give the network back either by resetting the held connections (a new
network: both ends learn at once), by carrying on (the same network, nothing
lost), silently (the server's end gone, the browser's end never told
until it sends), or not at all for the connections it held (nothing on them
ever arrives again, and nobody is told)."""

from __future__ import annotations

import select
import socket
import struct
import threading
import time


def _reset(sock: socket.socket | None) -> None:
    """Close with a TCP reset, as a dead network path's far end answers."""
    if sock is None:
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class _Pair:
    def __init__(self, client: socket.socket, upstream: socket.socket):
        self.client, self.upstream = client, upstream
        self.state = "live"  # live | reset | silent | dead | closed
        self.websocket = False  # its first request asked for an upgrade


class Wire:
    """A TCP relay in front of a server on 127.0.0.1; `url` is what the browser uses."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.up = True
        self.pairs: list[_Pair] = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                _reset(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            pair = _Pair(client, upstream)
            with self.lock:
                self.pairs.append(pair)
            threading.Thread(target=self._relay, args=(pair,), daemon=True).start()

    def _relay(self, pair: _Pair) -> None:
        c: socket.socket = pair.client
        u: socket.socket | None = pair.upstream
        try:
            while True:
                if pair.state == "reset" or self.closed:
                    _reset(c)
                    _reset(u)
                    return
                if pair.state == "silent":
                    # The server's end is gone; the browser's is never told,
                    # until it sends something (then the far end resets it).
                    if u is not None:
                        _reset(u)
                        u = None
                    ready, _, _ = select.select([c], [], [], 0.2)
                    if ready:
                        _reset(c)
                        return
                    continue
                if not self.up or u is None or pair.state == "dead":
                    time.sleep(0.05)  # nothing read, nothing forwarded: the bytes wait in the kernels
                    continue
                ready, _, _ = select.select([c, u], [], [], 0.1)
                for s in ready:
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        for end in (c, u):
                            try:
                                end.close()
                            except OSError:
                                pass
                        pair.state = "closed"
                        return
                    if s is c and not pair.websocket and b"upgrade: websocket" in data.lower():
                        pair.websocket = True
                    (u if s is c else c).sendall(data)
        except OSError:
            _reset(c)
            _reset(u)
            pair.state = "closed"

    def down(self) -> None:
        """The network goes: every byte held both ways, new connections refused."""
        self.up = False

    def back(self, how: str = "reset") -> None:
        """The network comes back. "reset": the held connections are reset
        (a new network); "keep": they carry on (the same one, nothing lost
        on the way); "silent": the server's ends are reset, the browser's
        never told until it sends; "dead": nothing on the held WebSockets
        ever arrives either way, and nobody is told (a sleeping laptop's
        connections, whose network dropped them without a word), the held
        HTTP connections are reset (the browser sends a request again on a
        fresh one), and new connections work."""
        with self.lock:
            for pair in self.pairs:
                if pair.state == "live" and how != "keep":
                    pair.state = "reset" if how == "dead" and not pair.websocket else how
        self.up = True

    def close(self) -> None:
        self.closed = True
        self.up = True
        try:
            self.listener.close()
        except OSError:
            pass
