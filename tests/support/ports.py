"""Ports for the servers the tests and the benches start: free now, and
still free when the server binds them seconds later.

A port the kernel hands out for `bind(("127.0.0.1", 0))` comes from its
ephemeral range, the same range every outgoing connection takes its source
port from. Between the pick and the server's own bind (a production start
checks, migrates and collects static files first; a restarted Redis or
PostgreSQL is down for a moment) any connection anywhere on the machine may
take that port, and the server fails with "Address already in use". CI lost a
run to exactly that.

So the ports here come from below the ephemeral range, where the kernel
never hands a port out on its own, and each process hands out only ports of
a block it has claimed: an exclusive `flock` on one lock file per block,
held for the life of the process and let go by the kernel when it ends. Two
test processes, of one pytest run or of two runs at once (CI runs its SQLite
and PostgreSQL passes side by side), never hand out the same port. A port is
given again by its process only after the rest of the block, and only if it
binds free at that moment.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from pathlib import Path

BLOCK_SIZE = 200
# Above the ports services listen on by convention (PostgreSQL 5432, Redis
# 6379) and above every port browsers refuse to open (Chromium's list ends
# at 10080: a page on it fails with ERR_UNSAFE_PORT).
LOWEST = 11000
LOCK_DIR = Path(tempfile.gettempdir()) / "haico-test-ports"


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _blocks() -> list[int]:
    """The first port of every block outside the ephemeral range."""
    low, high = _ephemeral_range()
    below = range(LOWEST, low - BLOCK_SIZE + 1, BLOCK_SIZE)
    above = range(high + 1, 65536 - BLOCK_SIZE + 1, BLOCK_SIZE)
    return [*below, *above]


class _Block:
    def __init__(self) -> None:
        self.owner_pid = os.getpid()
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        for first in _blocks():
            descriptor = os.open(LOCK_DIR / f"block-{first}.lock", os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(descriptor)
                continue
            # Held open on purpose: the claim lasts as long as this process.
            self.lock_descriptor = descriptor
            self.first = first
            self.next_offset = 0
            return
        raise RuntimeError(f"every block of test ports is claimed by another process (lock files in {LOCK_DIR})")

    def take(self, count: int) -> int:
        for _ in range(BLOCK_SIZE):
            if self.next_offset + count > BLOCK_SIZE:
                self.next_offset = 0
            first = self.first + self.next_offset
            self.next_offset += count
            if all(_binds_free(port) for port in range(first, first + count)):
                return first
        raise RuntimeError(f"no {count} consecutive free ports in {self.first}..{self.first + BLOCK_SIZE - 1}")


_block: _Block | None = None


def _own_block() -> _Block:
    global _block
    # A forked child shares its parent's claim and counter: it claims a block of its own.
    if _block is None or _block.owner_pid != os.getpid():
        _block = _Block()
    return _block


def _binds_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """One port for a server this process starts."""
    return _own_block().take(1)


def consecutive_free_ports(count: int) -> int:
    """The first of `count` consecutive ports, for a start script that numbers its processes' ports."""
    return _own_block().take(count)
