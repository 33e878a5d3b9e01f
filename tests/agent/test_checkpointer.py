"""The process's checkpointer: one per event loop, on Django's database, closed on shutdown."""

import asyncio
import sqlite3

import pytest
from django.db import connection
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent import checkpointer as checkpointers
from tests.support.turns import turn_environment  # noqa: F401  (autouse: closes the saver a test opened)

pytestmark = pytest.mark.django_db(transaction=True)


def _postgres() -> bool:
    return connection.vendor == "postgresql"


async def test_one_saver_per_loop_on_the_django_database():
    first, second = await asyncio.gather(checkpointers.get_checkpointer(), checkpointers.get_checkpointer())
    assert first is second is await checkpointers.get_checkpointer()
    if _postgres():
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        assert isinstance(first, AsyncPostgresSaver)
        async with first.conn.connection() as conn:
            names = {row["tablename"] for row in await (await conn.execute("SELECT tablename FROM pg_tables")).fetchall()}
        assert {"checkpoints", "checkpoint_writes"} <= names
        return
    assert isinstance(first, AsyncSqliteSaver)
    assert checkpointers.sqlite_path() == connection.settings_dict["NAME"]
    with sqlite3.connect(checkpointers.sqlite_path()) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"checkpoints", "writes"} <= tables


async def test_closing_releases_the_connection_and_a_new_one_opens_after():
    saver = await checkpointers.get_checkpointer()
    if _postgres():
        pool = saver.conn
        await checkpointers.close_checkpointer()
        assert pool.closed
        await checkpointers.close_checkpointer()  # twice is harmless
        again = await checkpointers.get_checkpointer()
        assert again is not saver and not again.conn.closed
        return
    worker = saver.conn._thread
    assert worker.is_alive() and worker.daemon  # can never keep a process alive
    await checkpointers.close_checkpointer()
    await asyncio.sleep(0)
    worker.join(timeout=2)
    assert not worker.is_alive()
    await checkpointers.close_checkpointer()  # twice is harmless
    again = await checkpointers.get_checkpointer()
    assert again is not saver and again.conn._thread.is_alive()


async def test_a_saver_from_a_finished_loop_is_replaced():
    opened = {}

    def in_other_loop():
        async def open_and_close():
            opened["saver"] = await checkpointers.get_checkpointer()
            await checkpointers.close_checkpointer()

        asyncio.run(open_and_close())

    await asyncio.to_thread(in_other_loop)
    mine = await checkpointers.get_checkpointer()
    assert mine is not opened["saver"]
    assert mine.loop is asyncio.get_running_loop()
