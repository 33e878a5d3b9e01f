"""Context for the chat panel: the thread's past turns and the model choices.

The page view calls `chat_context`; the turn runner renders live turns with
`turn_display` so a streamed turn and a reloaded one share one shape and one
template (conversations/fragments/turn.html).

Past turns come from the LangGraph checkpointer (the agent's own history).
Two database facts complete it: a turn whose message never reached the
checkpointer (it failed before the agent started) still has its snapshot, and
a failed turn's error message is in the activity log.
"""

from django.conf import settings
from django.utils import timezone

from agent.history import PastTurn, past_turns
from workspace.markdown import render_markdown
from workspace.selectors import snapshots_for

from .models import ActivityLogEntry, Thread
from .services import STALE_TURN_AFTER


def turn_display(turn: PastTurn) -> dict:
    return {
        "turn_index": turn.turn_index,
        "user_message": turn.user_message,
        "steps": list(turn.steps),
        "answer_html": render_markdown(turn.answer) if turn.answer else "",
        "stopped": turn.stopped,
        "error": turn.error,
        "running": turn.running,
    }


def running_turn_index(thread: Thread) -> int | None:
    """The turn in progress, unless its claim is stale (its server died)."""
    if thread.running_turn_index is None:
        return None
    if thread.running_since and timezone.now() - thread.running_since >= STALE_TURN_AFTER:
        return None
    return thread.running_turn_index


def _turn_errors(thread: Thread) -> dict[int, str]:
    errors: dict[int, str] = {}
    entries = ActivityLogEntry.objects.filter(
        thread=thread, level=ActivityLogEntry.Level.ERROR, turn_index__isnull=False
    ).order_by("created_at")
    for turn_index, message in entries.values_list("turn_index", "message"):
        errors[turn_index] = message  # the latest error of a turn wins
    return errors


def chat_turns(*, thread: Thread) -> list[PastTurn]:
    turns = {turn.turn_index: turn for turn in past_turns(thread.pk)}
    for snapshot in snapshots_for(thread=thread):
        if snapshot.turn_index not in turns:
            turns[snapshot.turn_index] = PastTurn(turn_index=snapshot.turn_index, user_message=snapshot.user_message)
    running = running_turn_index(thread)
    errors = _turn_errors(thread)
    for index, turn in turns.items():
        if index == running:
            turn.running = True
            # What streamed before the reload is replaced by the final answer
            # when the turn completes; until then the bubble starts empty.
            turn.answer = ""
        elif not turn.answer and not turn.stopped and index in errors:
            turn.error = errors[index]
    return [turns[index] for index in sorted(turns)]


def chat_context(*, thread: Thread, user) -> dict:
    from agent.model import available_models, default_model_name

    running = running_turn_index(thread)
    return {
        "thread": thread,
        "turns": [turn_display(turn) for turn in chat_turns(thread=thread)],
        "running": running is not None,
        "running_turn_index": running,
        "models": available_models(),
        "default_model": default_model_name(),
        "message_max_chars": settings.HAICO_MESSAGE_MAX_CHARS,
    }
