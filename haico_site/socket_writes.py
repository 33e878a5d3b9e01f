"""A server's writes to a socket go out at once when nothing is queued before them.

Twisted (daphne's transport) never writes in `transport.write`: it queues
the bytes, registers the socket with the event loop for writing, and on the
loop's next turn writes them and unregisters it: two `epoll_ctl` calls and a
callback per frame per socket. A token pushed to the 25 open tabs of a
shared thread on one server is 25 of those, all written only after the 25th
page was handed its frame, so the first tab waits for the last (measured
with bench/fanout.py; docs/adr/0097).

`write_at_once` makes a plain TCP connection try the socket's `send` right
away when nothing is queued before the bytes, as asyncio's and uvloop's
transports do; whatever the socket does not take (its buffer full), and every
write while something is queued, goes Twisted's way, so the order of the
bytes never changes. A failed send is left to Twisted's way too: the queued
write fails again on the loop's turn and the connection is closed as it
always was. TLS connections (Twisted's own TLS layer) are left as they are.
"""

from __future__ import annotations

import logging

logger = logging.getLogger("haico.serve")


def write_at_once() -> bool:
    """Install the immediate write on Twisted's TCP connections; False (and
    nothing changed) if this Twisted lacks what it relies on."""
    from twisted.internet import tcp

    connection = tcp.Connection
    if getattr(connection.write, "writes_at_once", False):
        return True
    queued_write = connection.write
    if not all(hasattr(connection, name) for name in ("writeSomeData", "TLS", "dataBuffer", "_writeDisconnected")):
        logger.warning("Twisted's TCP connection is not as expected; writes stay queued")
        return False

    def write(self, data: bytes) -> None:
        if (
            type(data) is bytes
            and data
            and not self.TLS
            and self.connected
            and not self.disconnecting
            and not self._writeDisconnected
            and not self.dataBuffer
            # Set per connection by Twisted; if it is ever missing, queue.
            and not getattr(self, "_tempDataBuffer", True)
        ):
            written = self.writeSomeData(data)
            if isinstance(written, int) and written > 0:
                if written == len(data):
                    return
                data = data[written:]
        queued_write(self, data)

    write.writes_at_once = True
    connection.write = write
    return True
