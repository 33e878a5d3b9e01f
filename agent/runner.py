"""The turn runner: one agent turn as a server-owned task that turns the agent's
stream into HTML fragments for the thread's channel group.

It never touches a socket. Every fragment goes to the group
(`thread.<uuid hex>`) as a `thread.fragment` event, so every open tab of the
thread — and a page reloaded mid-turn, which joins the group on connect —
sees the same turn. The task is not tied to the socket that started it: the
person may close the tab and the turn still completes.

Order of a turn's fragments (ids in conversations/fragments/turn.html):

1. the turn shell appended to #chat-messages (user bubble, an open
   "Internal reasoning" container, an empty assistant bubble) and the
   running controls (#chat-status with Stop, #chat-send disabled);
2. per tool call, one reasoning step (its action_and_reasoning sentence
   only) appended to #turn-N-steps;
3. per successful tool result, OOB swaps of the panels it changed (the
   centre panel only when the document changed or an artifact was made, the
   artifact then selected);
4. answer tokens appended to #turn-N-answer-content (text a model call wrote
   before deciding to call tools is cleared when its tool calls arrive);
5. closing: the answer as sanitised markdown, the reasoning collapsed, the
   marker (Stopped / the error), idle controls.

Stopping: `request_stop` sets the database flag (`cancel_requested`, which
other server processes' runners poll) and wakes a runner of this process at
once. The in-flight step is cancelled, the partial answer kept, and the
checkpointed history repaired so the next turn's model call is valid.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.template.loader import render_to_string
from django.utils.html import escape
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from conversations import services as conversation_services
from conversations.models import ActivityLogEntry, Thread
from workspace.errors import WorkspaceError

from . import checkpointer as checkpointers
from .history import STOPPED_KEY, STOPPED_PLACEHOLDER, TURN_INDEX_KEY, message_text, step_sentence
from .tools.context import bind_turn_index
from .tools.envelope import parse_envelope

logger = logging.getLogger("haico.agent.runner")

# With nothing to send for this long, a harmless fragment keeps proxies and
# browsers from dropping an idle socket during one long generation.
HEARTBEAT_SECONDS = 10.0
# How often the runner looks at the database stop flag (set by another process).
CANCEL_POLL_SECONDS = 1.0
# LangGraph steps per turn (a tool round is two); generous for plan-and-execute turns.
RECURSION_LIMIT = 100
# On server shutdown, how long running turns get to wind down before being cancelled.
SHUTDOWN_GRACE_SECONDS = 5.0

# Each step's checkpoint is written before the next step runs: a server killed
# mid-turn loses at most the step in flight. On the shared SQLite file it is
# also faster than LangGraph's default "async", whose background write makes
# the next tool's write transaction wait for it (bench: ~1 ms per step).
DURABILITY = "sync"

CANCELLED_TOOL_RESULT = "Cancelled by the user."
FAILED_TOOL_RESULT = "Not run: the turn failed before this step finished."
FRAGMENTS = "conversations/fragments/turn.html"
FRAGMENT_EVENT = "thread.fragment"


def group_name(thread_id) -> str:
    """The channel group of a thread (ASCII, well under the 100-character limit)."""
    return f"thread.{uuid.UUID(str(thread_id)).hex}"


def fragment(name: str, **context) -> str:
    return render_to_string(f"{FRAGMENTS}#{name}", context)


def controls_html(*, running: bool) -> str:
    return fragment("controls", running=running, oob=True)


# --- how the agent is built ----------------------------------------------------------

AgentFactory = Callable[..., Awaitable[Any]]


async def default_agent_factory(*, thread: Thread, model_name: str | None, checkpointer) -> Any:
    from .builder import build_agent

    return await database_sync_to_async(build_agent)(thread=thread, model_name=model_name, checkpointer=checkpointer)


# The one seam tests use: replace with a factory that builds the real agent
# around a scripted model. Everything else in a turn is the production path.
agent_factory: AgentFactory = default_agent_factory


# --- errors shown to the person ------------------------------------------------------


class TurnStopped(Exception):
    """The person asked the turn to stop."""


def safe_error_message(exc: BaseException) -> str:
    """A sentence the person can act on; never a traceback or a provider's raw text."""
    from langgraph.errors import GraphRecursionError

    from .model import ModelNotConfigured

    retry = " Your message is saved; send it again to retry."
    if isinstance(exc, ModelNotConfigured | WorkspaceError):
        return exc.message
    if isinstance(exc, GraphRecursionError):
        return "The assistant took too many steps without finishing." + retry
    try:
        import openai
    except ImportError:  # pragma: no cover - langchain-openai depends on it
        openai = None
    if openai is not None:
        if isinstance(exc, openai.APITimeoutError):
            return "The model did not answer in time." + retry
        if isinstance(exc, openai.APIConnectionError):
            return "The model server could not be reached." + retry
        if isinstance(exc, openai.RateLimitError):
            return "The model provider is limiting requests right now." + retry
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return "The model server refused the API key; check OPENAI_API_KEY."
        if isinstance(exc, openai.NotFoundError):
            return "The model server does not offer this model; check HAICO_MODEL / HAICO_MODELS."
        if isinstance(exc, openai.APIStatusError):
            return f"The model server answered with an error (HTTP {exc.status_code})." + retry
    return "Something went wrong while the assistant was working." + retry


# --- the running turns of this process -----------------------------------------------


@dataclass
class _Running:
    task: asyncio.Task
    turn: TurnRun


_running: dict[uuid.UUID, _Running] = {}


async def start_turn(*, thread: Thread, user_message: str, model_name: str | None = None) -> int:
    """Claim the thread's single turn slot, snapshot the workspace, and start
    the agent in a server-owned task. Returns the turn index.

    Raises conversations.errors.TurnAlreadyRunning (nothing stored) while
    another turn of this thread runs, in any process.
    """
    turn_index, _snapshot = await database_sync_to_async(conversation_services.turn_begin)(
        thread=thread, user_message=user_message
    )
    turn = TurnRun(thread=thread, turn_index=turn_index, user_message=user_message, model_name=model_name)
    task = asyncio.create_task(turn.run(), name=f"haico-turn-{thread.pk}-{turn_index}")
    _running[thread.pk] = _Running(task=task, turn=turn)
    task.add_done_callback(lambda done, key=thread.pk: _forget(key, done))
    checkpointers.on_shutdown(stop_all_turns)
    return turn_index


def _forget(key, task: asyncio.Task) -> None:
    current = _running.get(key)
    if current is not None and current.task is task:
        del _running[key]


async def request_stop(*, thread: Thread) -> bool:
    """Ask the thread's running turn to stop, wherever it runs. True if one was running."""
    flagged = await database_sync_to_async(conversation_services.turn_request_cancel)(thread=thread)
    local = _running.get(thread.pk)
    if local is not None:
        local.turn.stop_event.set()
    return flagged or local is not None


def resync_html(thread_id) -> str:
    """What a page opened mid-turn has missed of the turn running in this
    process (the reasoning so far and the answer streamed so far), or "".

    The page itself renders the turn from the checkpointer, which holds
    neither the streamed draft nor steps sent since the page was built. The
    consumer queues this behind the fragments already on their way to it, so
    the snapshot replaces whatever those added and later tokens append to it."""
    local = _running.get(uuid.UUID(str(thread_id)))
    if local is None or local.task.done():
        return ""
    return local.turn.resync_html()


def running_task(thread_id) -> asyncio.Task | None:
    local = _running.get(uuid.UUID(str(thread_id)))
    return local.task if local else None


async def wait_for_turn(thread_id, timeout: float = 30.0) -> None:
    """Wait until this process's turn on the thread (if any) has finished."""
    task = running_task(thread_id)
    if task is not None:
        await asyncio.wait_for(asyncio.shield(task), timeout)


async def stop_all_turns() -> None:
    """Server shutdown: stop every turn of this process (partial answers kept,
    turn slots released), cancelling any that do not wind down in time."""
    local = list(_running.values())
    for running in local:
        running.turn.stop_event.set()
    tasks = [running.task for running in local if not running.task.done()]
    if not tasks:
        return
    _done, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_SECONDS)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=SHUTDOWN_GRACE_SECONDS)


# --- one turn -------------------------------------------------------------------------


def _document_version(thread: Thread) -> int:
    from workspace.selectors import document_for

    return document_for(thread=thread).version


def _cancel_requested(thread_id) -> bool:
    return Thread.objects.filter(pk=thread_id, cancel_requested=True).exists()


class TurnRun:
    def __init__(self, *, thread: Thread, turn_index: int, user_message: str, model_name: str | None):
        self.thread = thread
        self.turn_index = turn_index
        self.user_message = user_message
        self.model_name = model_name or None
        self.group = group_name(thread.pk)
        self.stop_event = asyncio.Event()
        self.config = {"configurable": {"thread_id": str(thread.pk)}, "recursion_limit": RECURSION_LIMIT}
        self.graph = None
        self.steps: list[str] = []
        self.draft: list[str] = []  # text streamed by the current model call
        self._held_whitespace = ""
        self.final_text = ""
        self._seen: set = set()
        self._artifacts_shown: set = set()
        self._document_version: int | None = None
        self._channel_layer = get_channel_layer()
        self._last_sent = time.monotonic()
        self._last_poll = time.monotonic()
        self._last_keepalive = time.monotonic()
        self._content_id = f"turn-{turn_index}-answer-content"

    # -- sending --

    async def send(self, html: str) -> None:
        if not html:
            return
        await self._channel_layer.group_send(self.group, {"type": FRAGMENT_EVENT, "html": html})
        self._last_sent = time.monotonic()

    def _turn(self, **overrides) -> dict:
        turn = {
            "turn_index": self.turn_index,
            "user_message": self.user_message,
            "steps": self.steps,
            "answer_html": "",
            "stopped": False,
            "error": "",
            "running": True,
        }
        turn.update(overrides)
        return turn

    def resync_html(self) -> str:
        turn = self._turn(answer_html=escape("".join(self.draft)))
        return fragment("reasoning", turn=turn, oob=True) + fragment("answer", turn=turn, oob=True)

    # -- the task --

    async def run(self) -> str:
        """Run the turn to its end; returns "complete", "stopped" or "error"."""
        outcome, error = "complete", ""
        try:
            await self.send(
                fragment("turn_append", turn=self._turn(), oob=False)
                + controls_html(running=True)
                # The first message may have titled the thread; every tab shows the new title.
                + (fragment("thread_title", title=self.thread.title) if self.turn_index == 1 else "")
            )
            await self._stream()
        except TurnStopped:
            outcome = "stopped"
            await self._repair_history(partial="".join(self.draft), tool_result=CANCELLED_TOOL_RESULT)
        except asyncio.CancelledError:
            # Server shutdown after the grace period: still release the slot below.
            outcome = "stopped"
            raise
        except Exception as exc:
            outcome, error = "error", safe_error_message(exc)
            logger.exception("turn %s of thread %s failed", self.turn_index, self.thread.pk)
            await self._record_error(error)
            await self._repair_history(partial=None, tool_result=FAILED_TOOL_RESULT)
        finally:
            try:
                await database_sync_to_async(conversation_services.turn_finish)(
                    thread=self.thread, turn_index=self.turn_index
                )
            except Exception:
                logger.exception("could not release the turn slot of thread %s", self.thread.pk)
            try:
                await self.send(self._closing_html(outcome, error))
            except Exception:
                logger.exception("could not send the end of turn %s of thread %s", self.turn_index, self.thread.pk)
        return outcome

    async def _stream(self) -> None:
        saver = await checkpointers.get_checkpointer()
        self._document_version = await database_sync_to_async(_document_version)(self.thread)
        self.graph = await agent_factory(thread=self.thread, model_name=self.model_name, checkpointer=saver)
        human = HumanMessage(content=self.user_message, response_metadata={TURN_INDEX_KEY: self.turn_index})
        with bind_turn_index(self.turn_index):
            stream = self.graph.astream(
                {"messages": [human]}, self.config, stream_mode=["updates", "messages"], durability=DURABILITY
            )
            await self._drain(stream)

    async def _drain(self, stream) -> None:
        """Consume the agent stream, with heartbeats and stop checks while it is quiet.

        The pending step is awaited through a task so a heartbeat or a stop
        check never cancels it; only a stop does."""
        iterator = stream.__aiter__()
        pending: asyncio.Future | None = None
        stop_wait = asyncio.ensure_future(self.stop_event.wait())
        try:
            while True:
                await self._check_stop()
                if pending is None:
                    pending = asyncio.ensure_future(iterator.__anext__())
                wake_at = min(self._last_sent + HEARTBEAT_SECONDS, self._last_poll + CANCEL_POLL_SECONDS)
                done, _ = await asyncio.wait(
                    (pending, stop_wait), timeout=max(0.0, wake_at - time.monotonic()), return_when=asyncio.FIRST_COMPLETED
                )
                if pending in done:
                    finished, pending = pending, None
                    try:
                        mode, payload = finished.result()
                    except StopAsyncIteration:
                        return
                    await self._handle(mode, payload)
                elif stop_wait in done:
                    raise TurnStopped
                elif time.monotonic() - self._last_sent >= HEARTBEAT_SECONDS:
                    await self.send(fragment("heartbeat", oob=True))
        finally:
            stop_wait.cancel()
            if pending is not None:
                pending.cancel()
                await asyncio.wait((pending,))
                if not pending.cancelled():
                    pending.exception()  # retrieved; the stop (or error) is what matters
            try:
                await iterator.aclose()
            except Exception:
                logger.debug("agent stream did not close cleanly", exc_info=True)

    async def _check_stop(self) -> None:
        if self.stop_event.is_set():
            raise TurnStopped
        now = time.monotonic()
        if now - self._last_poll >= CANCEL_POLL_SECONDS:
            self._last_poll = now
            if await database_sync_to_async(_cancel_requested)(self.thread.pk):
                raise TurnStopped
        if now - self._last_keepalive >= conversation_services.TURN_KEEPALIVE.total_seconds():
            # Keeps the claim fresh so another process never takes over a live
            # turn, while a turn whose server died is released after a short while.
            self._last_keepalive = now
            await database_sync_to_async(conversation_services.turn_keepalive)(
                thread=self.thread, turn_index=self.turn_index
            )

    # -- stream events --

    async def _handle(self, mode: str, payload) -> None:
        if mode == "messages":
            chunk, metadata = payload
            if isinstance(chunk, RemoveMessage):
                # The model-call retry discarded an attempt that had already
                # streamed text (agent/middleware.py): take that text back.
                await self._clear_draft()
            elif metadata.get("langgraph_node") == "model" and isinstance(chunk, AIMessage) and chunk.content:
                await self._token(message_text(chunk))
            return
        if mode != "updates" or not isinstance(payload, dict):
            return
        for node, update in payload.items():
            if node.startswith("__"):
                continue
            for item in update if isinstance(update, list) else [update]:
                if isinstance(item, dict):
                    for message in item.get("messages") or []:
                        await self._message(message)

    async def _token(self, text: str) -> None:
        if not text:
            return
        self.draft.append(text)
        if not text.strip():
            # A bare whitespace fragment could be dropped by the HTML parser
            # on the client; it goes out with the next word instead.
            self._held_whitespace += text
            return
        text, self._held_whitespace = self._held_whitespace + text, ""
        await self.send(f'<div id="{self._content_id}" hx-swap-oob="beforeend">{escape(text)}</div>')

    async def _message(self, message) -> None:
        if isinstance(message, AIMessage):
            calls = tuple(call.get("id") or "" for call in message.tool_calls)
            key = ("ai", message.id, message_text(message), calls)
            if key in self._seen:
                return
            self._seen.add(key)
            if message.tool_calls:
                await self._tool_calls(message)
            else:
                self.final_text = message_text(message)
        elif isinstance(message, ToolMessage):
            key = ("tool", message.tool_call_id or message.id)
            if key in self._seen:
                return
            self._seen.add(key)
            await self._tool_result(message)

    async def _clear_draft(self) -> None:
        if self.draft:
            self.draft.clear()
            self._held_whitespace = ""
            await self.send(fragment("answer", turn=self._turn(), oob=True))

    async def _tool_calls(self, message: AIMessage) -> None:
        html = []
        # The text this call streamed was a preamble to tool calls, not the answer.
        await self._clear_draft()
        for call in message.tool_calls:
            call_key = ("call", call.get("id"))
            if call.get("id") and call_key in self._seen:
                continue
            self._seen.add(call_key)
            sentence = step_sentence(call)
            self.steps.append(sentence)
            html.append(fragment("step", turn_index=self.turn_index, sentence=sentence))
        await self.send("".join(html))

    async def _tool_result(self, message: ToolMessage) -> None:
        envelope = parse_envelope(message.content)
        if not envelope or not envelope.get("success"):
            return
        from .tools.registry import panels_affected_by

        panels = panels_affected_by(message.name or "")
        if panels:
            await self.send(await database_sync_to_async(self._render_panels)(panels, envelope))

    def _render_panels(self, panels, envelope: dict) -> str:
        from workspace.panels import render_panel

        parts = []
        for name in panels:
            if name != "centre":
                parts.append(render_panel(name, thread=self.thread, oob=True))
                continue
            artifact_id = envelope.get("artifact_id")
            if artifact_id is not None:
                if artifact_id in self._artifacts_shown:
                    continue
                self._artifacts_shown.add(artifact_id)
                parts.append(render_panel("centre", thread=self.thread, oob=True, selected_artifact_id=artifact_id))
                continue
            version = _document_version(self.thread)
            if version != self._document_version:
                self._document_version = version
                parts.append(render_panel("centre", thread=self.thread, oob=True))
        return "".join(parts)

    # -- endings --

    def _closing_html(self, outcome: str, error: str) -> str:
        if outcome == "complete":
            answer = self.final_text
        elif outcome == "stopped":
            answer = "".join(self.draft)
        else:
            answer = ""
        from workspace.markdown import render_markdown

        turn = self._turn(
            running=False,
            answer_html=render_markdown(answer) if answer.strip() else "",
            stopped=outcome == "stopped",
            error=error,
        )
        return (
            fragment("answer", turn=turn, oob=True)
            + fragment("reasoning", turn=turn, oob=True)
            + fragment("marker", turn=turn, oob=True)
            + controls_html(running=False)
        )

    async def _record_error(self, message: str) -> None:
        try:
            await database_sync_to_async(conversation_services.activity_log)(
                thread=self.thread, message=message, level=ActivityLogEntry.Level.ERROR, turn_index=self.turn_index
            )
        except Exception:
            logger.exception("could not record the error of turn %s", self.turn_index)

    async def _repair_history(self, *, partial: str | None, tool_result: str) -> None:
        """Leave the checkpointed history valid for the next model call.

        Every tool call of this turn gets a result (a synthetic one for calls
        that never finished; results that were only pending writes of the
        interrupted step are written again, since the update drops them), and
        a stopped turn ends with its partial answer marked as stopped. Writing
        as the model node leaves nothing pending, so the next turn starts
        clean from its own message."""
        if self.graph is None:
            return
        try:
            state = await self.graph.aget_state(self.config)
            messages = list((state.values or {}).get("messages") or [])
            start = None
            for i, message in enumerate(messages):
                if isinstance(message, HumanMessage) and (message.response_metadata or {}).get(TURN_INDEX_KEY) == self.turn_index:
                    start = i
            update: list = []
            if start is None:
                update.append(HumanMessage(content=self.user_message, response_metadata={TURN_INDEX_KEY: self.turn_index}))
                ours = []
            else:
                ours = messages[start + 1 :]
            answered = {m.tool_call_id for m in ours if isinstance(m, ToolMessage)}
            update.extend(m for m in ours if isinstance(m, ToolMessage))
            for message in ours:
                if isinstance(message, AIMessage):
                    for call in message.tool_calls:
                        if call.get("id") not in answered:
                            update.append(ToolMessage(content=tool_result, tool_call_id=call["id"], name=call.get("name")))
                            answered.add(call.get("id"))
            if partial is not None:
                update.append(AIMessage(content=partial.strip() or STOPPED_PLACEHOLDER, response_metadata={STOPPED_KEY: True}))
            if len(update) == len([m for m in ours if isinstance(m, ToolMessage)]):
                return  # nothing dangling and nothing to add
            await self.graph.aupdate_state(self.config, {"messages": update}, as_node="model")
        except Exception:
            logger.exception("could not repair the history of thread %s after turn %s", self.thread.pk, self.turn_index)
