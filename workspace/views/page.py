"""The workspace page of one thread: every panel rendered from the same
partials the htmx views and the agent's pushes use."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from conversations.chat import chat_context

from .. import panels
from .common import get_thread_for_user


def page_context(*, thread, user) -> dict:
    """One context for all panels; their keys are disjoint apart from `thread`."""
    return {
        **panels.objective_context(thread=thread),
        **panels.preferences_context(thread=thread),
        **panels.plan_context(thread=thread),
        **panels.centre_context(thread=thread, selected_artifact_id=None),
        **chat_context(thread=thread, user=user),
        "thread": thread,
        "oob": False,
    }


@login_required
@require_GET
def workspace_page(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    return render(request, "workspace/page.html", page_context(thread=thread, user=request.user))


urlpatterns = [
    path("", workspace_page, name="page"),
]
