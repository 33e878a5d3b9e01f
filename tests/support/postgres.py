"""Ending a database's connections from the server's side, as a restart or
a failover does."""

import time
from collections.abc import Sequence

import psycopg


def end_backends(database_url: str, *, first: Sequence[int] = ()) -> int:
    """pg_terminate_backend for every connection to the database at
    `database_url` (from the server's maintenance database, so this
    connection survives), the backends `first` before the others; returns
    how many.
    Returns once they are gone: pg_terminate_backend only signals a backend,
    and a connection is closed by the server when its backend has sent its
    goodbye and ended (docs/adr/0170)."""
    base, database = database_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True, connect_timeout=5) as conn:
        for pid in first:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        rows = conn.execute(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchall()
        ended = [*first, *(pid for pid, _ in rows)]
        deadline = time.monotonic() + 10
        while conn.execute("SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (ended,)).fetchone():
            assert time.monotonic() < deadline, "the backends did not end"
            time.sleep(0.02)
    return len(ended)
