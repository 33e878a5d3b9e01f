"""agent.history: past turns told apart by their human message, and the
repair that answers every open tool call of a stopped or failed turn."""

import time

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent.history import (
    GENERIC_STEP,
    STOPPED_KEY,
    STOPPED_PLACEHOLDER,
    TURN_INDEX_KEY,
    repair_update,
    step_sentence,
    turns_from_messages,
)
from agent.steps import REASON_MAX_CHARS, Step, StepStatus


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


def test_repair_of_a_finished_answer_its_checkpoint_missed_writes_it_once():
    """The database away as the turn's last step was written: the state read
    shows the answer from the step's pending writes, or not at all; either
    way the repair writes it (under its own id, so it replaces, never adds)."""
    shown = AIMessage(content="the whole answer", id="m1")
    update = repair_update(
        [_human(1), shown], turn_index=1, user_message="message 1", partial=None, tool_result="x", answer="the whole answer"
    )
    assert update == [shown]
    update = repair_update(
        [_human(1)], turn_index=1, user_message="message 1", partial=None, tool_result="x", answer="the whole answer"
    )
    assert [(type(m).__name__, m.content, m.response_metadata) for m in update] == [("AIMessage", "the whole answer", {})]


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


# --- reading a thread's messages on SQLite ------------------------------------------------


def _write_messages(path, thread_id: str, *messages) -> None:
    """Append `messages` (a text: the person's) to the thread's history as
    the agent's graph does: a real graph over a real SqliteSaver on the file at `path`."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph

    graph = StateGraph(MessagesState)
    graph.add_node("noop", lambda state: {})
    graph.add_edge(START, "noop")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        app = graph.compile(checkpointer=SqliteSaver(conn))
        written = [HumanMessage(m) if isinstance(m, str) else m for m in messages]
        app.invoke({"messages": written}, {"configurable": {"thread_id": thread_id}})
    conn.close()


def test_page_reads_on_sqlite_keep_one_connection_that_sees_every_commit_and_a_file_made_anew(tmp_path, monkeypatch):
    """A page view's read of the chat keeps its thread's connection (a new
    one's first statement reads the whole schema, about 1 ms), without
    ever showing an older history: a later commit is seen at once, and a
    database file made anew under the same name is read, not the old one."""
    import sqlite3

    import agent.history as history

    path = tmp_path / "site.sqlite3"
    monkeypatch.setattr(history, "sqlite_path", lambda: str(path))
    monkeypatch.setattr(history, "database_vendor", lambda: "sqlite")
    _write_messages(path, "t1", "one")
    connects = []
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *args, **kwargs: connects.append(args) or real_connect(*args, **kwargs))

    def texts():
        return [m.content for m in history.read_messages("t1")]

    assert texts() == ["one"]
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    _write_messages(path, "t1", "two")
    monkeypatch.setattr(sqlite3, "connect", lambda *args, **kwargs: connects.append(args) or real_connect(*args, **kwargs))
    assert texts() == ["one", "two"]
    assert texts() == ["one", "two"]
    assert len(connects) == 1  # three reads, one connection

    path.unlink()
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    _write_messages(path, "t1", "fresh")
    assert texts() == ["fresh"]


def test_the_chat_reads_messages_as_the_plain_reading_does_only_quicker(tmp_path, monkeypatch):
    """past_turns reads the stored messages without building LangChain's
    messages (agent.history._ShownMessagesSerializer); every kind of message
    the agent stores comes back with the fields the checkpointer's own
    reading gives, and the same turns, so an upgrade that changes the
    stored shape shows here."""
    import agent.history as history

    path = tmp_path / "site.sqlite3"
    monkeypatch.setattr(history, "sqlite_path", lambda: str(path))
    monkeypatch.setattr(history, "database_vendor", lambda: "sqlite")
    call = {"name": "add_todos", "args": {"action_and_reasoning": "Laying out <the> plan.", "steps": []}, "id": "c1"}
    _write_messages(
        path,
        "t1",
        HumanMessage("plan my essay", response_metadata={TURN_INDEX_KEY: 1}, id="h1"),
        AIMessage(
            "",
            tool_calls=[call, {**call, "id": "c2"}],
            usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
            response_metadata={"model_name": "m"},
            id="a1",
        ),
        ToolMessage('{"success": true, "summary": "ok"}', tool_call_id="c1", name="add_todos"),
        ToolMessage('{"success": false, "error": "Refused."}', tool_call_id="c2", name="add_todos", status="error"),
        AIMessage([{"type": "text", "text": "I planned "}, {"type": "text", "text": "it."}], id="a2"),
        HumanMessage("and now?", response_metadata={TURN_INDEX_KEY: 2}),
        AIMessage(STOPPED_PLACEHOLDER, response_metadata={STOPPED_KEY: True}),
    )
    plain = history.read_messages("t1")
    shown = history.read_messages("t1", serde=history._SHOWN_MESSAGES)
    assert len(plain) == 7
    assert all(isinstance(message, history.ShownMessage) for message in shown)
    assert [message.type for message in shown] == ["human", "ai", "tool", "tool", "ai", "human", "ai"]
    assert shown == [history._shown(message) for message in plain]
    assert shown[1].tool_calls == plain[1].tool_calls and shown[3].status == "error"
    assert history.past_turns("t1") == turns_from_messages(plain)
    first, second = history.past_turns("t1")
    assert [step.to_json() for step in first.steps] == [
        {"text": "Laying out <the> plan.", "status": "done"},
        {"text": "Laying out <the> plan.", "status": "failed"},
    ]
    assert first.answer == "I planned it." and second.stopped


def test_a_step_sentence_over_the_limit_is_shown_cut_with_a_mark():
    """A model's over-long sentence (refused by the tool) is not shown whole in the person's trace."""
    shown = step_sentence({"args": {"action_and_reasoning": "Because " * 1_000}})
    assert len(shown) == REASON_MAX_CHARS and shown.endswith("…")
