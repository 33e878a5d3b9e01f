"""The ports the tests give their servers (tests/support/ports.py): outside the
kernel's ephemeral range, so no outgoing connection takes one before its
server binds it, and never the same in two processes testing at once."""

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.support import ports

ROOT = Path(__file__).resolve().parents[1]


def _ports_of_another_process(count: int) -> list[int]:
    script = f"from tests.support.ports import free_port; print(*[free_port() for _ in range({count})])"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return [int(port) for port in done.stdout.split()]


# The highest port Chromium refuses to load a page from (ERR_UNSAFE_PORT).
HIGHEST_PORT_A_BROWSER_REFUSES = 10080


def test_ports_handed_out_lie_outside_the_range_outgoing_connections_take_theirs_from_and_a_browser_opens_them():
    low, high = ports._ephemeral_range()
    handed_out = [ports.free_port() for _ in range(5)] + [ports.consecutive_free_ports(2)]
    assert all(port >= ports.LOWEST and not low <= port <= high for port in handed_out)
    assert min(handed_out) > HIGHEST_PORT_A_BROWSER_REFUSES
    assert len(set(handed_out)) == len(handed_out)


def test_two_processes_at_once_never_hand_out_the_same_port():
    mine = {ports.free_port() for _ in range(20)}
    theirs = set(_ports_of_another_process(20))
    assert len(theirs) == 20
    assert not mine & theirs


def test_a_forked_child_hands_out_ports_of_a_block_of_its_own():
    parent_port = ports.free_port()
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        try:
            os.write(writer, str(ports.free_port()).encode())
        finally:
            os._exit(0)
    os.close(writer)
    child_port = int(os.read(reader, 32))
    os.close(reader)
    os.waitpid(child, 0)
    next_parent_port = ports.free_port()
    assert child_port not in {parent_port, next_parent_port}
    assert not ports._own_block().first <= child_port < ports._own_block().first + ports.BLOCK_SIZE


def test_a_port_something_listens_on_is_passed_over():
    block = ports._own_block()
    if block.next_offset + 1 >= ports.BLOCK_SIZE:
        block.next_offset = 0
    busy = block.first + block.next_offset
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", busy))
        listener.listen()
        assert ports.free_port() != busy
