"""One agent turn as a stream of typed events (agent.events), and the
repair that leaves the history valid when a turn is stopped or fails.

`stream_turn` runs the compiled agent (agent.builder) for one user message
with LangGraph's "updates", "messages" and "custom" stream modes and
translates what comes out: tokens of the current model call, the sentences
of the tool calls it decides on, whether each step worked, the final
answer, and diagnostics from the middleware. It dedupes what LangGraph
yields more than once. Stopping is the caller's business: it cancels the
pending step and closes the stream, then calls `write_repair`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.types import Command

from .approval_request import ApprovalRequest
from .context import AgentContext
from .events import (
    AgentEvent,
    Answer,
    ApprovalAsked,
    ArgumentsStreamed,
    CapReached,
    Diagnostic,
    DraftWithdrawn,
    ModelCallRetried,
    ModelCallStarted,
    ModelCallUsage,
    StepFinished,
    StepsStarted,
    Token,
)
from .history import TURN_INDEX_KEY, message_text, repair_update, step_sentence
from .middleware.replies import REFUSED_CALLS_KEY, reply_finished
from .steps import StepStatus
from .tools.envelope import parse_envelope, step_status

logger = logging.getLogger("haico.agent.turn")

# LangGraph steps per turn (a tool round is two); generous for plan-and-execute turns.
RECURSION_LIMIT = 100
# How much of a step's arguments the activity log keeps for the operator.
ARGUMENTS_DETAIL_CHARS = 1000

# Each step's checkpoint is written before the next step runs: a server killed
# mid-turn loses at most the step in flight. On the shared SQLite file it is
# also faster than LangGraph's default "async", whose background write makes
# the next tool's write transaction wait for it (docs/adr/0005).
DURABILITY = "sync"

CANCELLED_TOOL_RESULT = "Cancelled by the user."
FAILED_TOOL_RESULT = "Not run: the turn failed before this step finished."
INTERRUPTED_TOOL_RESULT = "Not finished: the server was shutting down; whether this step changed anything is unknown."


def turn_config(thread_id) -> dict:
    return {"configurable": {"thread_id": str(thread_id)}, "recursion_limit": RECURSION_LIMIT}


async def stream_turn(graph, *, context: AgentContext, user_message: str) -> AsyncIterator[AgentEvent]:
    """Run one turn of `graph` on the context's thread, yielding its events."""
    human = HumanMessage(content=user_message, response_metadata={TURN_INDEX_KEY: context.turn_index})
    async for event in _run({"messages": [human]}, graph, context=context):
        yield event


async def resume_turn(graph, *, context: AgentContext, interrupt_id: str, decision: dict) -> AsyncIterator[AgentEvent]:
    """Go on with a turn paused for an approval (agent.approvals), from the
    checkpointer: `decision` answers the interrupt `interrupt_id`."""
    async for event in _run(Command(resume={interrupt_id: decision}), graph, context=context):
        yield event


async def _run(graph_input, graph, *, context: AgentContext) -> AsyncIterator[AgentEvent]:
    stream = graph.astream(
        graph_input,
        turn_config(context.thread.pk),
        context=context,
        stream_mode=["updates", "messages", "custom"],
        durability=DURABILITY,
    )
    seen: set = set()
    calls: dict = {}
    try:
        async for mode, payload in stream:
            for event in _events(mode, payload, seen, calls):
                yield event
    finally:
        await stream.aclose()


def _events(mode: str, payload, seen: set, calls: dict | None = None):
    """`calls`: {tool call id: (its arguments as JSON, why it was refused or
    None)}, filled from the model's replies for the steps' results."""
    calls = {} if calls is None else calls
    if mode == "messages":
        chunk, metadata = payload
        if isinstance(chunk, RemoveMessage):
            # The model-call retry discarded an attempt that had already
            # streamed text (agent/middleware/stream_gate.py).
            yield DraftWithdrawn()
        elif metadata.get("langgraph_node") == "model" and isinstance(chunk, AIMessage):
            if chunk.content:
                text = message_text(chunk)
                if text:
                    yield Token(text)
            elif parts := getattr(chunk, "tool_call_chunks", None):
                # A provider streams a call's arguments in chunks of their own, without text.
                arguments = sum(len(part.get("args") or "") for part in parts)
                if arguments:
                    yield ArgumentsStreamed(arguments)
        return
    if mode == "custom":
        if isinstance(payload, Diagnostic | ModelCallRetried | CapReached | ModelCallStarted | ModelCallUsage):
            yield payload
        return
    if mode != "updates" or not isinstance(payload, dict):
        return
    for node, update in payload.items():
        if node == "__interrupt__":
            for pending in update or ():
                request = ApprovalRequest.from_json(getattr(pending, "value", None))
                if request is not None:
                    yield ApprovalAsked(interrupt_id=pending.id, request=request)
            continue
        if node.startswith("__"):
            continue
        for item in update if isinstance(update, list) else [update]:
            if isinstance(item, dict):
                for message in item.get("messages") or []:
                    yield from _message_events(message, seen, calls)


def _arguments(args) -> str:
    text = json.dumps(_operator_args(args), ensure_ascii=False, default=str)
    return text if len(text) <= ARGUMENTS_DETAIL_CHARS else text[: ARGUMENTS_DETAIL_CHARS - 1] + "…"


def _operator_args(args):
    # The step's sentence is told already; the operator wants the rest.
    if isinstance(args, dict):
        return {key: value for key, value in args.items() if key != "action_and_reasoning"}
    return args


def _step_error(content, status: StepStatus) -> tuple[str, bool]:
    """What went wrong with a step, in the tool's words, and whether the call
    was refused rather than run."""
    envelope = parse_envelope(content)
    if envelope is not None:
        if status == StepStatus.SKIPPED:
            return str(envelope.get("summary") or ""), True
        return str(envelope.get("error") or ""), bool(envelope.get("refused"))
    text = content if isinstance(content, str) else ""
    # LangGraph's answer to a call of a tool the agent does not have.
    unknown = text.startswith("Error: ") and " is not a valid tool" in text
    return text, unknown


def _message_events(message, seen: set, calls: dict):
    if isinstance(message, AIMessage):
        call_ids = tuple(call.get("id") or "" for call in message.tool_calls)
        key: tuple = ("ai", message.id, message_text(message), call_ids)
        if key in seen:
            return
        seen.add(key)
        if not message.tool_calls:
            yield Answer(message_text(message), cut_off=not reply_finished(message))
            return
        refused = (message.response_metadata or {}).get(REFUSED_CALLS_KEY) or {}
        for call in message.tool_calls:
            if call.get("id"):
                calls[call["id"]] = (_arguments(call.get("args")), refused.get(call["id"]))
        sentences, ids = [], []
        for call in message.tool_calls:
            call_key = ("call", call.get("id"))
            if call.get("id") and call_key in seen:
                continue
            seen.add(call_key)
            sentences.append(step_sentence(call))
            ids.append(call.get("id") or "")
        # The text this call streamed was a preamble to its tool calls.
        yield DraftWithdrawn()
        if sentences:
            yield StepsStarted(tuple(sentences), tuple(ids))
    elif isinstance(message, ToolMessage):
        key = ("tool", message.tool_call_id or message.id)
        if key in seen:
            return
        seen.add(key)
        status = step_status(message.content, error=message.status == "error")
        arguments, refusal = calls.get(message.tool_call_id or "", ("", None))
        error, refused = _step_error(message.content, status) if status != StepStatus.DONE else ("", False)
        envelope = parse_envelope(message.content) if status == StepStatus.FAILED else None
        yield StepFinished(
            tool_name=message.name or "",
            status=status,
            call_id=message.tool_call_id or "",
            error=error,
            refused=refused or refusal is not None,
            arguments=arguments,
            overlap=bool(envelope and envelope.get("overlap")),
        )


async def complete_left_calls(graph, *, thread_id, turn_index: int, tool_result: str) -> None:
    """Give an earlier turn's tool calls left without a result `tool_result`
    (a card whose turn ended with no run to answer it), written as the
    model node so nothing stays pending. Nothing when the turn is not in
    the history (a copy seeded without it) or has nothing dangling; never
    raises."""
    config = turn_config(thread_id)
    try:
        state = await graph.aget_state(config)
        messages = list((state.values or {}).get("messages") or [])
        if not any(
            isinstance(m, HumanMessage) and (m.response_metadata or {}).get(TURN_INDEX_KEY) == turn_index for m in messages
        ):
            return
        update = repair_update(messages, turn_index=turn_index, user_message="", partial=None, tool_result=tool_result)
        if update:
            await graph.aupdate_state(config, {"messages": update}, as_node="model")
    except Exception:
        logger.exception("could not complete the calls of thread %s's turn %s", thread_id, turn_index)


async def write_repair(
    graph, *, context: AgentContext, user_message: str, partial: str | None, tool_result: str, answer: str | None = None
) -> None:
    """Leave the checkpointed history valid for the next model call after a
    stopped (`partial` is the answer so far) or failed (`partial` None) turn,
    or one whose finished `answer` the checkpointer could not store (the
    database away as it ended). Writing as the model node leaves nothing
    pending, so the next turn starts clean from its own message. Raises
    what kept it from writing (the caller may try again)."""
    config = turn_config(context.thread.pk)
    state = await graph.aget_state(config)
    messages = list((state.values or {}).get("messages") or [])
    update = repair_update(
        messages,
        turn_index=context.turn_index,
        user_message=user_message,
        partial=partial,
        tool_result=tool_result,
        answer=answer,
    )
    if update:
        await graph.aupdate_state(config, {"messages": update}, as_node="model")
