"""Preferences: add, edit, delete, lock/unlock. The person's path never
respects locks (`respect_lock=False`): locks only bind the agent."""

from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from ..errors import WorkspaceError
from ..models import Preference
from ..services import preferences as preferences_services
from .common import get_in_thread_or_404, get_thread_for_user, panel_response, parse_flag

PANEL = "preferences"


@login_required
@require_GET
def preferences_panel(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def preference_add(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    try:
        preferences_services.preference_add(
            thread=thread,
            title=request.POST.get("title", ""),
            subtitle=request.POST.get("subtitle", ""),
            kind=request.POST.get("kind", "soft"),
            respect_lock=False,
        )
    except WorkspaceError as exc:
        return panel_response(request, PANEL, thread=thread, error=exc, error_target="add", values=request.POST)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def preference_update(request, thread_id, pk):
    thread = get_thread_for_user(request, thread_id)
    preference = get_in_thread_or_404(Preference, thread=thread, pk=pk)
    try:
        preferences_services.preference_update(
            preference=preference,
            title=request.POST.get("title"),
            subtitle=request.POST.get("subtitle"),
            kind=request.POST.get("kind"),
            respect_lock=False,
        )
    except WorkspaceError as exc:
        return panel_response(
            request, PANEL, thread=thread, error=exc, error_target="edit", error_pk=pk, values=request.POST
        )
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def preference_delete(request, thread_id, pk):
    thread = get_thread_for_user(request, thread_id)
    preference = get_in_thread_or_404(Preference, thread=thread, pk=pk)
    try:
        preferences_services.preference_delete(preference=preference, respect_lock=False)
    except WorkspaceError as exc:
        return panel_response(request, PANEL, thread=thread, error=exc, error_target="row", error_pk=pk)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def preference_lock(request, thread_id, pk):
    thread = get_thread_for_user(request, thread_id)
    preference = get_in_thread_or_404(Preference, thread=thread, pk=pk)
    try:
        locked = parse_flag(request.POST.get("locked"), label="to lock the preference")
        preferences_services.preference_set_locked(preference=preference, locked=locked, respect_lock=False)
    except WorkspaceError as exc:
        return panel_response(request, PANEL, thread=thread, error=exc, error_target="row", error_pk=pk)
    return panel_response(request, PANEL, thread=thread)


urlpatterns = [
    path("preferences/", preferences_panel, name="preferences"),
    path("preferences/add/", preference_add, name="preference-add"),
    path("preferences/<int:pk>/edit/", preference_update, name="preference-update"),
    path("preferences/<int:pk>/delete/", preference_delete, name="preference-delete"),
    path("preferences/<int:pk>/lock/", preference_lock, name="preference-lock"),
]
