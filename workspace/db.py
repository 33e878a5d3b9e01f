"""Database connections that outlive a request (docs/adr/0044).

Django checks a reused connection (CONN_HEALTH_CHECKS) only after
`close_old_connections`, which runs around each request and each
`database_sync_to_async` call. The agent's steps (the system prompt, a
tool call, an approval's question) and the MCP server's calls run in worker
threads outside both, so after the database closed their connection (a
restart, a failover, pg_terminate_backend) they would go on using it, and
fail, call after call. Each such step starts with `usable_connections()`.

What checks a PostgreSQL connection first looks at its socket
(`ended_by_server`, docs/adr/0170): a round trip only where the server may
have ended it.
"""

import select

from django.db import close_old_connections, connections


def usable_connections() -> None:
    """Drop this thread's connections that are broken or past CONN_MAX_AGE,
    and have the next query check the one it reuses (health checks). Not
    inside a transaction: a test's, or the caller's own, stays as it is."""
    if any(connection.in_atomic_block for connection in connections.all(initialized_only=True)):
        return
    close_old_connections()


def ended_by_server(conn) -> bool:
    """Whether the psycopg connection `conn` (sync or async) may have been
    ended by the server, seen without a round trip: closed or broken on our
    side, not idle outside a transaction, or anything waiting on its
    socket. A connection idle between statements is sent nothing until it
    sends a query, so data there (a terminated backend's goodbye, or the
    end of the stream) means it has to be asked; False means no sign of an
    end, and its check's `SELECT 1` can be skipped (docs/adr/0170)."""
    from psycopg import pq

    if conn.closed or conn.broken or conn.info.transaction_status != pq.TransactionStatus.IDLE:
        return True
    if not hasattr(select, "poll"):
        return True  # Windows has no poll: asked, as before
    try:
        # poll, not select: a busy server's descriptors pass select's limit of 1024.
        waiting = select.poll()
        waiting.register(conn.fileno(), select.POLLIN | select.POLLPRI)
        return bool(waiting.poll(0))
    except (OSError, ValueError):
        return True
