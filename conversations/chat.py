"""Context for the chat panel: the thread's past turns and the model choices.

The page view calls `chat_context`; a streamed turn (conversations.turns.run)
and a reloaded one share one shape and one template
(conversations/fragments/turn.html).

Past turns come from the LangGraph checkpointer (the agent's own history).
Two database facts complete it: a turn whose message never reached the
checkpointer (it failed before the agent started) still has its snapshot, and
a failed turn's error message is in the activity log.
"""

from django.conf import settings

from agent.history import PastTurn, past_turns
from agent.model import available_models, default_model_name
from workspace.markdown import render_markdown
from workspace.models import Thread
from workspace.selectors import snapshot_messages_for

from .selectors import turn_errors_for
from .turns.guard import running_turn


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


def chat_turns(*, thread: Thread) -> list[PastTurn]:
    turns = {turn.turn_index: turn for turn in past_turns(thread.pk)}
    for turn_index, user_message in snapshot_messages_for(thread=thread):
        if turn_index not in turns:
            turns[turn_index] = PastTurn(turn_index=turn_index, user_message=user_message)
    running = running_turn(thread)
    errors = turn_errors_for(thread=thread)
    for index, turn in turns.items():
        if index == running:
            turn.running = True
            # The page shows the running turn empty; what has streamed so far
            # arrives over the socket (conversations.turns.registry.resync_html).
            turn.answer = ""
        elif not turn.answer and not turn.stopped and index in errors:
            turn.error = errors[index]
    return [turns[index] for index in sorted(turns)]


def chat_context(*, thread: Thread, user) -> dict:
    running = running_turn(thread)
    return {
        "thread": thread,
        "turns": [turn_display(turn) for turn in chat_turns(thread=thread)],
        "running": running is not None,
        "running_turn_index": running,
        "models": available_models(),
        "default_model": default_model_name(),
        "message_max_chars": settings.HAICO_MESSAGE_MAX_CHARS,
    }
