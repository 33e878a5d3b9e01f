"""Past turns of a thread, read from the LangGraph checkpointer for the chat panel.

The page view is synchronous, so this reads through a synchronous saver on
the same storage (SqliteSaver on a short-lived connection, PostgresSaver on
a small pool of this process's) instead of touching the process's async
saver, which belongs to the server's event loop.

What a person sees of a turn is what the live stream showed: their message,
the `action_and_reasoning` sentence of every tool call (never the tool name,
arguments or results), and the final answer. Turns are told apart by the
HumanMessage that opens them; the runner tags it with the turn index.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ormsgpack
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import EXT_PYDANTIC_V2, JsonPlusSerializer

from workspace.db import ended_by_server
from workspace.text import cut_to

from .checkpointer import (
    SQLITE_TIMEOUT_SECONDS,
    database_vendor,
    postgres_conninfo,
    sqlite_path,
)
from .steps import REASON_MAX_CHARS, Step, StepStatus
from .tools.envelope import envelope_error, step_note, step_status

logger = logging.getLogger("haico.agent.history")

# Metadata keys the runner writes on the messages it creates.
TURN_INDEX_KEY = "haico_turn_index"
STOPPED_KEY = "haico_stopped"
# Stored as the stopped turn's answer when nothing had been written yet, so the
# model sees on the next turn that its previous turn was cut short.
STOPPED_PLACEHOLDER = "(Stopped by the user before an answer was written.)"
# Shown when a tool call somehow lacks the sentence; never the tool name.
GENERIC_STEP = "Working on the shared workspace."


@dataclass
class PastTurn:
    turn_index: int
    user_message: str
    steps: list[Step] = field(default_factory=list)
    answer: str = ""
    stopped: bool = False
    error: str = ""
    running: bool = False


def message_text(message: BaseMessage | ShownMessage) -> str:
    """The plain text of a message whose content may be a list of blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def step_sentence(tool_call: Mapping[str, Any]) -> str:
    args = tool_call.get("args") or {}
    sentence = args.get("action_and_reasoning") if isinstance(args, dict) else None
    if isinstance(sentence, str) and sentence.strip():
        sentence = " ".join(sentence.split())
        # Refused by the tool's schema, but shown as the step it was: no more than a sentence's room.
        return cut_to(sentence, REASON_MAX_CHARS)
    return GENERIC_STEP


def _shown(message: BaseMessage | ShownMessage) -> ShownMessage:
    """What the chat reads of a message, whichever way it was read. The role
    is LangChain's `type`, a chunk's too: "AIMessageChunk" is "ai"."""
    if isinstance(message, ShownMessage):
        return message
    return ShownMessage(
        type=message.type.removesuffix("MessageChunk").lower(),
        content=message.content,
        response_metadata=message.response_metadata,
        tool_calls=getattr(message, "tool_calls", None) or [],
        tool_call_id=getattr(message, "tool_call_id", None),
        status=getattr(message, "status", "success"),
    )


def turns_from_messages(messages: Sequence[BaseMessage | ShownMessage]) -> list[PastTurn]:
    """Group a thread's message history into turns, oldest first."""
    turns: list[PastTurn] = []
    calls: dict[str, Step] = {}  # tool call id -> its step, for the result's status
    for message in map(_shown, messages):
        role = message.type
        if role == "human":
            tagged = (message.response_metadata or {}).get(TURN_INDEX_KEY)
            index = tagged if isinstance(tagged, int) else (turns[-1].turn_index + 1 if turns else 1)
            turns.append(PastTurn(turn_index=index, user_message=message_text(message)))
            continue
        if role == "tool":
            step = calls.get(message.tool_call_id or "")
            if step is not None:
                step.status = step_status(message.content, error=message.status == "error")
                note = step_note(envelope_error(message.content)) if step.status == StepStatus.FAILED else ""
                if note:
                    step.note = note
            continue
        if not turns or role != "ai":
            continue
        turn = turns[-1]
        if message.tool_calls:
            for call in message.tool_calls:
                step = Step(text=step_sentence(call))
                turn.steps.append(step)
                if call_id := call.get("id"):
                    calls[call_id] = step
            continue
        text = message_text(message)
        if (message.response_metadata or {}).get(STOPPED_KEY):
            turn.stopped = True
            text = "" if text == STOPPED_PLACEHOLDER else text
        if text.strip() or turn.stopped:
            turn.answer = text
    return turns


def turn_steps(messages: list[BaseMessage], *, turn_index: int) -> list[tuple[str, Step]]:
    """The steps of turn `turn_index` so far, in call order, each with its
    tool call id. A turn resumed after an
    approval (agent.approvals) numbers its new steps on from these."""
    start = None
    for i, message in enumerate(messages):
        if isinstance(message, HumanMessage) and (message.response_metadata or {}).get(TURN_INDEX_KEY) == turn_index:
            start = i
    if start is None:
        return []
    ours = messages[start:]
    grouped = turns_from_messages(ours)
    steps = grouped[0].steps if grouped else []
    ids = [call.get("id") or "" for m in ours if isinstance(m, AIMessage) for call in m.tool_calls]
    return list(zip(ids, steps, strict=False))


def repair_update(
    messages: list[BaseMessage],
    *,
    turn_index: int,
    user_message: str,
    partial: str | None,
    tool_result: str,
    answer: str | None = None,
) -> list[BaseMessage] | None:
    """The messages that make a turn's history valid again after it was
    stopped or failed, or None when nothing needs writing.

    Every tool call of the turn gets a result (`tool_result` for calls that
    never finished; the results that exist are repeated, because the update
    that writes this replaces the interrupted step's pending writes), and a
    stopped turn (`partial` is not None) ends with its partial answer marked
    as stopped. A turn whose message never reached the history gets it, and
    a turn whose finished `answer` did not (its checkpoint could not be
    written: the database away as it ended) gets that answer, as the model
    wrote it."""
    start = None
    for i, message in enumerate(messages):
        if isinstance(message, HumanMessage) and (message.response_metadata or {}).get(TURN_INDEX_KEY) == turn_index:
            start = i
    update: list[BaseMessage] = []
    if start is None:
        update.append(HumanMessage(content=user_message, response_metadata={TURN_INDEX_KEY: turn_index}))
        ours: list[BaseMessage] = []
    else:
        ours = messages[start + 1 :]
    results = [m for m in ours if isinstance(m, ToolMessage)]
    answered: set[str | None] = {m.tool_call_id for m in results}
    update.extend(results)
    for message in ours:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call.get("id") not in answered:
                    update.append(ToolMessage(content=tool_result, tool_call_id=call["id"], name=call.get("name")))
                    answered.add(call.get("id"))
    if partial is not None:
        update.append(AIMessage(content=partial.strip() or STOPPED_PLACEHOLDER, response_metadata={STOPPED_KEY: True}))
    elif answer is not None:
        # The state read shows the step's own writes even when its checkpoint
        # was never written (only its pending writes were): the answer is
        # written again, under the id it has if it has one (the messages'
        # reducer then replaces it instead of adding a second).
        finished = [m for m in ours if isinstance(m, AIMessage) and not m.tool_calls]
        update.append(finished[-1] if finished else AIMessage(content=answer))
    if len(update) == len(results):
        return None  # nothing dangling and nothing to add
    return update


# Each thread that reads messages on SQLite keeps one connection to the
# file: a new connection's first statement reads the whole schema (about
# 1 ms with the site's tables), more than the read itself. Reads run
# without a transaction (autocommit), so a kept connection holds no
# snapshot open and sees every commit. It is kept with the file's identity
# and replaced when the settings name another file or the file was made
# anew (the test suite's databases).
_sqlite_reader = threading.local()


def _sqlite_reading_connection(path: str) -> sqlite3.Connection:
    try:
        stat = os.stat(path)
        identity: tuple | None = (path, stat.st_dev, stat.st_ino)
    except OSError:
        identity = None  # no file (yet): connect afresh, keep nothing
    kept = getattr(_sqlite_reader, "kept", None)
    if kept is not None:
        if identity is not None and kept[0] == identity:
            return kept[1]
        _sqlite_reader.kept = None
        kept[1].close()
    conn = sqlite3.connect(path, timeout=SQLITE_TIMEOUT_SECONDS, check_same_thread=False)
    if identity is not None:
        _sqlite_reader.kept = (identity, conn)
    return conn


def _sqlite_messages(config: RunnableConfig, serde: SerializerProtocol | None) -> list[BaseMessage]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = _sqlite_reading_connection(sqlite_path())
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='checkpoints'").fetchone()
    if not exists:
        return []  # no turn ever ran on this database; a page view does not create tables
    saver = SqliteSaver(conn, serde=serde)
    saver.is_setup = True
    found = saver.get_tuple(config)
    return list(found.checkpoint["channel_values"].get("messages", [])) if found else []


# The few connections of this process that read threads' messages on
# PostgreSQL (pages, branches, archives). Connecting costs more than the
# read: about 12 ms of authentication on a local server, and a new backend
# process for every page view. Made on the first read; every connection is
# checked before it is lent, so one the server closed (a restart, a
# failover: docs/adr/0044) is replaced instead of failing the page; a round
# trip only where its socket shows a sign of its end (docs/adr/0170).
READ_POOL_MAX_SIZE = 4
READ_POOL_APPLICATION_NAME = "haico-history-reads"
_read_pool = None
_read_pool_lock = threading.Lock()


def _postgres_read_pool():
    global _read_pool
    with _read_pool_lock:
        if _read_pool is None:
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool

            _read_pool = ConnectionPool(
                conninfo=postgres_conninfo(),
                min_size=1,
                max_size=READ_POOL_MAX_SIZE,
                check=_checked_where_it_may_have_ended,
                # What PostgresSaver.from_conn_string connects with.
                kwargs={
                    "autocommit": True,
                    "prepare_threshold": 0,
                    "row_factory": dict_row,
                    # How an operator tells them apart in pg_stat_activity.
                    "application_name": READ_POOL_APPLICATION_NAME,
                },
                name=READ_POOL_APPLICATION_NAME,
                # A page waits at most this long for a connection (the
                # database restarting), then fails as a refused connect would.
                timeout=5,
                open=True,
            )
        return _read_pool


def _checked_where_it_may_have_ended(conn) -> None:
    from psycopg_pool import ConnectionPool

    if ended_by_server(conn):
        ConnectionPool.check_connection(conn)


def close_read_pool() -> None:
    """Close this process's reading connections (the test suite, before it
    drops its database). The next read opens them again."""
    global _read_pool
    with _read_pool_lock:
        pool, _read_pool = _read_pool, None
    if pool is not None:
        pool.close()


def _postgres_messages(config: RunnableConfig, serde: SerializerProtocol | None) -> list[BaseMessage]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    try:
        found = PostgresSaver(_postgres_read_pool(), serde=serde).get_tuple(config)
    except psycopg.errors.UndefinedTable:
        return []
    return list(found.checkpoint["channel_values"].get("messages", [])) if found else []


@dataclass(frozen=True, slots=True)
class ShownMessage:
    """What the chat reads of one stored message: its role (LangChain's
    `type`) and the fields turns_from_messages looks at."""

    type: str  # "human", "ai", "tool" or "system"
    content: Any
    response_metadata: dict
    tool_calls: list
    tool_call_id: str | None
    status: str


class _ShownMessagesSerializer(JsonPlusSerializer):
    """Reads a checkpoint whose messages are only shown (past_turns): each
    message the agent stores is read as a ShownMessage, without building
    LangChain's message class from the fields this same serializer dumped
    (validated or not, building them was most of a long chat's read).
    Anything else, and a message stored in a shape this does not expect, is
    read as JsonPlusSerializer reads it. What is copied or exported
    (read_messages) is read the plain way."""

    CLASSES = {(cls.__module__, cls.__name__) for cls in (HumanMessage, AIMessage, ToolMessage, SystemMessage)}

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, payload = data
        if kind != "msgpack":
            return super().loads_typed(data)
        return ormsgpack.unpackb(payload, ext_hook=self._ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)

    def _ext_hook(self, code: int, payload: bytes) -> Any:
        if code == EXT_PYDANTIC_V2:
            # module, class name, fields, method
            stored = ormsgpack.unpackb(payload, ext_hook=self._ext_hook, option=ormsgpack.OPT_NON_STR_KEYS)
            if isinstance(stored, list | tuple) and len(stored) >= 3 and (stored[0], stored[1]) in self.CLASSES:
                fields = stored[2]
                if isinstance(fields, dict) and isinstance(fields.get("type"), str):
                    return ShownMessage(
                        type=fields["type"],
                        content=fields.get("content", ""),
                        response_metadata=fields.get("response_metadata") or {},
                        tool_calls=fields.get("tool_calls") or [],
                        tool_call_id=fields.get("tool_call_id"),
                        status=fields.get("status", "success"),
                    )
        return super().loads_typed(("msgpack", ormsgpack.packb(ormsgpack.Ext(code, payload))))


_SHOWN_MESSAGES = _ShownMessagesSerializer()


def read_messages(thread_id, *, serde: SerializerProtocol | None = None) -> list[BaseMessage]:
    """The thread's messages as of its latest checkpoint ([] if none).
    `serde`: how the checkpoint is read (the savers' own by default)."""
    config: RunnableConfig = {"configurable": {"thread_id": str(thread_id), "checkpoint_ns": ""}}
    if database_vendor() == "postgresql":
        return _postgres_messages(config, serde)
    return _sqlite_messages(config, serde)


def past_turns(thread_id) -> list[PastTurn]:
    return turns_from_messages(read_messages(thread_id, serde=_SHOWN_MESSAGES))
