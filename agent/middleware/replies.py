"""What a model's reply says about itself: finished, cut off, blank or
malformed, and which of its tool calls must not run (docs/adr/0072,
docs/adr/0012)."""

from __future__ import annotations

from enum import StrEnum

from langchain.agents.middleware import ModelResponse
from langchain_core.messages import AIMessage

from workspace.text import encodable

from ..model import INVALID_TOOL_ARGS_KEY

MALFORMED_FINISH_REASONS = frozenset({"MALFORMED_FUNCTION_CALL"})
TRUNCATED_FINISH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})
# A reply whose finish reason is one of these was finished by the model.
FINISHED_REASONS = frozenset({"stop", "tool_calls", "function_call", "end_turn", "stop_sequence", "STOP"})

# On a reply written by HAICO itself (not a model), e.g. the call-limit note.
SYNTHETIC_KEY = "haico_synthetic"
# On a reply whose tool calls must not run: {tool call id: why}.
REFUSED_CALLS_KEY = "haico_refused_calls"

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


class RetryReason(StrEnum):
    """Why a reply is not usable as it is; the word is also the attempt's
    reason in agent.events.ModelCallRetried."""

    BLANK = "blank"
    MALFORMED = "malformed"


class RetryVerdict(StrEnum):
    """What the model-call retry makes of one attempt's reply (None: usable
    as it is)."""

    RETRY = "retry"  # blank or malformed: ask again
    SHORTER = "shorter"  # a tool call cut off: ask again with a note to write less
    TRUNCATED = "truncated"  # cut off, kept: its tool calls are refused
    EXHAUSTED_BLANK = "exhausted_blank"  # still blank at the last attempt
    EXHAUSTED_MALFORMED = "exhausted_malformed"  # still malformed at the last attempt: its tool calls are refused


def finish_reasons(message: AIMessage) -> set[str]:
    meta = message.response_metadata or {}
    return {str(meta[key]) for key in ("finish_reason", "stop_reason") if meta.get(key)}


def is_truncated(message: AIMessage) -> bool:
    return bool(finish_reasons(message) & TRUNCATED_FINISH_REASONS)


def reply_finished(message: AIMessage) -> bool:
    """Whether the model said it was done: False for a reply cut off at the
    output limit, and for a stream that ended without any finish reason."""
    meta = message.response_metadata or {}
    return bool(meta.get(SYNTHETIC_KEY)) or bool(finish_reasons(message) & FINISHED_REASONS)


def refusals(message: AIMessage, verdict: RetryVerdict | None) -> dict[str, str]:
    """The tool calls of an accepted reply that must not run, with why."""
    refused: dict[str, str] = {}
    if verdict is RetryVerdict.TRUNCATED:
        refused.update({call_id: TRUNCATED_CALL_ERROR for call in message.tool_calls if (call_id := call.get("id"))})
    elif verdict is RetryVerdict.EXHAUSTED_MALFORMED:
        refused.update({call_id: MALFORMED_CALL_ERROR for call in message.tool_calls if (call_id := call.get("id"))})
    for call_id, problem in ((message.additional_kwargs or {}).get(INVALID_TOOL_ARGS_KEY) or {}).items():
        refused.setdefault(call_id, INVALID_ARGS_ERROR.format(problem=problem))
    for call in message.invalid_tool_calls or []:
        if (call_id := call.get("id")) and call.get("name"):
            refused.setdefault(call_id, INVALID_ARGS_ERROR.format(problem="not valid JSON"))
    return refused


def without_lone_surrogates(value):
    """Arguments as parsed from the model's JSON, where an escaped lone
    surrogate becomes a character no encoder accepts."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {key: without_lone_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_lone_surrogates(item) for item in value]
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


def retry_reason(message: AIMessage) -> RetryReason | None:
    """Why the reply should be asked again, or None when it is usable as it is.

    A truncated reply is never retried: under the same output limit it would
    be cut off again (usually inside a tool call's largest argument).
    """
    if is_truncated(message):
        return None
    if finish_reasons(message) & MALFORMED_FINISH_REASONS:
        return RetryReason.MALFORMED
    if not message.tool_calls and not message.invalid_tool_calls and not message.text.strip():
        return RetryReason.BLANK
    return None


def reply_of(response: ModelResponse | AIMessage) -> AIMessage | None:
    """The last AI message of a model call's response."""
    messages = [response] if isinstance(response, AIMessage) else response.result
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None
