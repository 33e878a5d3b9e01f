"""Model-call retry: the blank / malformed / truncated replies.

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
`agent.middleware.refused_calls.RefusedCallsMiddleware` in place of running
the tool, so the model reads why and the person's trace shows the step
failed (docs/adr/0012).

Why not langchain's `ModelRetryMiddleware`: it retries when the model call
*raises*. A blank or malformed reply is a successful call with a useless
result, so it needs a check on the returned message; provider errors (429,
5xx, timeouts) are already retried with backoff by the OpenAI SDK
(`max_retries` in agent.model).

Only the accepted attempt reaches the stream and the graph's state
(agent.middleware.stream_gate).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from django.conf import settings
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage

from ..events import MODEL_RETRIES_ATTR, Diagnostic, ModelCallRetried
from ..model import ModelAttempts, counting_attempts
from .emit import emit
from .replies import (
    RetryReason,
    RetryVerdict,
    finish_reasons,
    is_truncated,
    refusals,
    reply_of,
    retry_reason,
    with_refusals,
    without_lone_surrogates,
)
from .stream_gate import gated_stream

logger = logging.getLogger("haico.agent")

MAX_MODEL_ATTEMPTS = 3
STREAM_POLICIES = ("live", "buffered")

WRITE_LESS_NOTE = (
    "(Note from the HAICO system, not the user: your previous reply was cut off at the output limit "
    "in the middle of a tool call, so it was not run. Write less in one reply: make smaller edits, or add "
    "a long document in several append_to_document calls.)"
)


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
                with gated_stream(live=self.live) as gate:
                    try:
                        response = await handler(request)
                    except BaseException as exc:
                        # An error or a cancelled turn (Stop): what was streamed
                        # stays, as the partial answer the person saw.
                        gate.abandon()
                        _gave_up(attempts, exc)
                        raise
                verdict = self._judge(response, attempt, shortened=shortened)
                if verdict in (RetryVerdict.RETRY, RetryVerdict.SHORTER):
                    gate.discard()
                    _asked_again(attempts, response, verdict)
                    if verdict is RetryVerdict.SHORTER:
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
                with gated_stream(live=self.live) as gate:
                    try:
                        response = handler(request)
                    except BaseException as exc:
                        gate.abandon()
                        _gave_up(attempts, exc)
                        raise
                verdict = self._judge(response, attempt, shortened=shortened)
                if verdict in (RetryVerdict.RETRY, RetryVerdict.SHORTER):
                    gate.discard()
                    _asked_again(attempts, response, verdict)
                    if verdict is RetryVerdict.SHORTER:
                        request, shortened = self._asking_for_less(request), True
                    continue
                gate.accept()
                return self._conclude(response, verdict, attempts)
        raise AssertionError("unreachable")

    # -- shared -----------------------------------------------------------

    def _judge(self, response, attempt: int, *, shortened: bool) -> RetryVerdict | None:
        """Whether to ask again (RETRY, SHORTER), a verdict to report on the
        kept reply (TRUNCATED, EXHAUSTED_*), or None: usable as it is."""
        reply = reply_of(response)
        if reply is None:
            return None
        if is_truncated(reply):
            if (reply.tool_calls or reply.invalid_tool_calls) and not shortened and attempt < self.max_attempts:
                logger.info("a tool call was cut off at the output limit; asking again for less")
                return RetryVerdict.SHORTER
            return RetryVerdict.TRUNCATED
        reason = retry_reason(reply)
        if reason is None:
            return None
        if attempt < self.max_attempts:
            logger.info("model gave a %s reply (attempt %d of %d); asking again", reason, attempt, self.max_attempts)
            return RetryVerdict.RETRY
        if reason is RetryReason.BLANK:
            return RetryVerdict.EXHAUSTED_BLANK
        return RetryVerdict.EXHAUSTED_MALFORMED

    @staticmethod
    def _asking_for_less(request: ModelRequest) -> ModelRequest:
        return request.override(messages=[*request.messages, HumanMessage(content=WRITE_LESS_NOTE)])

    def _conclude(self, response, verdict: RetryVerdict | None, attempts: ModelAttempts | None = None):
        """The accepted reply, with the calls that must not run marked and
        lone surrogates out of the arguments (agent.model cleans the text).
        A verdict's warning tells the call's retries too (one entry per call)."""
        if verdict is not None:
            self._report(verdict, response, attempts)
        elif attempts is not None:
            _report_retries(attempts)
        reply = reply_of(response)
        if reply is None:
            return response
        refused = refusals(reply, verdict)
        calls = [{**call, "args": without_lone_surrogates(call["args"])} for call in reply.tool_calls]
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

    def _report(self, verdict: RetryVerdict, response, attempts: ModelAttempts | None = None) -> None:
        """Log the warning and hand it to whoever streams the run (LangGraph's
        "custom" stream mode), as a Diagnostic the person can see."""
        no_answer = False
        reply = reply_of(response)
        reasons = ", ".join(sorted(finish_reasons(reply))) if reply is not None else ""
        if verdict is RetryVerdict.TRUNCATED:
            limit = getattr(settings, "HAICO_MODEL_MAX_TOKENS", None)
            what = "a tool call, which was not run" if reply is not None and reply.tool_calls else "the answer"
            message = f"The model's reply was cut off at the model's output limit in {what}."
            detail = (
                f"finish_reason={reasons or '-'}; HAICO_MODEL_MAX_TOKENS={limit}: raise HAICO_MODEL_MAX_TOKENS so "
                "replies and tool calls fit."
            )
            kind = "truncation"
        else:
            blank = verdict is RetryVerdict.EXHAUSTED_BLANK
            what = "an empty" if blank else "a malformed tool call in its"
            message = (
                f"The model returned {what} reply {self.max_attempts} times in a row; "
                "the turn ended without an answer. Retry, or choose another model."
            )
            detail = f"{self.max_attempts} attempts; finish_reason of the last: {reasons or '-'}"
            no_answer = blank
            kind = "provider_error"
        if attempts is not None and attempts.details:
            detail = "\n".join([*attempts.details, detail])
        logger.warning("%s (%s)", message, detail)
        emit(Diagnostic(level="warning", message=message, no_answer=no_answer, kind=kind, detail=detail))


def _asked_again(attempts: ModelAttempts, response, verdict: RetryVerdict) -> None:
    reply = reply_of(response)
    if verdict is RetryVerdict.SHORTER:
        attempts.asked_again("cut_off", "a tool call was cut off at the output limit; asked again to write less")
        return
    reason = retry_reason(reply) if reply is not None else None
    finish = ", ".join(sorted(finish_reasons(reply))) if reply is not None else ""
    if reason is RetryReason.MALFORMED:
        attempts.asked_again("malformed", f"finish_reason={finish}; asked again")
    else:
        attempts.asked_again("blank", "no text and no tool calls; asked again")


def _report_retries(attempts: ModelAttempts) -> None:
    if attempts.reasons:
        emit(ModelCallRetried(reasons=tuple(attempts.reasons), detail="\n".join(attempts.details)))


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
