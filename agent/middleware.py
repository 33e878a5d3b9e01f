"""Model-call middleware: the blank / malformed / truncated retry, and the
tool calls that must not run.

The rules are docs/adr/0072's. A provider sometimes answers a model call
with nothing useful:

| case           | signal                                    | action                                |
|----------------|-------------------------------------------|---------------------------------------|
| blank          | no text and no tool calls                 | ask again (≤ 3 calls)                 |
| malformed      | finish_reason == "MALFORMED_FUNCTION_CALL"| ask again (≤ 3 calls); then its tool  |
|                |                                           | calls are refused, not run            |
| truncated      | finish_reason / stop_reason in length,    | with tool calls: ask once more with a |
|                | max_tokens, MAX_TOKENS                    | note to write less, then refuse them; |
|                |                                           | an answer is kept, marked cut off     |
| bad arguments  | tool-call arguments that are not a JSON   | refused with an error the model can   |
|                | object (agent.model INVALID_TOOL_ARGS_KEY,| act on; never repaired into partial   |
|                | or LangChain's invalid_tool_calls)        | arguments and run                     |

A refused call gets a failure envelope as its result, written by
`RefusedCallsMiddleware` in place of running the tool, so the model reads
why and the person's trace shows the step failed (docs/adr/0012).

Why not langchain's `ModelRetryMiddleware`: it retries when the model call
*raises*. A blank or malformed reply is a successful call with a useless
result, so it needs a check on the returned message; provider errors (429,
5xx, timeouts) are already retried with backoff by the OpenAI SDK
(`max_retries` in agent.model).

Streaming. With `stream_mode="messages"` LangGraph streams every token of
every model call through a callback handler in the run's config, so a
discarded attempt's tokens would reach the browser. Each attempt therefore
runs with that handler replaced by an `_AttemptGate` that decides what gets
through. Two policies:

- "live" (default): tokens go out as the model produces them, which keeps the
  first answer token within milliseconds of the model (docs/adr/0072). Chunks
  with nothing visible (no text, no tool-call fragment) are held back until
  something visible arrives, so a blank attempt never reaches the stream at
  all. A discarded attempt that did stream something (a malformed reply with
  partial text: the only such case, since a blank reply has no tokens) is
  followed on the stream by a `RemoveMessage` carrying the id of its
  streamed message, so the consumer drops that partial text.
- "buffered": an attempt's chunks are held until it is accepted and then
  replayed in order; a discarded attempt never reaches the stream. Strict,
  but the person sees nothing until the whole reply is generated.

Either way the graph's state and the "updates" stream only ever contain the
accepted attempt.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, cast
from uuid import UUID

from django.conf import settings
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables.config import RunnableConfig, var_child_runnable_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler
from langgraph.config import get_stream_writer
from langgraph.pregel._messages import StreamMessagesHandler, StreamMessagesHandlerV2

from workspace.text import encodable

from .events import MODEL_RETRIES_ATTR, CapReached, Diagnostic, ModelCallRetried
from .model import INVALID_TOOL_ARGS_KEY, ModelAttempts, counting_attempts
from .modes import CALL_LIMIT_SETTINGS, DEFAULT_MODE, label
from .tools.envelope import failure_envelope

logger = logging.getLogger("haico.agent")

MAX_MODEL_ATTEMPTS = 3
MALFORMED_FINISH_REASONS = frozenset({"MALFORMED_FUNCTION_CALL"})
TRUNCATED_FINISH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})
# A reply whose finish reason is one of these was finished by the model.
FINISHED_REASONS = frozenset({"stop", "tool_calls", "function_call", "end_turn", "stop_sequence", "STOP"})
STREAM_POLICIES = ("live", "buffered")

# On a reply written by HAICO itself (not a model), e.g. the call-limit note.
SYNTHETIC_KEY = "haico_synthetic"
# On a reply whose tool calls must not run: {tool call id: why}.
REFUSED_CALLS_KEY = "haico_refused_calls"

WRITE_LESS_NOTE = (
    "(Note from the HAICO system, not the user: your previous reply was cut off at the output limit "
    "in the middle of a tool call, so it was not run. Write less in one reply: make smaller edits, or add "
    "a long document in several append_to_document calls.)"
)
TRUNCATED_CALL_ERROR = (
    "Not run: your reply was cut off at the output limit in the middle of this call, so its arguments "
    "are incomplete. Nothing was changed. Make a smaller change, or split long text over several calls."
)
MALFORMED_CALL_ERROR = (
    "Not run: the model service reported this call as malformed. Nothing was changed; call the tool "
    "again with complete, valid arguments."
)
INVALID_ARGS_ERROR = (
    "Not run: the arguments of this call were {problem}. Nothing was changed; call the tool again with "
    "complete arguments as one valid JSON object."
)


# --------------------------------------------------------------------------
# Classifying a reply


def _finish_reasons(message: AIMessage) -> set[str]:
    meta = message.response_metadata or {}
    return {str(meta[key]) for key in ("finish_reason", "stop_reason") if meta.get(key)}


def is_truncated(message: AIMessage) -> bool:
    return bool(_finish_reasons(message) & TRUNCATED_FINISH_REASONS)


def reply_finished(message: AIMessage) -> bool:
    """Whether the model said it was done: False for a reply cut off at the
    output limit, and for a stream that ended without any finish reason."""
    meta = message.response_metadata or {}
    return bool(meta.get(SYNTHETIC_KEY)) or bool(_finish_reasons(message) & FINISHED_REASONS)


def refusals(message: AIMessage, verdict: str | None) -> dict[str, str]:
    """The tool calls of an accepted reply that must not run, with why."""
    refused: dict[str, str] = {}
    if verdict == "truncated":
        refused.update({call_id: TRUNCATED_CALL_ERROR for call in message.tool_calls if (call_id := call.get("id"))})
    elif verdict == "exhausted:malformed":
        refused.update({call_id: MALFORMED_CALL_ERROR for call in message.tool_calls if (call_id := call.get("id"))})
    for call_id, problem in ((message.additional_kwargs or {}).get(INVALID_TOOL_ARGS_KEY) or {}).items():
        refused.setdefault(call_id, INVALID_ARGS_ERROR.format(problem=problem))
    for call in message.invalid_tool_calls or []:
        if (call_id := call.get("id")) and call.get("name"):
            refused.setdefault(call_id, INVALID_ARGS_ERROR.format(problem="not valid JSON"))
    return refused


def _without_lone_surrogates(value):
    """Arguments as parsed from the model's JSON, where an escaped lone
    surrogate becomes a character no encoder accepts."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {key: _without_lone_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    return value


def with_refusals(message: AIMessage, refused: dict[str, str]) -> AIMessage:
    """The reply with its refused calls marked, and calls LangChain could not
    parse at all turned into calls (with no arguments) so each gets its
    error as a result instead of vanishing."""
    calls = list(message.tool_calls)
    known = {call.get("id") for call in calls}
    for call in message.invalid_tool_calls or []:
        if call.get("id") in refused and call["id"] not in known:
            # The name as the model sent it.
            calls.append({"name": call["name"], "args": {}, "id": call["id"], "type": "tool_call"})  # type: ignore[typeddict-item]
    meta = {**(message.response_metadata or {}), REFUSED_CALLS_KEY: refused}
    return message.model_copy(update={"tool_calls": calls, "invalid_tool_calls": [], "response_metadata": meta})


def retry_reason(message: AIMessage) -> str | None:
    """ "malformed", "blank", or None when the reply is usable as it is.

    A truncated reply is never retried: under the same output limit it would
    be cut off again (usually inside a tool call's largest argument).
    """
    if is_truncated(message):
        return None
    if _finish_reasons(message) & MALFORMED_FINISH_REASONS:
        return "malformed"
    if not message.tool_calls and not message.invalid_tool_calls and not message.text.strip():
        return "blank"
    return None


def _reply_of(response: ModelResponse | AIMessage) -> AIMessage | None:
    messages = [response] if isinstance(response, AIMessage) else response.result
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


# --------------------------------------------------------------------------
# Streaming gate


def _is_visible(chunk: Any) -> bool:
    message = getattr(chunk, "message", None)
    if message is None:
        return False
    return bool(getattr(message, "text", "") or getattr(message, "tool_call_chunks", None))


class _DiscardedAttempt(Exception):
    """Passed to the wrapped handler's on_llm_error so it forgets a discarded run."""


class _AttemptGate(BaseCallbackHandler, _StreamingCallbackHandler):
    """Stands in for LangGraph's StreamMessagesHandler during one model attempt.

    Inheriting `_StreamingCallbackHandler` keeps the chat model streaming
    (langchain-core streams only when such a handler is attached).
    """

    run_inline = True  # same ordering guarantees as the handler it wraps

    def __init__(self, inner: StreamMessagesHandler, *, live: bool):
        self.inner = inner
        self.live = live
        self._open = False  # live mode: something visible went out already
        self._held: list[tuple[str, Any, UUID, dict]] = []
        self._ends: list[tuple[Any, UUID, dict]] = []
        self._runs: list[UUID] = []
        self._streamed_ids: dict[UUID, list[str]] = {}

    # -- callbacks --------------------------------------------------------

    def on_chat_model_start(self, serialized, messages, *, run_id: UUID, **kwargs):
        self._runs.append(run_id)
        return self.inner.on_chat_model_start(serialized, messages, run_id=run_id, **kwargs)

    def on_llm_new_token(self, token, *, chunk=None, run_id: UUID, **kwargs):
        if self.live and (self._open or _is_visible(chunk)):
            self._open = True
            self._release_held()
            self._forward(token, chunk, run_id, kwargs)
        else:
            self._held.append((token, chunk, run_id, kwargs))

    def on_llm_end(self, response, *, run_id: UUID, **kwargs):
        # Held: the wrapped handler would emit the whole final message here,
        # before we know whether this attempt is kept.
        self._ends.append((response, run_id, kwargs))

    def on_llm_error(self, error, *, run_id: UUID, **kwargs):
        self.inner.on_llm_error(error, run_id=run_id, **kwargs)

    def tap_output_aiter(self, run_id, output):
        return self.inner.tap_output_aiter(run_id, output)

    def tap_output_iter(self, run_id, output):
        return self.inner.tap_output_iter(run_id, output)

    # -- decisions --------------------------------------------------------

    def _forward(self, token, chunk, run_id, kwargs):
        message = getattr(chunk, "message", None)
        if message is not None and run_id in self.inner.metadata:
            ids = self._streamed_ids.setdefault(run_id, [])
            self.inner.on_llm_new_token(token, chunk=chunk, run_id=run_id, **kwargs)
            # The handler assigns an id to id-less chunks as it emits them.
            if message.id and message.id not in ids:
                ids.append(message.id)
        else:
            self.inner.on_llm_new_token(token, chunk=chunk, run_id=run_id, **kwargs)

    def _release_held(self):
        held, self._held = self._held, []
        for token, chunk, run_id, kwargs in held:
            self._forward(token, chunk, run_id, kwargs)

    def accept(self) -> None:
        self._release_held()
        ends, self._ends = self._ends, []
        for response, run_id, kwargs in ends:
            self.inner.on_llm_end(response, run_id=run_id, **kwargs)

    def abandon(self) -> None:
        """The attempt raised: drop what is held and retract nothing."""
        self._held = []
        self._ends = []
        for run_id in self._runs:
            if run_id in self.inner.metadata:
                self.inner.on_llm_error(_DiscardedAttempt(), run_id=run_id)

    def discard(self) -> None:
        self._held = []
        self._ends = []
        for run_id in self._runs:
            meta = self.inner.metadata.get(run_id)
            if meta is not None:
                for message_id in self._streamed_ids.get(run_id, []):
                    # Relies on StreamMessagesHandler._emit (langgraph pinned in
                    # requirements.txt); tests/agent/test_middleware.py covers it.
                    self.inner._emit(meta, RemoveMessage(id=message_id))
            self.inner.on_llm_error(_DiscardedAttempt(), run_id=run_id)


def _swap(handlers: list, gate_for: Callable[[Any], Any]) -> list:
    return [gate_for(h) for h in handlers]


class _NoGate:
    """Stands in for a gate when nothing is being streamed (plain invoke)."""

    def accept(self) -> None:
        pass

    def abandon(self) -> None:
        pass

    def discard(self) -> None:
        pass


@contextlib.contextmanager
def _gated_stream(*, live: bool) -> Iterator[_AttemptGate | _NoGate]:
    """Run the block with the messages-stream handler behind a fresh gate.

    The model node calls the model without an explicit config, so the config
    (and its callbacks) comes from langchain-core's context variable; setting
    a copy with the handler swapped affects this attempt only.
    """
    config = var_child_runnable_config.get()
    callbacks = (config or {}).get("callbacks")
    if not isinstance(callbacks, BaseCallbackManager):
        yield _NoGate()
        return
    gate: _AttemptGate | None = None

    def gate_for(handler):
        nonlocal gate
        # The v2 handler streams protocol events instead of token callbacks;
        # nothing in HAICO opts into it, so it is left as it is.
        if isinstance(handler, StreamMessagesHandler) and not isinstance(handler, StreamMessagesHandlerV2):
            if gate is None or gate.inner is not handler:
                gate = _AttemptGate(handler, live=live)
            return gate
        return handler

    manager = callbacks.copy()
    manager.handlers = _swap(manager.handlers, gate_for)
    manager.inheritable_handlers = _swap(manager.inheritable_handlers, gate_for)
    if gate is None:
        yield _NoGate()
        return
    # config holds callbacks here, so it is not None.
    token = var_child_runnable_config.set(cast(RunnableConfig, {**(config or {}), "callbacks": manager}))
    try:
        yield gate
    finally:
        var_child_runnable_config.reset(token)


# --------------------------------------------------------------------------
# The middleware


class ModelTurnRetryMiddleware(AgentMiddleware):
    """Re-asks blank and malformed replies; warns about truncated ones (docs/adr/0072)."""

    def __init__(self, *, max_attempts: int = MAX_MODEL_ATTEMPTS, stream: str = "live"):
        super().__init__()
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if stream not in STREAM_POLICIES:
            raise ValueError(f"stream must be one of {STREAM_POLICIES}")
        self.max_attempts = max_attempts
        self.live = stream == "live"

    @property
    def name(self) -> str:
        return "ModelTurnRetry"

    # -- async (the app's path) ------------------------------------------

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        shortened = False
        with counting_attempts() as attempts:
            for attempt in range(1, self.max_attempts + 1):
                attempts.call_started()
                with _gated_stream(live=self.live) as gate:
                    try:
                        response = await handler(request)
                    except BaseException as exc:
                        # An error or a cancelled turn (Stop): what was streamed
                        # stays, as the partial answer the person saw.
                        gate.abandon()
                        _gave_up(attempts, exc)
                        raise
                verdict = self._judge(response, attempt, shortened=shortened)
                if verdict in ("retry", "shorter"):
                    gate.discard()
                    _asked_again(attempts, response, verdict)
                    if verdict == "shorter":
                        request, shortened = self._asking_for_less(request), True
                    continue
                gate.accept()
                return self._conclude(response, verdict, attempts)
        raise AssertionError("unreachable")  # the last attempt always returns

    # -- sync (graph.invoke; tests and scripts) ---------------------------

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        shortened = False
        with counting_attempts() as attempts:
            for attempt in range(1, self.max_attempts + 1):
                attempts.call_started()
                with _gated_stream(live=self.live) as gate:
                    try:
                        response = handler(request)
                    except BaseException as exc:
                        gate.abandon()
                        _gave_up(attempts, exc)
                        raise
                verdict = self._judge(response, attempt, shortened=shortened)
                if verdict in ("retry", "shorter"):
                    gate.discard()
                    _asked_again(attempts, response, verdict)
                    if verdict == "shorter":
                        request, shortened = self._asking_for_less(request), True
                    continue
                gate.accept()
                return self._conclude(response, verdict, attempts)
        raise AssertionError("unreachable")

    # -- shared -----------------------------------------------------------

    def _judge(self, response, attempt: int, *, shortened: bool) -> str | None:
        """ "retry", "shorter" (retry with a note to write less), a verdict to
        report ("truncated" / "exhausted:<reason>"), or None."""
        reply = _reply_of(response)
        if reply is None:
            return None
        if is_truncated(reply):
            if (reply.tool_calls or reply.invalid_tool_calls) and not shortened and attempt < self.max_attempts:
                logger.info("a tool call was cut off at the output limit; asking again for less")
                return "shorter"
            return "truncated"
        reason = retry_reason(reply)
        if reason is None:
            return None
        if attempt < self.max_attempts:
            logger.info("model gave a %s reply (attempt %d of %d); asking again", reason, attempt, self.max_attempts)
            return "retry"
        return f"exhausted:{reason}"

    @staticmethod
    def _asking_for_less(request: ModelRequest) -> ModelRequest:
        return request.override(messages=[*request.messages, HumanMessage(content=WRITE_LESS_NOTE)])

    def _conclude(self, response, verdict: str | None, attempts: ModelAttempts | None = None):
        """The accepted reply, with the calls that must not run marked and
        lone surrogates out of the arguments (agent.model cleans the text).
        A verdict's warning tells the call's retries too (one entry per call)."""
        if verdict is not None:
            self._report(verdict, response, attempts)
        elif attempts is not None:
            _report_retries(attempts)
        reply = _reply_of(response)
        if reply is None:
            return response
        refused = refusals(reply, verdict)
        calls = [{**call, "args": _without_lone_surrogates(call["args"])} for call in reply.tool_calls]
        if not refused and calls == reply.tool_calls:
            return response
        if refused:
            logger.info("refusing %d tool call(s): %s", len(refused), sorted(set(refused.values())))
        cleaned = reply.model_copy(update={"tool_calls": calls}) if calls != reply.tool_calls else reply
        marked = with_refusals(cleaned, refused) if refused else cleaned
        if isinstance(response, AIMessage):
            return marked
        return ModelResponse(
            result=[marked if message is reply else message for message in response.result],
            structured_response=response.structured_response,
        )

    def _report(self, verdict: str, response, attempts: ModelAttempts | None = None) -> None:
        """Log the warning and hand it to whoever streams the run (LangGraph's
        "custom" stream mode), as a Diagnostic the person can see."""
        no_answer = False
        reply = _reply_of(response)
        reasons = ", ".join(sorted(_finish_reasons(reply))) if reply is not None else ""
        if verdict == "truncated":
            limit = getattr(settings, "HAICO_MODEL_MAX_TOKENS", None)
            what = "a tool call, which was not run" if reply is not None and reply.tool_calls else "the answer"
            message = f"The model's reply was cut off at the model's output limit in {what}."
            detail = (
                f"finish_reason={reasons or '-'}; HAICO_MODEL_MAX_TOKENS={limit}: raise HAICO_MODEL_MAX_TOKENS so "
                "replies and tool calls fit."
            )
            kind = "truncation"
        else:
            reason = verdict.split(":", 1)[1]
            what = "an empty" if reason == "blank" else "a malformed tool call in its"
            message = (
                f"The model returned {what} reply {self.max_attempts} times in a row; "
                "the turn ended without an answer. Retry, or choose another model."
            )
            detail = f"{self.max_attempts} attempts; finish_reason of the last: {reasons or '-'}"
            no_answer = reason == "blank"
            kind = "provider_error"
        if attempts is not None and attempts.details:
            detail = "\n".join([*attempts.details, detail])
        logger.warning("%s (%s)", message, detail)
        _emit(Diagnostic(level="warning", message=message, no_answer=no_answer, kind=kind, detail=detail))


def _emit(event) -> None:
    """Hand an event to whoever streams the run (LangGraph's "custom" stream mode)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run
        return
    writer(event)


def _asked_again(attempts: ModelAttempts, response, verdict: str) -> None:
    reply = _reply_of(response)
    if verdict == "shorter":
        attempts.asked_again("cut_off", "a tool call was cut off at the output limit; asked again to write less")
        return
    reason = retry_reason(reply) if reply is not None else None
    finish = ", ".join(sorted(_finish_reasons(reply))) if reply is not None else ""
    if reason == "malformed":
        attempts.asked_again("malformed", f"finish_reason={finish}; asked again")
    else:
        attempts.asked_again("blank", "no text and no tool calls; asked again")


def _report_retries(attempts: ModelAttempts) -> None:
    if attempts.reasons:
        _emit(ModelCallRetried(reasons=tuple(attempts.reasons), detail="\n".join(attempts.details)))


def _gave_up(attempts: ModelAttempts, exc: BaseException) -> None:
    """A call that raised carries its attempts on the exception: the turn
    ends with it, before anything else of the stream is read."""
    if not isinstance(exc, Exception):
        return  # a stop, not a failure
    attempts.gave_up()
    try:
        setattr(
            exc,
            MODEL_RETRIES_ATTR,
            ModelCallRetried(reasons=tuple(attempts.reasons), detail="\n".join(attempts.details), succeeded=False),
        )
    except Exception:
        logger.debug("could not mark %r with its attempts", exc, exc_info=True)


class RefusedCallsMiddleware(AgentMiddleware):
    """Answers the tool calls the model-call retry refused (REFUSED_CALLS_KEY)
    with their error instead of running them."""

    @property
    def name(self) -> str:
        return "RefusedCalls"

    @staticmethod
    def _refusal(request) -> ToolMessage | None:
        call = request.tool_call
        for message in reversed((request.state or {}).get("messages") or []):
            if isinstance(message, AIMessage) and any(c.get("id") == call.get("id") for c in message.tool_calls):
                reason = ((message.response_metadata or {}).get(REFUSED_CALLS_KEY) or {}).get(call.get("id"))
                if reason is None:
                    return None
                return ToolMessage(
                    content=failure_envelope(reason), tool_call_id=call["id"], name=call.get("name"), status="error"
                )
        return None

    async def awrap_tool_call(self, request, handler):
        return self._refusal(request) or await handler(request)

    def wrap_tool_call(self, request, handler):
        return self._refusal(request) or handler(request)


# --------------------------------------------------------------------------
# Call limit

CALL_LIMIT_MESSAGE = (
    "I stopped because this turn reached the {mode} mode's limit of {limit} model calls ({setting}). "
    "Everything done so far is kept in the workspace; send a message to let me continue."
)
CALL_LIMIT_DIAGNOSTIC = "Call cap reached: the turn stopped at the {mode} mode's limit of {limit} model calls ({setting})."


def model_calls_this_turn(messages: list) -> int:
    """Model calls already made in the running turn: the AI messages after the
    turn's human message (retried attempts never reach the state)."""
    count = 0
    for message in reversed(messages):
        if message.type == "human":
            break
        if message.type == "ai":
            count += 1
    return count


class TurnCallLimitMiddleware(AgentMiddleware):
    """Ends a turn whose model keeps calling tools, with a message a person can
    act on, after the run's mode's number of model calls (`limits`: mode ->
    cap, 0 for none; agent.modes). Reaching it is also a Diagnostic, which
    the conversation layer records in the activity log.

    Why not langchain's `ModelCallLimitMiddleware`: its before/after-model hooks
    become graph nodes, i.e. two extra supersteps (and checkpoint writes) per
    model call, which bench/turn_overhead.py measured at ~4 ms per agent step.
    Counting the turn's AI messages inside the model call costs nothing and
    needs no state of its own, so it is naturally per turn."""

    def __init__(self, *, limits: dict[str, int]):
        super().__init__()
        if any(limit < 0 for limit in limits.values()):
            raise ValueError("a call limit must be 0 (none) or more")
        self.limits = dict(limits)

    @property
    def name(self) -> str:
        return "TurnCallLimit"

    def _limit_reached(self, request: ModelRequest) -> ModelResponse | None:
        mode = getattr(getattr(request.runtime, "context", None), "mode", DEFAULT_MODE)
        if mode not in self.limits:
            mode = DEFAULT_MODE
        limit = self.limits.get(mode) or 0
        if not limit or model_calls_this_turn(request.state.get("messages") or request.messages) < limit:
            return None
        words: dict[str, Any] = {"mode": label(mode), "limit": limit, "setting": CALL_LIMIT_SETTINGS[mode]}
        logger.warning("turn stopped at the %s mode's model-call limit of %s", mode, limit)
        _emit(CapReached(cap="model_calls", limit=limit, detail=CALL_LIMIT_DIAGNOSTIC.format(**words), mode=words["mode"]))
        note = AIMessage(content=CALL_LIMIT_MESSAGE.format(**words), response_metadata={SYNTHETIC_KEY: True})
        return ModelResponse(result=[note])

    async def awrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        return self._limit_reached(request) or await handler(request)

    def wrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        return self._limit_reached(request) or handler(request)
