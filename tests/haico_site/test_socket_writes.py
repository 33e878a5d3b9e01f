"""haico_site.socket_writes: a server's write goes to the socket at once when
nothing is queued before it, and every byte still arrives, in order, when
the socket cannot take it all or has gone.

Real sockets (a connected pair) under a real Twisted TCP connection; the
reactor is a recorder of what the connection asks of the event loop
(registering for writes), which is what the change is about."""

import socket

import pytest
from twisted.internet import tcp
from twisted.internet.protocol import Protocol

from haico_site.socket_writes import write_at_once


class RecordingReactor:
    """What a connection asks of its event loop."""

    def __init__(self):
        self.writers = set()
        self.registrations = 0

    def addWriter(self, descriptor):  # noqa: N802 (Twisted's name)
        self.writers.add(descriptor)
        self.registrations += 1

    def removeWriter(self, descriptor):  # noqa: N802
        self.writers.discard(descriptor)

    def addReader(self, descriptor):  # noqa: N802
        pass

    def removeReader(self, descriptor):  # noqa: N802
        pass


@pytest.fixture
def at_once(monkeypatch):
    # Put back whatever write the class had when the test ends.
    monkeypatch.setattr(tcp.Connection, "write", tcp.Connection.write)
    assert write_at_once()


@pytest.fixture
def connection():
    server_side, client_side = socket.socketpair()
    server_side.setblocking(False)
    client_side.settimeout(2)
    reactor = RecordingReactor()
    conn = tcp.Connection(server_side, Protocol(), reactor=reactor)
    conn.connected = True
    yield conn, client_side, reactor
    server_side.close()
    client_side.close()


def read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(1 << 20, size - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def test_a_frame_reaches_the_socket_without_waiting_for_the_loop(at_once, connection):
    conn, peer, reactor = connection
    conn.write(b"\x81\x05hello")
    assert peer.recv(100) == b"\x81\x05hello"
    assert reactor.registrations == 0
    assert not conn.dataBuffer and not conn._tempDataBuffer


def test_without_it_the_frame_waits_for_the_loop(connection):
    # Twisted's own way, which this replaces for the common case.
    conn, peer, reactor = connection
    conn.write(b"hello")
    assert reactor.writers == {conn}
    peer.setblocking(False)
    with pytest.raises(BlockingIOError):
        peer.recv(100)
    conn.doWrite()
    peer.setblocking(True)
    assert peer.recv(100) == b"hello"


def test_what_the_socket_cannot_take_is_queued_and_later_writes_keep_their_order(at_once, connection):
    conn, peer, reactor = connection
    big = bytes(range(256)) * (16 * 1024)  # 4 MiB: more than the socket's buffers hold
    conn.write(big)
    assert reactor.writers == {conn}, "the rest waits for the socket to be writable"
    conn.write(b"after")
    assert conn._tempDataBuffer, "a write behind queued bytes is queued too"

    received = bytearray()
    while len(received) < len(big) + len(b"after"):
        peer.setblocking(False)
        try:
            received += peer.recv(1 << 20)
        except BlockingIOError:
            conn.doWrite()
    assert bytes(received) == big + b"after"
    assert not reactor.writers

    conn.write(b"again at once")
    assert peer.recv(100) == b"again at once"


def test_a_write_to_a_socket_whose_peer_has_gone_is_left_to_twisted(at_once, connection):
    conn, peer, reactor = connection
    peer.close()
    conn.write(b"x" * 100_000)  # no exception here
    # Twisted's own write finds the connection lost on the loop's turn and closes it.
    outcomes = [conn.doWrite() for _ in range(3)]
    assert any(isinstance(outcome, Exception) for outcome in outcomes)


def test_installing_it_twice_wraps_once(at_once):
    installed = tcp.Connection.write
    assert write_at_once()
    assert tcp.Connection.write is installed
