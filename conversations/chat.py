"""Context for the chat panel (messages of past turns, model choices).

Owned by the agent-turn work; the page view calls `chat_context`."""

from django.conf import settings

from .models import Thread


def chat_context(*, thread: Thread, user) -> dict:
    return {
        "thread": thread,
        "turns": [],
        "models": settings.HAICO_MODELS,
        "default_model": settings.HAICO_MODEL,
    }
