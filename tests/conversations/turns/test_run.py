"""The turn runner on its own: heartbeats, stops from another process, a stop
in the middle of a tool call, duplicate frames, server shutdown."""

import asyncio
import time

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from agent import checkpointer as checkpointers
from conversations.live import group_name
from conversations.models import Turn
from conversations.turns import registry, run, slot
from conversations.turns.slot import turn_request_cancel
from tests.conversations.helpers import frame_containing, frames_until_turn_end, stored_slot
from tests.support.fake_model import Reply, tool_call

pytestmark = pytest.mark.django_db(transaction=True)


async def _saved_tool_result(thread_id, tool_name: str, timeout: float = 10.0) -> None:
    """Waits until the checkpoint holds a finished call of `tool_name` (as a
    pending write of the running step)."""
    saver = await checkpointers.get_checkpointer()
    config = {"configurable": {"thread_id": str(thread_id), "checkpoint_ns": ""}}
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        saved = await saver.aget_tuple(config)
        writes = saved.pending_writes if saved else []
        if any(
            isinstance(value, list) and any(getattr(m, "name", None) == tool_name for m in value) for _, _, value in writes or []
        ):
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"no saved result of {tool_name}")


async def _start(thread, message):
    return await registry.start_turn(thread=thread, user_message=message)


async def test_a_quiet_model_gets_heartbeats_and_still_finishes(owner, thread, script, sockets, monkeypatch):
    monkeypatch.setattr(run, "HEARTBEAT_SECONDS", 0.1)
    script(Reply(text="Done.", token_delay=0.5))
    socket = await sockets(thread.pk, owner)
    await _start(thread, "think hard")
    frames = await frames_until_turn_end(socket)
    heartbeats = [i for i, f in enumerate(frames) if 'id="chat-heartbeat"' in f]
    token = next(i for i, f in enumerate(frames) if 'hx-swap-oob="beforeend">Done.' in f)
    assert len(heartbeats) >= 2 and heartbeats[0] < token
    assert "<p>Done.</p>" in frames[-1]


async def test_a_stop_flagged_by_another_process_stops_the_turn(owner, thread, script, sockets, monkeypatch):
    monkeypatch.setattr(registry, "CANCEL_POLL_SECONDS", 0.05)
    script(Reply(text="one two three four five six seven", token_delay=0.1), Reply(text="next"))
    socket = await sockets(thread.pk, owner)
    await _start(thread, "count")
    await frame_containing(socket, "two</div>")
    # What a Stop on another server process does: only the database flag.
    assert await database_sync_to_async(turn_request_cancel)(thread=thread)
    frames = await frames_until_turn_end(socket)
    assert "Stopped" in frames[-1] and "seven" not in frames[-1]
    refreshed = await database_sync_to_async(stored_slot)(thread)
    assert refreshed.turn_index is None and refreshed.cancel_requested is False


@tool
async def wait_for_approval(topic: str, action_and_reasoning: str) -> str:
    """Waits a long time (stands in for a slow tool)."""
    await asyncio.sleep(30)
    return "approved"


async def test_a_stop_during_a_tool_call_leaves_every_call_answered(owner, thread, script, sockets):
    model = script(
        Reply(
            tool_calls=[
                tool_call("set_objective", "Writing down the goal.", text="Ship the report"),
                tool_call("wait_for_approval", "Waiting for the go-ahead.", topic="report"),
            ]
        ),
        Reply(text="Next turn answer."),
        extra_tools=[wait_for_approval],
    )
    socket = await sockets(thread.pk, owner)
    await _start(thread, "ship it")
    await frame_containing(socket, "innerHTML:#objective-view")  # the fast tool has changed the objective
    # Its result is saved a moment after the change is announced; a stop in
    # between would (rightly) answer it as cancelled, which is not this test.
    await _saved_tool_result(thread.pk, "set_objective")
    assert await registry.request_stop(thread=thread)
    frames = await frames_until_turn_end(socket)
    assert "Stopped" in frames[-1]

    await _start(thread, "and now?")
    frames = await frames_until_turn_end(socket)
    assert "Next turn answer." in frames[-1]
    sent = [m for m in model.requests[-1] if m.type != "system"]
    results = {m.tool_call_id: m.content for m in sent if isinstance(m, ToolMessage)}
    calls = [call["id"] for m in sent if isinstance(m, AIMessage) for call in m.tool_calls]
    assert sorted(results) == sorted(calls)
    assert "Cancelled by the user." in results.values()
    assert any("Ship the report" in c or "objective" in c.lower() for c in results.values() if c != "Cancelled by the user.")
    stopped = [m for m in sent if isinstance(m, AIMessage) and m.response_metadata.get("haico_stopped")]
    assert len(stopped) == 1


async def test_server_shutdown_stops_running_turns_and_releases_the_slot(owner, thread, script, sockets):
    script(Reply(text="a long answer that is cut by the shutdown", token_delay=0.2))
    socket = await sockets(thread.pk, owner)
    await _start(thread, "long")
    await frame_containing(socket, " answer</div>")
    await checkpointers.shutdown()
    frames = await frames_until_turn_end(socket)
    assert "Interrupted: the server was shutting down." in frames[-1] and "Retry turn 1" in frames[-1]
    assert (await database_sync_to_async(stored_slot)(thread)).turn_index is None
    assert thread.pk not in registry._running
    row = await database_sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert row.status == Turn.Status.INTERRUPTED and row.answer.startswith("a long")


async def test_turn_fragments_go_only_to_the_threads_group(owner, thread, script, model_settings):
    script(Reply(text="hello there"))
    layer = get_channel_layer()
    mine = await layer.new_channel()
    await layer.group_add(group_name(thread.pk), mine)
    await _start(thread, "hi")
    await registry.wait_for_turn(thread.pk)
    received = []
    while True:
        try:
            received.append(await asyncio.wait_for(layer.receive(mine), 0.2))
        except TimeoutError:
            break
    assert received and all(event["type"] == "thread.fragment" for event in received)
    assert "<p>hello there</p>" in received[-1]["html"]
    assert group_name(thread.pk) == f"thread.{thread.pk.hex}"


async def test_text_of_a_retried_malformed_attempt_is_taken_back_from_the_bubble(owner, thread, script, sockets):
    script(
        Reply(text="Half a broken call", finish_reason="MALFORMED_FUNCTION_CALL"),
        Reply(text="The clean answer."),
    )
    socket = await sockets(thread.pk, owner)
    await _start(thread, "go")
    frames = await frames_until_turn_end(socket)
    # Fragments may share a frame, and tokens a fragment (the live layer
    # batches them); their order is what counts.
    stream = "".join(frames)
    broken = stream.index(" broken")
    clean = stream.index(" clean")
    reset = stream.find('<div id="turn-1-answer-content" class="bubble-text answer is-streaming" hx-swap-oob="true">', broken)
    assert broken < reset < clean, "the discarded attempt's text must be cleared before the retry streams"
    assert "broken" not in stream[reset:] and "<p>The clean answer.</p>" in frames[-1]


async def test_a_long_turn_keeps_its_claim_fresh_so_no_other_process_takes_it_over(owner, thread, script, sockets, monkeypatch):
    from datetime import timedelta

    monkeypatch.setattr(registry, "CANCEL_POLL_SECONDS", 0.05)
    monkeypatch.setattr(slot, "TURN_KEEPALIVE", timedelta(seconds=0.05))
    script(Reply(text="one two three four five six", token_delay=0.1))
    socket = await sockets(thread.pk, owner)
    await _start(thread, "take your time")

    def claimed_at():
        return stored_slot(thread).since

    first = await database_sync_to_async(claimed_at)()
    await frame_containing(socket, "four</div>")
    later = await database_sync_to_async(claimed_at)()
    assert first is not None and later is not None and later > first
    await frames_until_turn_end(socket)
    assert await database_sync_to_async(claimed_at)() is None


async def test_a_page_opened_while_whitespace_waits_for_the_next_word_gets_it_once(owner, thread, script, sockets):
    """Whitespace streamed alone waits for the next word and goes out with
    it: the turn so far, for a page joining meanwhile, is what was sent, so
    that whitespace does not show twice once the word arrives."""
    script(Reply(text="one" + "   " + "two", token_chars=3, token_delay=0.3))
    socket = await sockets(thread.pk, owner)
    await _start(thread, "count")
    await frame_containing(socket, 'hx-swap-oob="beforeend">one')
    await asyncio.sleep(0.45)  # "   " streamed, held for "two"
    so_far = "".join(registry.resync_fragments(thread.pk))
    assert "one" in so_far and "one " not in so_far
    frames = await frames_until_turn_end(socket)
    assert any('hx-swap-oob="beforeend">   two' in f for f in frames)


async def test_a_page_opened_while_the_turn_is_ending_is_not_sent_it_running(owner, thread, script, sockets, monkeypatch):
    """Once the turn has stopped streaming its end is on its way to every
    page (its row stored first): a page joining meanwhile must not be sent
    the turn as running, which would arrive after that end."""
    script(Reply(text="Done."))
    finish = run._finish

    def slow_finish(**kwargs):
        time.sleep(0.5)
        return finish(**kwargs)

    monkeypatch.setattr(run, "_finish", slow_finish)
    socket = await sockets(thread.pk, owner)
    await _start(thread, "answer")
    await frame_containing(socket, 'hx-swap-oob="beforeend">Done.')
    await asyncio.sleep(0.2)  # storing its end
    assert registry.resync_fragments(thread.pk) == []
    await frames_until_turn_end(socket)
