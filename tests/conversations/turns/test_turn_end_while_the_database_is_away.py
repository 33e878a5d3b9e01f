"""A turn whose end the database cannot take (it is away as the turn ends)
keeps that end, with its whole answer, and stores it once the database
answers, however long that takes; meanwhile its claim stays fresh, the tabs
are told the truth, a Stop has nothing to stop and the next message is
refused (docs/adr/0131).

The database's absence is played by the checkpointer and the turn's end
failing as an unreachable PostgreSQL does (a psycopg OperationalError with
no SQLSTATE); the rest of the database answers, as it would for the watcher
once the database is back. The browser test with a real PostgreSQL stopped
for two minutes is tests/browser/test_turn_end_across_a_failover.py."""

import asyncio
from datetime import timedelta

import psycopg
import pytest
from channels.db import database_sync_to_async
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent import checkpointer as checkpointers
from conversations.errors import TurnAlreadyRunning
from conversations.models import Turn
from conversations.turns import registry, run, slot
from tests.conversations.helpers import frame_containing, frames_until_turn_end, stored_slot
from tests.support.fake_model import Reply

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "one two three four five"


class DatabaseAway:
    """While `on`: the checkpointer's reads and writes and the turn's end
    fail as they do with PostgreSQL unreachable; `refused` counts the
    calls refused."""

    def __init__(self, monkeypatch):
        self.on = False
        self.refused = 0
        put, get_tuple, finish = AsyncSqliteSaver.aput, AsyncSqliteSaver.aget_tuple, slot.turn_finish

        def refused():
            self.refused += 1
            return psycopg.OperationalError("connection failed: Connection refused")

        async def aput(saver, *args, **kwargs):
            if self.on:
                raise refused()
            return await put(saver, *args, **kwargs)

        async def aget_tuple(saver, *args, **kwargs):
            if self.on:
                raise refused()
            return await get_tuple(saver, *args, **kwargs)

        def turn_finish(**kwargs):
            if self.on:
                raise refused()
            return finish(**kwargs)

        monkeypatch.setattr(AsyncSqliteSaver, "aput", aput)
        monkeypatch.setattr(AsyncSqliteSaver, "aget_tuple", aget_tuple)
        monkeypatch.setattr(slot, "turn_finish", turn_finish)
        monkeypatch.setattr(run, "KEEP_ENDING_RETRY_SECONDS", 0.05)


def _row(thread):
    return Turn.objects.filter(thread=thread, index=1).values_list("status", "answer", "notice").get()


async def _ended_while_away(thread, owner, script, sockets, away):
    script(Reply(text=ANSWER, token_delay=0.1), Reply(text="The next answer."))
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="count to five")
    await frame_containing(socket, "two")
    away.on = True  # before the answer's end: its checkpoint cannot be written
    frames = await frame_containing(socket, 'data-state="saving"')
    return socket, frames


async def test_a_turn_ended_while_the_database_is_away_keeps_its_end_and_stores_it_once_it_answers(
    owner, thread, script, sockets, monkeypatch
):
    away = DatabaseAway(monkeypatch)
    socket, frames = await _ended_while_away(thread, owner, script, sockets, away)
    told = "".join(frames)
    # The tabs see the whole answer, and why it is not saved yet; no Stop, no Send.
    assert f"<p>{ANSWER}</p>" in told
    assert "Not saved yet: the server&#x27;s database does not answer." in told
    assert "Saving the turn once the database answers" in told
    assert 'id="chat-send" type="button" class="btn btn-primary" disabled' in told
    assert "Retry" not in told

    refused = away.refused
    await asyncio.sleep(0.5)
    assert away.refused >= refused + 3  # tried again and again, not given up
    # The turn is still this process's: its claim is kept, a page that
    # connects now is shown the same, a Stop has nothing to stop and the
    # next message is refused (it would run on a history without this turn).
    status, stored, _notice = await database_sync_to_async(_row)(thread)
    assert status == Turn.Status.RUNNING
    assert (await database_sync_to_async(stored_slot)(thread)).turn_index == 1
    assert thread.pk in registry._running
    assert "Not saved yet" in "".join(registry.resync_fragments(thread.pk))
    assert not registry.stop_if_running_here(thread.pk)
    with pytest.raises(TurnAlreadyRunning):
        await registry.start_turn(thread=thread, user_message="and now?")

    away.on = False
    frames = await frames_until_turn_end(socket)
    assert f"<p>{ANSWER}</p>" in "".join(frames) and "Not saved" not in frames[-1]
    status, stored, notice = await database_sync_to_async(_row)(thread)
    assert (status, stored, notice) == (Turn.Status.COMPLETE, ANSWER, "")
    assert (await database_sync_to_async(stored_slot)(thread)).turn_index is None

    # The agent's memory has the answer too: the next model call is sent it.
    await registry.start_turn(thread=thread, user_message="and now?")
    frames = await frames_until_turn_end(socket)
    assert "The next answer." in frames[-1]
    sent = script.model.requests[-1]
    assert [m.content for m in sent if isinstance(m, AIMessage)] == [ANSWER]


async def test_a_server_shutdown_while_a_turn_end_waits_for_the_database_says_it_was_not_saved(
    owner, thread, script, sockets, monkeypatch
):
    away = DatabaseAway(monkeypatch)
    socket, _frames = await _ended_while_away(thread, owner, script, sockets, away)
    await checkpointers.shutdown()
    frames = await frame_containing(socket, "Not saved: this server shut down before its database answered again.")
    assert "Not saved yet" not in frames[-1]
    assert thread.pk not in registry._running
    # Lost with the process: the turn is left running for the sweep to release, as a dead server's.
    status, _stored, _notice = await database_sync_to_async(_row)(thread)
    assert status == Turn.Status.RUNNING


async def test_after_the_database_was_away_no_stale_turn_is_released_until_the_servers_could_refresh_their_claims(
    monkeypatch,
):
    """Every claim is stale when the database comes back: the recovery waits
    STALE_TURN_AFTER after its first round that the database answered
    before it releases any, so a living server's turn is not taken as lost."""
    monkeypatch.setattr(registry, "RECOVERY_SECONDS", 0.02)
    monkeypatch.setattr(slot, "STALE_TURN_AFTER", timedelta(seconds=0.5))
    clock = {"away": True, "back_at": None}
    sweeps: list[float] = []
    loop = asyncio.get_running_loop()

    def keepalive(**kwargs):
        if clock["away"]:
            raise psycopg.OperationalError("connection failed: Connection refused")
        if clock["back_at"] is None:
            clock["back_at"] = loop.time()

    def release_stale():
        sweeps.append(loop.time())
        return 0

    monkeypatch.setattr(slot, "turns_release_predecessor", lambda: 0)
    monkeypatch.setattr(registry.presence, "presence_release_predecessor", lambda: None)
    monkeypatch.setattr(registry.presence, "presence_keepalive", keepalive)
    monkeypatch.setattr(registry.presence, "presence_sweep", lambda: None)
    monkeypatch.setattr(slot, "turns_release_stale", release_stale)
    for name in ("discard_abandoned_branches", "discard_abandoned_imports", "discard_orphaned_histories"):
        monkeypatch.setattr(registry, name, lambda: 0)
    recovery = asyncio.create_task(registry._recover())
    try:
        await asyncio.sleep(0.2)
        clock["away"] = False
        await asyncio.sleep(1.0)
    finally:
        recovery.cancel()
        await asyncio.gather(recovery, return_exceptions=True)
    assert sweeps, "the stale turns were never swept once the database was back"
    assert sweeps[0] - clock["back_at"] >= 0.5
