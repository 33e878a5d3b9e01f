"""One round of browser-like WebSocket turns against running HAICO server(s).

Run by bench/load.py as its own process: it reads a JSON spec on stdin and
prints a JSON result on stdout.

How the clients run: every socket is an asyncio protocol on one uvloop
event loop in this process, reading the WebSocket frames itself (RFC 6455:
the server's frames are unmasked, so a frame is a header and its bytes). In
a browser every tab reads its socket in a process of its own, at the same
time as the others; here one process reads them all, one after another, so
whatever reading a frame costs this process is added to the delay of every
tab read after it. The reader is therefore as light as it can be: a frame
is looked at where its bytes arrive (`data_received`, called by the loop
itself), with no task, queue or future between the socket and the check.
Its receipt time is when its bytes reached this machine's socket: the
kernel's receive timestamp (SO_TIMESTAMPNS, Linux), read with the bytes.
Taken as the bytes are read instead, it would also count the time this one
process spent reading the other tabs' sockets first (their frames arrive in
the same instant, and a tab that came fortieth waited for 39 reads), which
no tab of a browser waits for; the result reports that lag apart
("reader_lag", docs/adr/0097). (The `websockets` client
this replaced spent about 50 µs of this process's CPU per frame: 2.5 ms
between the first and the fiftieth tab to read one token, which the
fan-out bench then counted as the servers' delay; docs/adr/0094.) Not one OS
thread per client either: on a 2-core machine 200 Python threads would
fight over the GIL and put that noise into the receipt times. Being its own
process, it shares no loop or GIL with the orchestrator.

Per client: connect to ws://host:port/ws/threads/<uuid>/ with the Origin and
session Cookie a browser would send (all clients connect first, a few dozen
handshakes at a time, as connecting is not what is measured); then, at the
common moment, send {"message", "model"} and read frames until the turn
ends: a frame with id="chat-status" and data-state="idle". Every bench token
(common.TOKEN_RE) is looked for in every frame, whatever its layout, and the
first receipt time of each is kept (delay = receipt - emit). The server's
pings are answered, as a browser does.

A client marked "listens_only" is one more open tab of a thread another
client sends on (bench/fanout.py): it sends nothing and reads the same turn,
which for it ends only at an idle #chat-status that comes after a running
one (the turn it is waiting for, not the previous turn's end).

"settle" (seconds, default 0): after every socket is open, each one's frames
are read and thrown away for this long before the common moment. A page that
connects to a thread with turns is sent how the latest one ended (its answer
with its tokens, the idle controls); those frames are not the turn measured.

A turn counts as an error when it: shows a failed-turn marker
(class="turn-marker is-error"), gets a non-empty #chat-notice (a refusal,
which also ends that client's turn), is told to fetch the chat again (the
live layer's resync patch: a push was lost or too big), sees its socket
close, does not end within the timeout, or ends with fewer answer tokens
than the model sent.

Server CPU (utime + stime of the given pids) is read right before the sends
and right after the last turn end, so the delta covers the round only.

Spec: {"clients": [{"url", "origin", "cookie", "listens_only"?}], "message", "model",
       "timeout", "expected_tokens", "server_pids", "connect_concurrency", "settle"?}
Result: {"t0", "t_end", "turns": [{"client" (its index in the spec), "seconds",
"error", "delays", "token_frames" (the frames that brought new tokens of the
answer)}] (one per connected client), "delays" (all turns'), "errors"
(connect failures and the turns' errors), "server_cpu", "client_cpu", "read_delays"
(the delays had every receipt been taken when the bytes were read), "reader_lag"
(ms, per read of a measured tab during the turn: read - kernel receipt; empty
where there are no receipt timestamps)}
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import socket
import struct
import sys
import time
from urllib.parse import urlsplit

from bench.common import (
    cpu_seconds,
    raise_open_file_limit,
    token_delays_ms,
)

TOKEN_RE = re.compile(rb"\btk(\d{13,})\b")  # common.TOKEN_RE, on the frame's bytes
ERROR_MARKER_RE = re.compile(r'class="turn-marker is-error"[^>]*>(.*?)</p>', re.DOTALL)
NOTICE_RE = re.compile(r'<div id="chat-notice"[^>]*>(.*?)</div>', re.DOTALL)
TAG_RE = re.compile(r"<[^>]+>")
# conversations.live.RESYNC_CHAT: the page must fetch the chat it missed.
RESYNC_MARK = b'data-live-patch="chat"'
CHAT_STATUS = b'id="chat-status"'
ERROR_MARK = b'class="turn-marker is-error"'
NOTICE_MARK = b'id="chat-notice"'

# Linux's socket option (and control message) for receive timestamps as a
# struct timespec; Python's socket module does not name it.
SO_TIMESTAMPNS = 35
STAMPED = sys.platform == "linux"
READ_SIZE = 1 << 18

HANDSHAKE_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def is_turn_end(frame: bytes) -> bool:
    return CHAT_STATUS in frame and b'data-state="idle"' in frame


def is_turn_start(frame: bytes) -> bool:
    return CHAT_STATUS in frame and b'data-state="running"' in frame


def _text(html: str) -> str:
    return " ".join(TAG_RE.sub(" ", html).split())


def client_frame(opcode: int, payload: bytes) -> bytes:
    """A frame from the client: always masked (RFC 6455 5.3)."""
    mask = os.urandom(4)
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return header + mask + _masked(payload, mask)


def _masked(payload: bytes, mask: bytes) -> bytes:
    if not payload:
        return b""
    repeated = (mask * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


class SocketClosed(Exception):
    pass


class Tab(asyncio.Protocol):
    """One open page's socket: the handshake, then frames, each handed to
    `on_message` with the time its bytes arrived."""

    def __init__(self, url: str, origin: str, cookie: str):
        self.url = urlsplit(url)
        self.origin, self.cookie = origin, cookie
        self.transport: asyncio.Transport | None = None
        self.opened: asyncio.Future = asyncio.get_running_loop().create_future()
        self.buffer = bytearray()
        self.handshaking = True
        self.key = base64.b64encode(os.urandom(16))
        self.parts: list[bytes] = []  # a fragmented message's frames so far
        self.close_code: int | None = None
        self.close_reason = ""
        self.closed = False
        self.on_message = lambda frame, now: None
        self.on_close = lambda: None
        self.lags: list[float] = []  # per read: read time - kernel receipt (s)
        self.read_at = 0.0  # when the bytes being looked at were read

    # -- asyncio.Protocol ---------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        path = self.url.path + (f"?{self.url.query}" if self.url.query else "")
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {self.url.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {self.key.decode()}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: {self.origin}\r\nCookie: {self.cookie}\r\n\r\n"
        )
        transport.write(request.encode())

    def data_received(self, data: bytes, arrived: float | None = None) -> None:
        now = self.read_at = time.time()
        if arrived is not None:
            self.lags.append(now - arrived)
            now = arrived
        self.buffer += data
        if self.handshaking and not self._handshake():
            return
        self._frames(now)

    def connection_lost(self, exc) -> None:
        self.closed = True
        if not self.opened.done():
            self.opened.set_exception(SocketClosed(f"closed during the handshake: {exc or 'by the server'}"))
        self.on_close()

    # -- the protocol ------------------------------------------------------------

    def _handshake(self) -> bool:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = bytes(self.buffer[:end]).decode("latin-1")
        del self.buffer[: end + 4]
        self.handshaking = False
        status = head.split("\r\n", 1)[0]
        accept = base64.b64encode(hashlib.sha1(self.key + HANDSHAKE_GUID).digest()).decode()
        if " 101 " not in f"{status} " or accept not in head:
            self.opened.set_exception(SocketClosed(f"handshake refused: {status}"))
            self.transport.close()
            return False
        self.opened.set_result(self)
        return True

    def _frames(self, now: float) -> None:
        buffer = self.buffer
        while len(buffer) >= 2:
            first, second = buffer[0], buffer[1]
            length, start = second & 0x7F, 2
            if length == 126:
                if len(buffer) < 4:
                    return
                (length,), start = struct.unpack_from("!H", buffer, 2), 4
            elif length == 127:
                if len(buffer) < 10:
                    return
                (length,), start = struct.unpack_from("!Q", buffer, 2), 10
            mask = None
            if second & 0x80:  # servers do not mask, but a frame that is masked is still read right
                mask, start = bytes(buffer[start : start + 4]), start + 4
            if len(buffer) < start + length:
                return
            payload = bytes(buffer[start : start + length])
            del buffer[: start + length]
            if mask is not None:
                payload = _masked(payload, mask)
            self._frame(first & 0x80, first & 0x0F, payload, now)

    def _frame(self, fin: int, opcode: int, payload: bytes, now: float) -> None:
        if opcode == OP_PING:
            self.send(OP_PONG, payload)
        elif opcode == OP_CLOSE:
            if len(payload) >= 2:
                self.close_code = struct.unpack_from("!H", payload)[0]
                self.close_reason = payload[2:].decode("utf-8", "replace")
            if not self.closed:
                self.send(OP_CLOSE, payload[:2])
                self.transport.close()
        elif opcode in (OP_TEXT, OP_BINARY, OP_CONTINUATION):
            self.parts.append(payload)
            if fin:
                message = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
                self.parts = []
                self.on_message(message, now)

    def send(self, opcode: int, payload: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(client_frame(opcode, payload))

    def close(self) -> None:
        if not self.closed:
            self.send(OP_CLOSE, struct.pack("!H", 1000))
            self.transport.close()


class StampedTransport:
    """A socket read with its bytes' kernel receive time, for a Tab: what an
    asyncio transport does for it (write, close, connection_lost), with
    `data_received(data, arrived)`. Writes are a few small frames (the
    message, pongs, a close); what the socket does not take at once waits
    for it to be writable."""

    def __init__(self, sock: socket.socket, protocol: Tab):
        self.sock, self.protocol = sock, protocol
        self.loop = asyncio.get_running_loop()
        self.pending = bytearray()
        self.closed = False
        self.loop.add_reader(sock.fileno(), self._readable)
        protocol.connection_made(self)

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if not self.pending:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                self._lost(exc)
                return
            data = data[sent:]
            if not data:
                return
            self.loop.add_writer(self.sock.fileno(), self._writable)
        self.pending += data

    def close(self) -> None:
        self._lost(None)

    def _writable(self) -> None:
        try:
            sent = self.sock.send(self.pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(exc)
            return
        del self.pending[:sent]
        if not self.pending:
            self.loop.remove_writer(self.sock.fileno())

    def _readable(self) -> None:
        try:
            data, ancillary, _flags, _address = self.sock.recvmsg(READ_SIZE, socket.CMSG_SPACE(16))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(exc)
            return
        if not data:
            self._lost(None)
            return
        arrived = None
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
                seconds, nanoseconds = struct.unpack_from("qq", value)
                arrived = seconds + nanoseconds / 1e9
        self.protocol.data_received(data, arrived)

    def _lost(self, exc: BaseException | None) -> None:
        if self.closed:
            return
        if self.pending:
            # The last frames (a close) go out before the socket is shut.
            try:
                self.sock.send(self.pending)
            except OSError:
                pass
        self.closed = True
        self.loop.remove_reader(self.sock.fileno())
        self.loop.remove_writer(self.sock.fileno())
        self.sock.close()
        self.protocol.connection_lost(exc)


async def open_socket(client: dict, gate: asyncio.Semaphore) -> Tab:
    async with gate:
        loop = asyncio.get_running_loop()
        url = urlsplit(client["url"])
        tab = Tab(client["url"], client["origin"], client["cookie"])
        if STAMPED:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            try:
                await loop.sock_connect(sock, (url.hostname, url.port or 80))
            except BaseException:
                sock.close()
                raise
            StampedTransport(sock, tab)
        else:
            await loop.create_connection(lambda: tab, url.hostname, url.port or 80)
        await asyncio.wait_for(tab.opened, timeout=60)
        return tab


class Turn:
    """What one tab sees of the turn measured, frame by frame, in the
    protocol's callback: tokens, its start and end, and what makes it an error."""

    def __init__(self, tab: Tab, *, listens_only: bool, expected_tokens: int):
        self.tab = tab
        self.seen: dict[bytes, float] = {}
        self.seen_read: dict[bytes, float] = {}  # the same, at the time of reading
        self.token_frames = 0  # frames that brought at least one new token of the answer
        self.error: str | None = None
        self.end: float | None = None
        self.started = not listens_only
        self.expected_tokens = expected_tokens
        self.done: asyncio.Future = asyncio.get_running_loop().create_future()
        self.sent = 0.0
        self.reads_before = 0

    def begin(self) -> None:
        """Read the turn from now on."""
        self.sent = time.time()
        self.reads_before = len(self.tab.lags)  # the reads of this turn's frames come after
        self.tab.on_message = self.message
        self.tab.on_close = self.closed
        if self.tab.closed:
            self.closed()

    def message(self, frame: bytes, now: float) -> None:
        if self.done.done():
            return
        new_tokens = 0
        for match in TOKEN_RE.finditer(frame):
            # A token emitted before the send is the previous turn's, come late (as in `result`).
            if match.group(1) not in self.seen and int(match.group(1)) / 1_000_000 >= self.sent:
                new_tokens += 1
            self.seen.setdefault(match.group(1), now)
            self.seen_read.setdefault(match.group(1), self.tab.read_at)
        if new_tokens:
            self.token_frames += 1
        if RESYNC_MARK in frame and self.error is None:
            self.error = "told to fetch the chat again (a push was lost or too big)"
        if ERROR_MARK in frame and self.error is None:
            marker = ERROR_MARKER_RE.search(frame.decode("utf-8", "replace"))
            if marker:
                self.error = f"failed turn: {_text(marker.group(1))}"
        if NOTICE_MARK in frame:
            notice = NOTICE_RE.search(frame.decode("utf-8", "replace"))
            if notice and _text(notice.group(1)):
                self.error = self.error or f"refused: {_text(notice.group(1))}"
                self.finish(now)
                return
        if CHAT_STATUS in frame:
            self.started = self.started or is_turn_start(frame)
            if self.started and is_turn_end(frame):
                self.finish(now)

    def closed(self) -> None:
        if not self.done.done():
            code = self.tab.close_code
            self.error = f"socket closed ({code} {self.tab.close_reason})" if code else "socket closed (no close frame)"
            self.finish(time.time())

    def finish(self, now: float) -> None:
        self.end = now
        self.done.set_result(None)

    async def result(self, timeout: float) -> dict:
        try:
            await asyncio.wait_for(asyncio.shield(self.done), timeout=timeout)
        except TimeoutError:
            self.error = f"no turn end within {timeout:.0f} s"
        self.tab.on_message = lambda frame, now: None
        # A token emitted before the send is the previous turn's, come late.
        seen = {stamp.decode(): received for stamp, received in self.seen.items() if int(stamp) / 1_000_000 >= self.sent}
        seen_read = {stamp.decode(): self.seen_read[stamp] for stamp in self.seen if stamp.decode() in seen}
        error = self.error
        if error is None and len(seen) < self.expected_tokens:
            error = f"answer incomplete: {len(seen)} of {self.expected_tokens} tokens"
        end = self.end if self.end is not None else time.time()
        return {
            "sent": self.sent,
            "end": end,
            "delays": token_delays_ms(seen),
            "read_delays": token_delays_ms(seen_read),
            "token_frames": self.token_frames,
            "error": error,
        }


async def main(spec: dict) -> dict:
    raise_open_file_limit()
    gate = asyncio.Semaphore(spec.get("connect_concurrency", 32))
    opened = await asyncio.gather(*(open_socket(c, gate) for c in spec["clients"]), return_exceptions=True)
    connected = [i for i, tab in enumerate(opened) if not isinstance(tab, BaseException)]
    tabs = [opened[i] for i in connected]
    errors = [f"connect failed: {type(tab).__name__}: {tab}"[:300] for tab in opened if isinstance(tab, BaseException)]
    if spec.get("settle"):
        # What each page is sent on connecting is read and forgotten (the
        # protocols' default callback).
        await asyncio.sleep(spec["settle"])
    payload = json.dumps({"message": spec["message"], "model": spec["model"]}).encode()
    turns = [
        Turn(opened[i], listens_only=bool(spec["clients"][i].get("listens_only")), expected_tokens=spec["expected_tokens"])
        for i in connected
    ]
    pids = spec.get("server_pids") or []
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    own_cpu_before = cpu_seconds()
    t0 = time.time()
    # Every tab starts listening before the first message goes out.
    for turn in turns:
        turn.begin()
    for turn, i in zip(turns, connected):
        if not spec["clients"][i].get("listens_only"):
            turn.tab.send(OP_TEXT, payload)
    results = await asyncio.gather(*(turn.result(spec["timeout"]) for turn in turns))
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    own_cpu = cpu_seconds() - own_cpu_before
    for tab in tabs:
        tab.close()
    await asyncio.sleep(0.05)  # the close frames go out before the loop ends
    return {
        "t0": t0,
        "t_end": max((r["end"] for r in results), default=t0),
        "turns": [
            {
                "client": i,
                "seconds": r["end"] - r["sent"],
                "error": r["error"],
                "delays": r["delays"],
                "token_frames": r["token_frames"],
            }
            for i, r in zip(connected, results)
        ],
        "delays": [d for r in results for d in r["delays"]],
        "read_delays": [d for r in results for d in r["read_delays"]],
        "errors": errors + [r["error"] for r in results if r["error"]],
        "server_cpu": cpu,
        "client_cpu": own_cpu,
        "reader_lag": [lag * 1000 for turn in turns for lag in turn.tab.lags[turn.reads_before :]],
    }


def run(spec: dict) -> dict:
    try:
        import uvloop
    except ImportError:  # no wheels for this platform: asyncio's own loop
        return asyncio.run(main(spec))
    return uvloop.run(main(spec))


if __name__ == "__main__":
    print(json.dumps(run(json.load(sys.stdin))))
