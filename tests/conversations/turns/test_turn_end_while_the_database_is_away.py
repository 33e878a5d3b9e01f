"""A turn whose end the database cannot take (it is away as the turn ends)
keeps that end, with its whole answer, and stores it once the database
answers, however long that takes; meanwhile its claim stays fresh, the tabs
are told the truth, a Stop has nothing to stop and the next message is
refused (docs/adr/0131). So does a turn's pause for an approval, and the
usage of its last model calls.

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
from conversations.models import ModelUsage, Turn
from conversations.turns import approval_claims, registry, run, slot
from tests.conversations.helpers import frame_containing, frames_until_turn_end, stored_slot
from tests.support.fake_model import Reply, tool_call
from workspace.services import preferences as preference_services

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


def _refused():
    return psycopg.OperationalError("connection failed: Connection refused")


def _row(thread, index=1):
    return Turn.objects.filter(thread=thread, index=index).values_list("status", "answer", "notice").get()


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


async def test_a_database_that_flaps_during_the_wait_stores_the_answer_once(owner, thread, script, sockets, monkeypatch):
    """The database goes away as the answer ends, then flaps (every other
    checkpoint write and the first four ends refused): the turn ends
    complete with its whole answer, and the next model call is sent that
    answer once (the history repair, tried again, never writes it twice)."""
    answer = " ".join(f"word{i}" for i in range(40))
    script(Reply(text=answer, token_delay=0.03), Reply(text="The next answer."))
    state = {"on": False, "puts": 0, "finishes": 0}
    put, finish = AsyncSqliteSaver.aput, slot.turn_finish

    async def aput(saver, *args, **kwargs):
        if state["on"]:
            state["puts"] += 1
            if state["puts"] % 2 == 1:
                raise _refused()
        return await put(saver, *args, **kwargs)

    def turn_finish(**kwargs):
        if state["on"]:
            state["finishes"] += 1
            if state["finishes"] <= 4:
                raise _refused()
        return finish(**kwargs)

    monkeypatch.setattr(AsyncSqliteSaver, "aput", aput)
    monkeypatch.setattr(slot, "turn_finish", turn_finish)
    monkeypatch.setattr(run, "KEEP_ENDING_RETRY_SECONDS", 0.05)
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="count")
    await frame_containing(socket, "word3")
    state["on"] = True
    await frame_containing(socket, 'data-state="saving"')
    frames = await frames_until_turn_end(socket, timeout=15)
    assert "Not saved" not in frames[-1]
    state["on"] = False
    status, stored, notice = await database_sync_to_async(_row)(thread)
    assert (status, stored, notice) == (Turn.Status.COMPLETE, answer, "")
    assert (await database_sync_to_async(stored_slot)(thread)).turn_index is None
    await registry.start_turn(thread=thread, user_message="and now?")
    frames = await frames_until_turn_end(socket)
    assert "The next answer." in "".join(frames)
    sent = script.model.requests[-1]
    assert [m.content for m in sent if isinstance(m, AIMessage)] == [answer]


async def test_a_megabyte_answer_whose_end_waits_is_stored_whole_and_a_page_joining_meanwhile_is_told(
    owner, thread, script, sockets, monkeypatch
):
    """A 1.2 MB answer (cut at HAICO_ANSWER_MAX_CHARS, 200 000 characters)
    ends while the database is away: a page that connects meanwhile is told
    it is not saved yet and takes no message; once the database answers,
    all of the cut answer is stored complete and every tab sees the end."""
    answer = "".join(f"[part {i:05d}] " + "x" * 985 + "\n\n" for i in range(1200))
    away = DatabaseAway(monkeypatch)
    script(Reply(text=answer, token_chars=20_000, token_delay=0.001))
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="write a lot")
    await frame_containing(socket, "[part 00010]", timeout=20)
    away.on = True
    told = await frame_containing(socket, 'data-state="saving"', timeout=60)
    assert "Not saved yet" in "".join(told)
    late = await sockets(thread.pk, owner)
    late_frames = await frame_containing(late, 'data-state="saving"', timeout=20)
    assert "Not saved yet" in "".join(late_frames)
    assert "disabled" in late_frames[-1]
    away.on = False
    await frames_until_turn_end(socket, timeout=60)
    status, stored, _notice = await database_sync_to_async(_row)(thread)
    assert status == Turn.Status.COMPLETE and stored.startswith(answer[:199_000]) and len(stored) >= 200_000
    await frames_until_turn_end(late, timeout=60)


async def test_stop_pressed_during_the_wait_neither_stops_the_kept_end_nor_the_next_turn(
    owner, thread, script, sockets, monkeypatch
):
    """Stop pressed twice while the turn's end waits (the Stop's flag is
    stored: the rest of the database answers): the turn ends complete with
    its whole answer, the page is not left saying it is stopping, and the
    next turn is not stopped by the old flag."""
    away = DatabaseAway(monkeypatch)
    script(Reply(text=ANSWER, token_delay=0.1), Reply(text="The next answer.", token_delay=0.1))
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="count to five")
    await frame_containing(socket, "two")
    away.on = True
    await frame_containing(socket, 'data-state="saving"')
    for _ in range(2):
        await socket.send_json_to({"action": "stop"})
        await asyncio.sleep(0.7)  # past the watcher's poll of the stop flags
    away.on = False
    frames = await frames_until_turn_end(socket, timeout=15)
    status, stored, notice = await database_sync_to_async(_row)(thread)
    assert (status, stored, notice) == (Turn.Status.COMPLETE, ANSWER, "")
    await asyncio.sleep(0.5)
    after = []
    while not await socket.receive_nothing(timeout=0.3):
        after.append(await socket.receive_from())
    notices = [f for f in frames + after if 'id="chat-notice"' in f]
    assert not notices or "stopping" not in notices[-1], notices[-1]
    await registry.start_turn(thread=thread, user_message="and now?")
    frames = await frames_until_turn_end(socket, timeout=15)
    status, stored, notice = await database_sync_to_async(lambda: _row(thread, 2))()
    assert (status, stored) == (Turn.Status.COMPLETE, "The next answer."), (status, stored, notice)


CARD = 'id="turn-1-approval" class="approval is-pending"'


class PauseAway:
    """While `on`: the turn's record that it waits for an approval
    (approval_claims.turn_await_approval) fails as with PostgreSQL
    unreachable; the rest of the database answers."""

    def __init__(self, monkeypatch):
        self.on = True
        real = approval_claims.turn_await_approval

        def turn_await_approval(**kwargs):
            if self.on:
                raise _refused()
            return real(**kwargs)

        monkeypatch.setattr(approval_claims, "turn_await_approval", turn_await_approval)
        monkeypatch.setattr(run, "KEEP_ENDING_RETRY_SECONDS", 0.05)


async def _pause_for_approval(thread, script):
    await database_sync_to_async(preference_services.preferences_add)(
        thread=thread,
        items=[{"title": t, "kind": "soft"} for t in ("Formal tone", "Short paragraphs")],
        respect_lock=False,
    )
    script(
        Reply(tool_calls=[tool_call("remove_preferences", "Dropping the rule you no longer want.", indices=[1])]),
        Reply(text="Done as you decided."),
    )
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule")


async def test_a_pause_for_approval_the_database_did_not_take_is_kept_and_its_card_shown_once_it_answers(
    owner, thread, script, sockets, monkeypatch
):
    away = PauseAway(monkeypatch)
    socket = await sockets(thread.pk, owner)
    await _pause_for_approval(thread, script)
    frames = await frame_containing(socket, 'data-state="saving"')
    told = "".join(frames)
    # No card to answer yet (it is not stored): the tabs are told why, and take no message.
    assert "Not saved yet: the server&#x27;s database does not answer. The assistant asks for an approval" in told
    assert 'id="chat-send" type="button" class="btn btn-primary" disabled' in told
    assert CARD not in told

    await asyncio.sleep(0.3)
    # Still this process's turn: its claim is kept, a page that connects now is told the same.
    status, _answer, _notice = await database_sync_to_async(_row)(thread)
    assert status == Turn.Status.RUNNING
    assert (await database_sync_to_async(stored_slot)(thread)).turn_index == 1
    assert "The assistant asks for an approval" in "".join(registry.resync_fragments(thread.pk))

    away.on = False
    frames = await frame_containing(socket, CARD)
    assert 'data-state="awaiting"' in "".join(frames)
    await registry.wait_for_turn(thread.pk)
    status, _answer, notice = await database_sync_to_async(_row)(thread)
    assert (status, notice) == (Turn.Status.AWAITING, "")
    # The card answers as any: the change is made and the turn goes on.
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    frames = await frames_until_turn_end(socket)
    assert "Done as you decided." in "".join(frames)


async def test_a_pause_for_approval_the_database_missed_is_not_later_called_a_dead_servers_turn(
    owner, thread, script, sockets, monkeypatch
):
    """The stale sweep, run once the database answers again, does not take
    the living server's paused turn for a dead server's ("Interrupted: the
    server running this turn stopped answering"): it waits with its card."""
    away = PauseAway(monkeypatch)
    monkeypatch.setattr(slot, "STALE_TURN_AFTER", timedelta(seconds=1))
    await sockets(thread.pk, owner)
    await _pause_for_approval(thread, script)
    await asyncio.sleep(0.5)
    away.on = False
    await asyncio.sleep(2.0)
    await database_sync_to_async(slot.turns_release_stale)()
    status, _answer, notice = await database_sync_to_async(_row)(thread)
    assert (status, notice) == (Turn.Status.AWAITING, "")


def _usage_of(thread):
    return ModelUsage.objects.filter(thread=thread).count()


def _usage_refused_three_times(monkeypatch) -> dict:
    """The database refuses the first three writes of usage rows, then
    answers; tried again every 0.05 s. Returns the count of refusals."""
    refused = {"n": 0}
    real = run.usage_record

    def usage_record(*, rows):
        if rows and refused["n"] < 3:
            refused["n"] += 1
            raise _refused()
        return real(rows=rows)

    monkeypatch.setattr(run, "usage_record", usage_record)
    monkeypatch.setattr(run, "KEEP_ENDING_RETRY_SECONDS", 0.05)
    return refused


async def test_the_usage_of_a_turn_whose_database_went_away_again_right_after_its_end_is_stored_once(
    owner, thread, script, sockets, monkeypatch
):
    """The database takes the turn's end and is away again for the usage of
    its last model call, written in the same hop: the row is kept and
    stored once it answers, once."""
    script(Reply(text="A short answer."))
    refused = _usage_refused_three_times(monkeypatch)
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="hello")
    await frames_until_turn_end(socket)
    await registry.wait_for_turn(thread.pk)
    assert refused["n"] == 3
    assert await database_sync_to_async(_usage_of)(thread) == 1
    status, stored, _notice = await database_sync_to_async(_row)(thread)
    assert (status, stored) == (Turn.Status.COMPLETE, "A short answer.")


async def test_the_usage_of_a_pause_for_approval_the_database_did_not_take_is_stored_once(
    owner, thread, script, sockets, monkeypatch
):
    """As above for a turn that pauses for an approval: the pause is stored,
    its model call's usage is kept until the database takes it, once."""
    refused = _usage_refused_three_times(monkeypatch)
    socket = await sockets(thread.pk, owner)
    await _pause_for_approval(thread, script)
    await frame_containing(socket, CARD)
    await registry.wait_for_turn(thread.pk)
    assert refused["n"] == 3
    assert await database_sync_to_async(_usage_of)(thread) == 1
