"""agent.history: past turns told apart by their human message, and the
repair that answers every open tool call of a stopped or failed turn."""

import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent.history import GENERIC_STEP, STOPPED_KEY, STOPPED_PLACEHOLDER, TURN_INDEX_KEY, repair_update, turns_from_messages
from agent.steps import Step, StepStatus


def test_turns_are_grouped_by_their_human_message():
    call = {"name": "add_todos", "args": {"steps": []}, "id": "c1", "type": "tool_call"}
    turns = turns_from_messages(
        [
            HumanMessage("one", response_metadata={"haico_turn_index": 3}),
            AIMessage("", tool_calls=[call, {**call, "id": "c2"}, {**call, "id": "c3"}]),
            ToolMessage("{}", tool_call_id="c1"),
            ToolMessage('{"success": false, "error": "Refused."}', tool_call_id="c2"),
            ToolMessage('{"success": true, "summary": "s", "skipped": true}', tool_call_id="c3"),
            AIMessage("answer one"),
            HumanMessage("two", response_metadata={"haico_turn_index": 4}),
            AIMessage(STOPPED_PLACEHOLDER, response_metadata={"haico_stopped": True}),
            HumanMessage("three"),
        ]
    )
    assert [(t.turn_index, t.user_message) for t in turns] == [(3, "one"), (4, "two"), (5, "three")]
    assert [step.to_json() for step in turns[0].steps] == [
        {"text": GENERIC_STEP, "status": "done"},
        {"text": GENERIC_STEP, "status": "failed"},
        {"text": GENERIC_STEP, "status": "skipped"},
    ]
    assert turns[0].answer == "answer one"
    assert turns[1].stopped and turns[1].answer == ""
    assert not turns[2].answer and not turns[2].stopped


# --- repairing a stopped or failed turn --------------------------------------------------


def _call(name="add_todos", sentence="Planning it.", call_id="c1"):
    return {"name": name, "args": {"action_and_reasoning": sentence, "steps": []}, "id": call_id, "type": "tool_call"}


def _human(turn):
    return HumanMessage(content=f"message {turn}", response_metadata={TURN_INDEX_KEY: turn})


def test_repair_answers_every_open_call_and_keeps_existing_results():
    calls = AIMessage(content="", tool_calls=[_call(call_id="a"), _call(call_id="b")])
    done = ToolMessage(content="ok", tool_call_id="a", name="add_todos")
    history = [_human(1), AIMessage(content="old answer"), _human(2), calls, done]
    update = repair_update(history, turn_index=2, user_message="message 2", partial="half an ans", tool_result="Cancelled.")
    assert [(type(m).__name__, getattr(m, "tool_call_id", None), m.content) for m in update] == [
        ("ToolMessage", "a", "ok"),
        ("ToolMessage", "b", "Cancelled."),
        ("AIMessage", None, "half an ans"),
    ]
    assert update[-1].response_metadata == {STOPPED_KEY: True}


def test_repair_of_a_failed_turn_with_nothing_dangling_writes_nothing():
    history = [_human(1), AIMessage(content="fine")]
    assert repair_update(history, turn_index=1, user_message="message 1", partial=None, tool_result="x") is None


def test_repair_adds_the_message_of_a_turn_that_never_reached_the_history():
    update = repair_update([_human(1)], turn_index=2, user_message="lost?", partial="", tool_result="x")
    assert [m.content for m in update] == ["lost?", STOPPED_PLACEHOLDER]
    assert update[0].response_metadata == {TURN_INDEX_KEY: 2}


def test_a_step_reads_back_from_its_json():
    for data in ({"text": "a", "status": ""}, {"text": "b", "status": "failed", "note": "Not available in Explore mode"}):
        assert Step.from_json(data).to_json() == data
    assert Step.from_json({"text": "c", "status": "done"}).status == StepStatus.DONE
    assert Step.from_json({"text": "d", "status": "unknown"}).status == StepStatus.RUNNING


# --- reading a thread's messages on PostgreSQL -------------------------------------------


def _history_backends(cursor) -> list[int]:
    from agent.history import READ_POOL_APPLICATION_NAME

    # The statistics views are read once per transaction unless told to read again.
    cursor.execute("SELECT pg_stat_clear_snapshot()")
    cursor.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s",
        [READ_POOL_APPLICATION_NAME],
    )
    return [pid for (pid,) in cursor.fetchall()]


@pytest.mark.postgresql_pass  # the pool and the server that ends its connections are PostgreSQL's
@pytest.mark.django_db
def test_page_reads_of_the_chat_share_connections_and_outlive_the_server_closing_them(thread):
    """A page view reads the thread's messages through this process's few
    connections, not a connection of its own each time (about 12 ms of
    authentication, and a server process); after the server closed them (a
    restart, a failover) the next read gets a live one."""
    from django.db import connection

    from agent.history import READ_POOL_MAX_SIZE, close_read_pool, read_messages

    close_read_pool()
    try:
        for _ in range(3 * READ_POOL_MAX_SIZE):
            assert read_messages(thread.pk) == []  # no turn yet
        with connection.cursor() as cursor:
            before = _history_backends(cursor)
            assert 1 <= len(before) <= READ_POOL_MAX_SIZE
            cursor.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [before])
            deadline = time.monotonic() + 10
            while set(_history_backends(cursor)) & set(before) and time.monotonic() < deadline:
                time.sleep(0.05)  # a backend ends a moment after it is told to
        assert read_messages(thread.pk) == []
        with connection.cursor() as cursor:
            after = _history_backends(cursor)
        assert after and not set(after) & set(before)
    finally:
        close_read_pool()
