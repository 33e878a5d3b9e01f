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
import django, psycopg
django.setup()
from django.db import connection
from workspace.db import usable_connections

def terminate():
    base, name = "{url}".rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))

def query():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone()[0]

assert query() == 1
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
        "without: OperationalError",
        "again without: OperationalError",
        "with: 1",
        "with, at once: 1",
    ]
