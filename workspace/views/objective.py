"""Objective: the panel, its inline edit and the lazily loaded history."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from .. import selectors
from ..errors import WorkspaceError
from ..services import objective as objective_services
from .common import get_thread_for_user, panel_response


@login_required
@require_GET
def objective_panel(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    return panel_response(request, "objective", thread=thread)


@login_required
@require_POST
def objective_update(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    try:
        objective_services.objective_set(thread=thread, text=request.POST.get("text", ""))
    except WorkspaceError as exc:
        return panel_response(request, "objective", thread=thread, error=exc, editing=True, values=request.POST)
    return panel_response(request, "objective", thread=thread)


@login_required
@require_GET
def objective_history(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    history = selectors.objective_history(thread=thread)
    context = {
        "thread": thread,
        "live": history[-1],
        # Newest first: the person opens the popover to see what it was just before.
        "past": list(reversed(history[:-1])),
        "standing_objective": selectors.STANDING_OBJECTIVE,
    }
    return render(request, "workspace/panels/objective.html#history", context)


urlpatterns = [
    path("objective/", objective_panel, name="objective"),
    path("objective/edit/", objective_update, name="objective-update"),
    path("objective/history/", objective_history, name="objective-history"),
]
