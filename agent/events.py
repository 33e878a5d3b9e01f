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
    (its `action_and_reasoning`), in call order."""

    sentences: tuple[str, ...]


@dataclass(frozen=True)
class StepFinished:
    """A tool call returned; `succeeded` is False for a failure envelope."""

    tool_name: str
    succeeded: bool


@dataclass(frozen=True)
class Answer:
    """The turn's final message (a model reply without tool calls)."""

    text: str


@dataclass(frozen=True)
class Diagnostic:
    """Something the person may want to know about the model's behaviour
    (a reply cut off at the output limit, repeated blank replies)."""

    level: str  # "info" | "warning" | "error"
    message: str


AgentEvent = Token | DraftWithdrawn | StepsStarted | StepFinished | Answer | Diagnostic
