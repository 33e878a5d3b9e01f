"""What a running agent turn reports, as plain typed events.

agent.turn.stream_turn yields these; the conversation layer decides what a
person sees of them (chat fragments, the activity log). Nothing here knows
about HTML, sockets or channel groups. What the agent's tools changed in
the workspace is not an event of the turn: the services announce it after
commit (workspace.events), the same way as the person's own edits.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Token:
    """A piece of text the current model call is writing."""

    text: str


@dataclass(frozen=True)
class DraftWithdrawn:
    """The text streamed so far by the current model call is not the answer:
    it was a preamble to tool calls, or an attempt the model-call retry
    discarded (agent.middleware)."""


@dataclass(frozen=True)
class StepsStarted:
    """The model decided to call tools; one plain sentence per call
    (its `action_and_reasoning`), in call order, with the calls' ids."""

    sentences: tuple[str, ...]
    call_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepFinished:
    """A tool call returned: "done", "skipped" (in part: some targets were
    left alone) or "failed" (a failure envelope, or the call was not run)."""

    tool_name: str
    status: str
    call_id: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status != "failed"


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




@dataclass(frozen=True)
class ApprovalAsked:
    """The turn paused before a hard-to-undo tool call (agent.approvals):
    `request` is what the person is asked, `interrupt_id` what the answer
    resumes."""

    interrupt_id: str
    request: dict


AgentEvent = Token | DraftWithdrawn | StepsStarted | StepFinished | Answer | Diagnostic | ApprovalAsked
