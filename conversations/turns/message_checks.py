"""What a turn is asked: the chat message as it will be stored, the
selection it asks about as its row keeps it, and the message of a turn to
run again (docs/adr/0011)."""

from __future__ import annotations

from typing import NamedTuple

from django.conf import settings

from agent.context import Selection
from workspace.errors import InvalidInput
from workspace.models import Thread
from workspace.text import clean_text

from ..models import Turn
from . import outcome


def clean_user_message(message) -> str:
    """The chat message as it will be stored (exactly as typed), or InvalidInput saying why not."""
    return clean_text(message, label="Message", max_chars=settings.HAICO_MESSAGE_MAX_CHARS, strip=False)


SELECTION_UNREADABLE = "The selection could not be read, so the message was sent without it."
SELECTION_DROPPED = "The selected text is no longer in the document as it was selected, so the message was sent without it."
# Why a message went without the selection it was sent with, by the key its
# turn row keeps (Turn.selection_note) and a branch's address carries
# (?note=...): never the text, which may be reworded.
SELECTION_NOTES = {"selection-dropped": SELECTION_DROPPED, "selection-unreadable": SELECTION_UNREADABLE}


def selection_note_key(note: str) -> str:
    """The key of a note of SELECTION_NOTES, "" for none (or a text it does not have)."""
    return next((key for key, text in SELECTION_NOTES.items() if text == note), "")


def selection_json(selection: Selection | None) -> dict | None:
    """A turn's selection as its row stores it (conversations.models.Turn.selection)."""
    if selection is None:
        return None
    return {"start": selection.start, "end": selection.end, "text": selection.text}


def turn_number(turn, *, action: str) -> int:
    if isinstance(turn, str) and turn.isascii() and turn.isdigit():
        turn = int(turn)
    if not isinstance(turn, int) or isinstance(turn, bool):
        raise InvalidInput(f"Choose a turn to {action}.")
    if not 0 <= turn <= 2**31 - 1:  # beyond any column's reach, on every database
        raise InvalidInput("That turn does not exist in this thread.")
    return turn


class Rerun(NamedTuple):
    """What a turn run again takes from it: its message, its model and the
    selection it asked about (as stored; checked again before it is sent)."""

    message: str
    model: str
    selection: dict | None = None


def retry_message(*, thread: Thread, turn) -> Rerun:
    """The message, model and selection of the turn to run again, or
    InvalidInput saying why it cannot be: only the thread's latest turn,
    once it has failed, been interrupted or been cut off
    (conversations.turns.outcome)."""
    turn = turn_number(turn, action="retry")
    row = Turn.objects.filter(thread=thread, index=turn).first()
    if row is None:
        raise InvalidInput("That turn does not exist in this thread.")
    if turn != thread.turn_index:
        raise InvalidInput("Only the latest turn can be retried; send the message again instead.")
    ending = outcome.marker(status=row.status, cut_off=row.cut_off, notice=row.notice, answered=bool(row.answer.strip()))
    if not ending.retry:
        state = {Turn.Status.RUNNING: "is still running.", Turn.Status.AWAITING: "is waiting for your approval."}
        raise InvalidInput("That turn cannot be retried: it " + state.get(row.status, "ended normally."))
    return Rerun(row.user_message, row.model_name, row.selection)
