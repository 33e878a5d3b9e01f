"""Seeding a branch's message history into a fresh checkpointer thread.

A branch at turn k starts with the source thread's messages strictly before
its (k+1)-th user message, written in ONE state update so the new thread's
first checkpoint is already a valid history (docs/adr/0014). No model is
built for it: a minimal graph over the same storage does the write.

Like agent.history, this runs synchronously on a short-lived saver of the
same storage (SqliteSaver / PostgresSaver): a fork is asked for from a
request or a socket, not from inside a running turn, and the process's async
saver belongs to the server's event loop.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from datetime import UTC, datetime

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base.id import UUID as CheckpointId
from langgraph.graph import START, MessagesState, StateGraph

from .checkpointer import (
    SQLITE_TIMEOUT_SECONDS,
    database_vendor,
    postgres_conninfo,
    sqlite_path,
)
from .history import TURN_INDEX_KEY
from .model_input import valid_history

# A UUID's time counts 100 ns ticks from 1582-10-15; the Unix epoch is this many ticks later.
_UUID_EPOCH_TICKS = 0x01B21DD213814000


class HistoryNotSplittable(Exception):
    """The history cannot be cut at that turn without leaving a tool call
    without its result."""


def _later_turn_at(messages: list[BaseMessage], through_turn: int) -> int:
    """The position of the first user message of a turn after `through_turn`
    (len(messages) when there is none). A user message's turn is its tag
    (the runner writes it); an untagged one counts on from the previous."""
    turn = 0
    for position, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            tagged = (message.response_metadata or {}).get(TURN_INDEX_KEY)
            turn = tagged if isinstance(tagged, int) and not isinstance(tagged, bool) else turn + 1
            if turn > through_turn:
                return position
    return len(messages)


def holds_later_turns(messages: list[BaseMessage], *, through_turn: int) -> bool:
    return _later_turn_at(messages, through_turn) < len(messages)


def history_prefix(messages: list[BaseMessage], *, through_turn: int, ended: bool = False) -> list[BaseMessage]:
    """The messages of turns 1..through_turn: everything strictly before the
    first user message of a later turn.

    A tool call with no result refuses the split (HistoryNotSplittable),
    unless the caller knows those turns have `ended`: then the call was cut
    off (a server stopped mid-step, or a card waited when the archive was
    made) and is completed as every model call is sent it
    (agent.model_input.valid_history). Refusing it made a thread whose turn
    was once cut off impossible to branch from or archive for good."""
    prefix = list(messages[: _later_turn_at(messages, through_turn)])
    if ended:
        return valid_history(prefix)
    _check_complete(prefix)
    return prefix


def _check_complete(messages: list[BaseMessage]) -> None:
    """Every tool call has its result (else the next model call would fail)."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") not in answered:
                    raise HistoryNotSplittable(f"tool call {call.get('id')!r} has no result")


def _seeding_graph(saver):
    # One do-nothing node: the graph only exists to write the messages channel.
    builder = StateGraph(MessagesState)
    builder.add_node("seed", lambda state: {})
    builder.add_edge(START, "seed")
    return builder.compile(checkpointer=saver)


@contextmanager
def _saver():
    if database_vendor() == "postgresql":
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(postgres_conninfo()) as saver:
            saver.setup()
            yield saver
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(sqlite_path(), timeout=SQLITE_TIMEOUT_SECONDS, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={int(SQLITE_TIMEOUT_SECONDS * 1000)}")
        sqlite_saver = SqliteSaver(conn)
        sqlite_saver.setup()
        yield sqlite_saver
    finally:
        conn.close()


def _config(thread_id) -> dict:
    return {"configurable": {"thread_id": str(thread_id), "checkpoint_ns": ""}}


def seed_history(thread_id, messages: list[BaseMessage]) -> None:
    """Write `messages` as the whole history of a fresh thread, in one update.
    Nothing is written for an empty history (a branch before turn 1)."""
    if not messages:
        return
    with _saver() as saver:
        if saver.get_tuple(_config(thread_id)) is not None:
            # Seeding merges by message id: a reused thread id would mix histories.
            raise ValueError(f"checkpointer thread {thread_id} already has a history")
        _seeding_graph(saver).update_state(_config(thread_id), {"messages": list(messages)}, as_node=START)


def has_history(thread_id) -> bool:
    with _saver() as saver:
        return saver.get_tuple(_config(thread_id)) is not None


def histories_written_at() -> dict[str, datetime]:
    """Every checkpointer thread id, with when its newest checkpoint was
    written (read from the checkpoint's id, a time-ordered UUID v6; a
    thread whose ids carry no time is left out)."""
    with _saver() as saver:
        rows = saver.conn.execute("SELECT thread_id, MAX(checkpoint_id) AS newest FROM checkpoints GROUP BY thread_id")
        written = {}
        for row in rows.fetchall():
            thread_id, newest = (row["thread_id"], row["newest"]) if isinstance(row, dict) else row
            try:
                checkpoint_id = CheckpointId(str(newest))
            except ValueError:
                continue
            if checkpoint_id.version == 6:
                unix_ns = (checkpoint_id.time - _UUID_EPOCH_TICKS) * 100
                written[str(thread_id)] = datetime.fromtimestamp(unix_ns / 1e9, tz=UTC)
        return written


def delete_history(thread_id) -> None:
    """Remove every checkpoint and pending write of the thread (none: nothing to do)."""
    with _saver() as saver:
        saver.delete_thread(str(thread_id))
