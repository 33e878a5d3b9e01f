"""What a running agent turn reports, as plain typed events.

agent.turn.stream_turn yields these; the conversation layer decides what a
person sees of them (chat fragments, the activity log). Nothing here knows
about HTML, sockets or channel groups. What the agent's tools changed in
the workspace is not an event of the turn: the services announce it after
commit (workspace.events), the same way as the person's own edits.
"""

from dataclasses import dataclass

from .approval_request import ApprovalRequest
from .steps import StepStatus


@dataclass(frozen=True)
class Token:
    """A piece of text the current model call is writing."""

    text: str


@dataclass(frozen=True)
class ArgumentsStreamed:
    """The current model call wrote this many characters of tool-call
    arguments: paid for like its text, and counted with it should the call
    never report its usage (a Stop, a broken stream)."""

    chars: int


@dataclass(frozen=True)
class DraftWithdrawn:
    """The text streamed so far by the current model call is not the answer:
    it was a preamble to tool calls, or an attempt the model-call retry
    discarded (agent.middleware.stream_gate)."""


@dataclass(frozen=True)
class StepsStarted:
    """The model decided to call tools; one plain sentence per call
    (its `action_and_reasoning`), in call order, with the calls' ids."""

    sentences: tuple[str, ...]
    call_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepFinished:
    """A tool call returned: "done", "skipped" (in part: some targets were
    left alone) or "failed" (a failure envelope, or the call was not run).
    `error`: the failure's (or the skipped part's) own words; `refused`: the
    call was not run at all (arguments that were not JSON, cut off, an
    unknown tool); `overlap`: a document edit was not written because it
    overlapped the person's edits made meanwhile; `arguments`: the call's
    arguments as JSON, for the operator."""

    tool_name: str
    status: StepStatus
    call_id: str = ""
    error: str = ""
    refused: bool = False
    arguments: str = ""
    overlap: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status != StepStatus.FAILED


@dataclass(frozen=True)
class Answer:
    """The turn's final message (a model reply without tool calls).
    `cut_off` says the model did not finish it: it hit the output limit, or
    the stream ended without saying it was done."""

    text: str
    cut_off: bool = False


@dataclass(frozen=True)
class Diagnostic:
    """Something the person may want to know about the model's behaviour
    (a reply cut off at the output limit, repeated blank replies). With
    `no_answer`, it is also why the turn ends without an answer, said in
    the turn's bubble."""

    level: str  # "info" | "warning" | "error"
    message: str
    no_answer: bool = False
    kind: str = "other"  # as conversations.models.ActivityLogEntry.Kind
    detail: str = ""  # for the operator (settings, finish reasons)


@dataclass(frozen=True)
class ModelCallRetried:
    """One model call took more than one attempt. `reasons` has one word per
    attempt that was tried again, in order: "busy" (HTTP 429), "server_error"
    (5xx), "no_answer" (timed out, or the connection failed), "status" (another
    status the SDK retries), "blank", "malformed", "cut_off" (asked again for
    less: agent.middleware.retry). `succeeded`: a later attempt worked; a call that
    gave up carries this on its exception instead (MODEL_RETRIES_ATTR), since
    the turn ends with it. `detail`: every attempt's outcome, for the operator."""

    reasons: tuple[str, ...]
    detail: str = ""
    succeeded: bool = True


@dataclass(frozen=True)
class CapReached:
    """The turn hit one of its caps (e.g. the model calls per turn)."""

    cap: str
    limit: int
    detail: str = ""
    mode: str = ""  # the mode whose cap it was (agent.modes), if any
    message: str = ""  # what the person is told, when the cap has its own words (the token limit)


@dataclass(frozen=True)
class ModelCallStarted:
    """A model call is being sent (agent.usage), with its request's size
    estimated: what the call is counted as when it never reports its usage
    because the turn was stopped or its stream broke (docs/adr/0063)."""

    input_tokens_estimate: int
    model: str = ""


@dataclass(frozen=True)
class ModelCallUsage:
    """The tokens one model call used (agent.usage): as the provider reported
    them, or estimated from the text when it reported none."""

    input_tokens: int
    output_tokens: int
    estimated: bool = False
    model: str = ""  # the chat model's own name for itself


# The ModelCallRetried of a model call that gave up, set on the exception it raised.
MODEL_RETRIES_ATTR = "haico_model_retries"


@dataclass(frozen=True)
class ApprovalAsked:
    """The turn paused before a hard-to-undo tool call (agent.approvals):
    `request` is what the person is asked, `interrupt_id` what the answer
    resumes."""

    interrupt_id: str
    request: ApprovalRequest


AgentEvent = (
    Token
    | ArgumentsStreamed
    | DraftWithdrawn
    | StepsStarted
    | StepFinished
    | Answer
    | Diagnostic
    | ModelCallRetried
    | ModelCallStarted
    | ModelCallUsage
    | CapReached
    | ApprovalAsked
)
