"""Database connections that outlive a request (docs/adr/0044).

Django checks a reused connection (CONN_HEALTH_CHECKS) only after
`close_old_connections`, which runs around each request and each
`database_sync_to_async` call. The agent's steps (the system prompt, a
tool call, an approval's question) and the MCP server's calls run in worker
threads outside both, so after the database closed their connection (a
restart, a failover, pg_terminate_backend) they would go on using it, and
fail, call after call. Each such step starts with `usable_connections()`.
"""

from django.db import close_old_connections, connections


def usable_connections() -> None:
    """Drop this thread's connections that are broken or past CONN_MAX_AGE,
    and have the next query check the one it reuses (health checks). Not
    inside a transaction: a test's, or the caller's own, stays as it is."""
    if any(connection.in_atomic_block for connection in connections.all(initialized_only=True)):
        return
    close_old_connections()
