"""The checkpointer in a server process of its own and on a PostgreSQL
database of its own: the same in either pass of `./dev test`, so these
tests do not use Django's test database and run once (tests/conftest.py
HAICO_TEST_DATABASE_ONLY)."""

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from agent import checkpointer as checkpointers
from tests.support.ports import free_port
from tests.support.postgres import end_backends

ROOT = Path(__file__).resolve().parents[2]


def test_daphne_closes_the_saver_and_exits_on_sigterm(tmp_path):
    port = free_port()
    marker = tmp_path / "closed.txt"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))},
        "DJANGO_SETTINGS_MODULE": "haico_site.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'probe.sqlite3'}",
        "HAICO_PROBE_MARKER": str(marker),
        "PYTHONPATH": str(ROOT),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "tests.agent.daphne_probe:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        body = None
        deadline = time.monotonic() + 60  # a loaded machine starts Django slowly; once it answers, on at once
        while time.monotonic() < deadline and body is None:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/open", timeout=2).read().decode()
            except OSError:
                time.sleep(0.2)
        assert body is not None and body.startswith("open"), server.stdout.read1().decode() if server.poll() else ""
        server.terminate()
        assert server.wait(timeout=15) == 0
        assert marker.read_text() == "closed"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


PG_TURN = """
import asyncio, json
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from agent import checkpointer as checkpointers
from agent.builder import AgentProvider
from agent.history import past_turns
from conversations.services import thread_create
from conversations.turns import registry
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call

model = ScriptedChatModel(script=[
    Reply(tool_calls=[tool_call("add_todos", "Planning on Postgres.", steps=[{"text": "One", "depth": 0}])]),
    Reply(text="Done on **Postgres**."),
])

registry.agents = AgentProvider(model_factory=lambda _model: model)

async def main():
    owner = await sync_to_async(get_user_model().objects.create_user)(username="pg", password="a-long-enough-password")
    thread = await sync_to_async(thread_create)(owner=owner, title="PG")
    await registry.start_turn(thread=thread, user_message="plan on postgres")
    await registry.wait_for_turn(thread.pk)
    saver = await checkpointers.get_checkpointer()
    kind = type(saver).__name__
    await checkpointers.close_checkpointer()
    turns = await sync_to_async(past_turns)(thread.pk)
    print(json.dumps({"saver": kind, "turns": [[t.turn_index, t.user_message, [s.to_json() for s in t.steps], t.answer] for t in turns]}))

asyncio.run(main())
"""


@pytest.mark.postgres
def test_on_postgres_a_turn_is_checkpointed_by_the_pooled_saver_and_read_back(migrated_postgres_database_url):
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_", "HAICO_TEST_DB", "REDIS_URL"))}
    env.update(
        {"DATABASE_URL": migrated_postgres_database_url, "DJANGO_SETTINGS_MODULE": "haico_site.settings", "PYTHONPATH": str(ROOT)}
    )

    def manage(*args):
        proc = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180
        )
        assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
        return proc.stdout

    result = json.loads(manage("shell", "-c", PG_TURN).strip().splitlines()[-1])
    assert result["saver"] == "AsyncPostgresSaver"
    assert result["turns"] == [
        [1, "plan on postgres", [{"text": "Planning on Postgres.", "status": "done"}], "Done on **Postgres**."]
    ]


@pytest.mark.postgres
async def test_the_postgres_pool_lends_a_live_connection_after_the_server_closed_them_all(postgres_database_url):
    """docs/adr/0044: a restart or a failover closes every pooled connection."""
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    pool = checkpointers.postgres_pool(postgres_database_url)
    unchecked = AsyncConnectionPool(postgres_database_url, min_size=4, open=False, kwargs={"autocommit": True})
    await pool.open(wait=True)
    await unchecked.open(wait=True)
    try:
        for each in (pool, unchecked):
            async with each.connection() as conn:
                await conn.execute("SELECT 1")
        assert end_backends(postgres_database_url) >= 8  # both pools' four idle connections

        # Without the check, the pool hands out a dead connection (what the turns met).
        with pytest.raises(psycopg.OperationalError):
            async with unchecked.connection() as conn:
                await conn.execute("SELECT 1")
        # With it, a live one, within about the pool's first back-off.
        started = time.monotonic()
        for _ in range(5):
            async with pool.connection() as conn:
                assert (await (await conn.execute("SELECT 1")).fetchone())["?column?"] == 1
        assert time.monotonic() - started < 3.0
    finally:
        await pool.close()
        await unchecked.close()


@pytest.mark.postgres
async def test_the_postgres_pool_asks_only_a_connection_the_server_may_have_ended(postgres_database_url, monkeypatch):
    """docs/adr/0170: a pooled connection in use is lent without a round
    trip first; one the server ended is asked, and replaced."""
    from psycopg_pool import AsyncConnectionPool

    asked = []
    check_connection = AsyncConnectionPool.check_connection

    async def counted(conn) -> None:
        asked.append(conn)
        await check_connection(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted))
    pool = checkpointers.postgres_pool(postgres_database_url)
    await pool.open(wait=True)
    try:
        for _ in range(10):
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")
        assert asked == []
        assert end_backends(postgres_database_url) >= 1
        async with pool.connection() as conn:
            assert (await (await conn.execute("SELECT 1")).fetchone())["?column?"] == 1
        assert asked
    finally:
        await pool.close()
