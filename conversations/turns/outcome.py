"""How a turn ended, in the words the chat shows under its answer.

One rule for the live turn (turns.run), the page (conversations.chat) and a
turn released by another process (turns.slot): the marker's kind and text,
and whether the turn offers Retry."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Turn

INTERRUPTED_RESTART = "Interrupted: the server restarted before the turn finished."
INTERRUPTED_LOST = "Interrupted: the server running this turn stopped answering."
INTERRUPTED_STOP = "Interrupted: the server running this turn had stopped; the turn is released."
NO_ANSWER = "The assistant finished without writing an answer."
AWAITING_APPROVAL = "Waiting for your approval of the change above."
# A copy (an imported archive) of a turn that was waiting for an approval:
# nothing paused came with it, so the question can no longer be answered.
AWAITING_EXPORTED = (
    "Interrupted: this turn was waiting for an approval when its thread was exported; the change it asked about was not made."
)
CUT_OFF = "Cut off: the answer ended before the model finished it."
TOKEN_LIMIT = "Stopped at your token limit (see Usage under your account)."


def model_replaced(was: str | None, now: str) -> str:
    """Said under a turn whose model staff took away while it waited for an
    approval: the rest of it ran on the person's default (docs/adr/0062)."""
    named = f"“{was}”" if was else "The model this turn began with"
    return f"{named} is no longer offered, so this turn went on with “{now}” instead."


# Endings a person may want to run again with the same message.
RETRYABLE = frozenset({Turn.Status.FAILED, Turn.Status.INTERRUPTED})


@dataclass(frozen=True)
class Marker:
    kind: str  # "" (nothing to say), "running", "awaiting", "stopped", "error", "interrupted", "cut-off", "notice"
    text: str
    retry: bool


def marker(*, status: str, cut_off: bool = False, notice: str = "", answered: bool = True) -> Marker:
    """What the chat says under a turn's answer."""
    if status == Turn.Status.RUNNING:
        return Marker("running", "", False)
    if status == Turn.Status.AWAITING:
        return Marker("awaiting", AWAITING_APPROVAL, False)
    if status == Turn.Status.STOPPED:
        # A notice says why when it was not the person's Stop (an ended account's card, docs/adr/0129).
        return Marker("stopped", notice or "Stopped", False)
    if status == Turn.Status.FAILED:
        return Marker("error", notice or "The turn failed.", True)
    if status == Turn.Status.INTERRUPTED:
        return Marker("interrupted", notice or INTERRUPTED_LOST, True)
    if cut_off:
        return Marker("cut-off", notice or CUT_OFF, True)
    if not answered:
        return Marker("notice", notice or NO_ANSWER, True)
    if notice:
        # Finished with something to say about how (the token limit, docs/adr/0064).
        return Marker("notice", notice, False)
    return Marker("", "", False)
