"""workspace.db.usable_connections on a real PostgreSQL whose server closed
the connection (a restart, a failover: docs/adr/0044). Run in a process of
its own with DATABASE_URL on that server, as the agent's worker thread
would meet it: connected, then closed under it by pg_terminate_backend."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import django
django.setup()
from tests.support.postgres import end_backends
from django.db import connection, connections
from workspace.db import usable_connections

def terminate():
    end_backends("{url}")

def query():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone()[0]

checks = []
backend = type(connections["default"])
asked = backend.is_usable
def is_usable(self):
    checks.append(1)
    return asked(self)

assert query() == 1
backend.is_usable = is_usable
for _ in range(20):
    usable_connections()
    query()
print("round-trip checks of a connection in use:", len(checks))
terminate()
try:
    query()
except Exception as exc:
    print("without:", type(exc).__name__)
try:
    query()
except Exception as exc:
    print("again without:", type(exc).__name__)
usable_connections()
print("with:", query())
terminate()
usable_connections()
print("with, at once:", query())
"""


def test_a_connection_the_server_closed_is_replaced_before_the_next_step_uses_it(postgres_database_url):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "haico_site.settings", "DATABASE_URL": postgres_database_url}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(url=postgres_database_url)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # Left alone, the thread's connection fails every query after the first too.
    assert result.stdout.splitlines() == [
        # Each step checks the connection by its socket: no SELECT 1 while nothing ended it (docs/adr/0170).
        "round-trip checks of a connection in use: 0",
        "without: OperationalError",
        "again without: OperationalError",
        "with: 1",
        "with, at once: 1",
    ]


def test_a_connection_shows_its_end_by_the_server_without_a_round_trip(postgres_database_url):
    """workspace.db.ended_by_server: an idle connection with nothing on its
    socket shows no sign of an end; one the server ended, one in a
    transaction, and one closed on our side may have ended and are asked."""
    import psycopg

    from tests.support.postgres import end_backends
    from workspace.db import ended_by_server

    with psycopg.connect(postgres_database_url, autocommit=True) as conn:
        conn.execute("SELECT 1")
        assert not ended_by_server(conn)
        with conn.transaction():
            conn.execute("SELECT 1")
            assert ended_by_server(conn)
        assert not ended_by_server(conn)
        assert end_backends(postgres_database_url) == 1
        assert ended_by_server(conn)
    assert ended_by_server(conn)  # closed
