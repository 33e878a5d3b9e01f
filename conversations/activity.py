"""What the activity log says about a turn's events: plain words for the
person, the operator's detail one click away (conversations.models.ActivityLogEntry).

The agent reports what happened as events (agent.events); the turn runner
(conversations.turns.run) hands them here and records the `Note`s with
services.activity_log. One model call that needed several attempts is one
note ("The model was busy; retried twice."), never one per attempt.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import httpx
import openai
from langgraph.errors import GraphRecursionError

from agent.approval_request import ApprovalRequest
from agent.events import (
    MODEL_RETRIES_ATTR,
    CapReached,
    Diagnostic,
    ModelCallRetried,
    StepFinished,
)
from agent.middleware.replies import (
    INVALID_ARGS_ERROR,
    MALFORMED_CALL_ERROR,
    TRUNCATED_CALL_ERROR,
)
from agent.model import BODY_EXCERPT_CHARS, ModelNotConfigured
from agent.secrets import redact
from agent.steps import StepStatus

from .models import ActivityLogEntry

Kind = ActivityLogEntry.Kind
Level = ActivityLogEntry.Level

# What each retried attempt was, said to the person (agent.events.ModelCallRetried).
RETRY_REASONS = {
    "busy": "the model was busy",
    "server_error": "the model server had an error",
    "no_answer": "the model did not answer in time",
    "status": "the model server asked to try again",
    "blank": "the model gave an empty reply",
    "malformed": "the model sent a malformed tool call",
    "cut_off": "the model's tool call was cut off at its output limit",
}


@dataclass(frozen=True)
class Note:
    """One entry to record: services.activity_log(**note.fields(), ...)."""

    message: str
    kind: str
    level: str = Level.INFO
    detail: str = ""

    def fields(self) -> dict:
        return {"message": self.message, "kind": self.kind, "level": self.level, "detail": self.detail}


def times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def retried(event: ModelCallRetried) -> Note | None:
    """A model call that worked after being tried again."""
    if not event.reasons:
        return None
    counts = Counter(event.reasons)
    if len(counts) == 1:
        [(reason, count)] = counts.items()
        message = f"{_capitalised(RETRY_REASONS.get(reason, reason))}; retried {times(count)}."
    else:
        parts = [f"{RETRY_REASONS.get(reason, reason)} ({times(count)})" for reason, count in counts.items()]
        message = f"The model call was retried {times(len(event.reasons))}: " + ", ".join(parts) + "."
    return Note(message=message, kind=Kind.RETRY, level=Level.INFO, detail=event.detail)


def turn_failed(exc: BaseException, notice: str) -> Note:
    """The turn ended with `exc`; `notice` is what its bubble says
    (conversations.turns.errors)."""
    retries = getattr(exc, MODEL_RETRIES_ATTR, None)
    message, lines = notice, [f"{type(exc).__module__}.{type(exc).__name__}"]
    if isinstance(exc, openai.APIStatusError):
        lines.append(f"HTTP {exc.status_code}: {_body(exc)}")
    if isinstance(retries, ModelCallRetried) and retries.reasons:
        attempts = len(retries.reasons) + 1
        message = f"{notice} The model was tried {attempts} times."
    if isinstance(retries, ModelCallRetried) and retries.detail:
        lines.append("Attempts:\n" + retries.detail)
    if isinstance(exc, GraphRecursionError):
        kind = Kind.CAP_REACHED
    elif isinstance(exc, openai.OpenAIError | ModelNotConfigured):
        kind = Kind.PROVIDER_ERROR
    else:
        kind = Kind.OTHER
    return Note(message=message, kind=kind, level=Level.ERROR, detail="\n".join(lines))


def _body(exc: openai.APIStatusError) -> str:
    try:
        text = exc.response.text
    except (AttributeError, httpx.ResponseNotRead):
        text = str(exc.body or "")
    text = " ".join(redact(str(text)).split())
    return text if len(text) <= BODY_EXCERPT_CHARS else text[: BODY_EXCERPT_CHARS - 1] + "…"


def diagnostic(event: Diagnostic) -> Note:
    """A warning the model-call middleware raised (a cut-off reply, blank replies)."""
    kind = event.kind if event.kind in Kind.values else Kind.OTHER
    return Note(message=event.message, kind=kind, level=event.level, detail=event.detail)


def answer_cut_off() -> Note:
    """An answer whose stream ended without the model saying it was done
    (a cut at the output limit comes as a diagnostic instead)."""
    return Note(
        message="The answer was cut off: the model's reply ended before it said it was done.",
        kind=Kind.TRUNCATION,
        level=Level.WARNING,
        detail="The stream ended without a finish reason.",
    )


def cap_reached(event: CapReached) -> Note:
    if event.cap == "model_calls":
        whose = f"the {event.mode} mode's" if event.mode else "its"
        message = (
            f"The turn stopped at {whose} limit of {event.limit} model calls. "
            "Everything done so far is kept; send a message to let the assistant continue."
        )
    elif event.message:
        message = event.message
    else:
        message = f"The turn reached its limit ({event.cap}: {event.limit})."
    return Note(message=message, kind=Kind.CAP_REACHED, level=Level.WARNING, detail=event.detail)


def step_result(event: StepFinished, sentence: str) -> Note | None:
    """A step that failed, was refused or was done only in part; None for one that worked."""
    if event.status == StepStatus.DONE:
        return None
    step = f"“{sentence}”" if sentence else f"a call of {event.tool_name}"
    detail = "\n".join(
        line
        for line in (
            f"tool: {event.tool_name}",
            f"arguments: {event.arguments}" if event.arguments else "",
            f"result: {event.error}" if event.error else "",
        )
        if line
    )
    error = event.error.strip()
    if event.status == StepStatus.SKIPPED:
        message = f"Done in part: {step}. {error}".strip()
        return Note(message=message, kind=Kind.REFUSED_CALL, level=Level.INFO, detail=detail)
    if event.refused:
        return Note(message=_refusal(event, step, error), kind=Kind.REFUSED_CALL, level=Level.WARNING, detail=detail)
    message = f"A step did not work: {step}." + (f" {error}" if error else "")
    return Note(message=message, kind=Kind.TOOL_FAILURE, level=Level.WARNING, detail=detail)


def _refusal(event: StepFinished, step: str, error: str) -> str:
    if error == TRUNCATED_CALL_ERROR:
        return f"Not run: {step}. The model's tool call was cut off at its output limit, so its arguments were incomplete."
    if error == MALFORMED_CALL_ERROR:
        return f"Not run: {step}. The model service reported the tool call as malformed."
    if error.startswith(INVALID_ARGS_ERROR.split("{", 1)[0]):
        return f"Not run: {step}. The model sent its arguments as broken JSON."
    if error.startswith("Error: ") and " is not a valid tool" in error:
        return f"Not run: the model asked for a tool that does not exist ({event.tool_name})."
    return f"Not run: {step}. {error}".strip()


# --------------------------------------------------------------------------
# Approvals (docs/adr/0017)


def approval_asked(request: ApprovalRequest) -> Note:
    """The details list what would go; the reason is the agent's sentence."""
    lines = [f"{request.kind}: {request.reason}", *request.details]
    return Note(
        message=f"Approval asked: {request.summary}",
        kind=Kind.APPROVAL_ASKED,
        level=Level.INFO,
        detail="\n".join(lines)[:2000],
    )


def approval_answered(words: str, summary: str) -> Note:
    """`words`: "Approved", "Rejected" or "Rejected (Stop)"."""
    return Note(message=f"{words}: {summary}", kind=Kind.APPROVAL_ANSWERED, level=Level.INFO)
