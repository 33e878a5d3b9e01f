"""What every workspace view shares: the owner-scoped lookups and the ways a
view answers.

An htmx request that changed something is answered with the live patches of
the changes it caused (`changed`): the same fragments every other open page
of the thread receives over its socket, so the person's own tab and their
other tabs show the same thing. A refusal (`refused`) answers htmx with a
message patch shown where the person asked, leaving what they typed in
place. Plain form posts (no JavaScript) get the page back on success and the
panel with its message (400) on a refusal."""

from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django_htmx.http import trigger_client_event

from .. import panels
from ..events import Change
from ..models import Thread
from ..selectors import get_thread_for_user_or_404

SAVED_EVENT = "haico:saved"


def get_thread_for_user(request: HttpRequest, thread_id) -> Thread:
    """The signed-in person's live thread, or 404 (also for other people's)."""
    return get_thread_for_user_or_404(user=request.user, thread_id=thread_id)


def get_in_thread_or_404(model: type[Model], *, thread: Thread, pk: int):
    """A workspace row by id, only if it belongs to `thread`."""
    return get_object_or_404(model, thread=thread, pk=pk)


def changed(request: HttpRequest, thread: Thread, changes: list[Change]) -> HttpResponse:
    if not request.htmx:
        return redirect("thread-page", thread_id=thread.pk)
    response = HttpResponse(panels.render_changes(thread, changes))
    # The form that asked closes or clears itself (static/js/live.js).
    return trigger_client_event(response, SAVED_EVENT)


def refused(
    request: HttpRequest,
    panel: str,
    *,
    thread: Thread,
    message: str,
    target: str = "panel",
    row_id=None,
    values=None,
) -> HttpResponse:
    """`target`: "add" (the add form), "edit" / "child" (a row's open form,
    `row_id`), "row" or "panel"."""
    if request.htmx:
        return HttpResponse(panels.render_error(panel=panel, target=target, message=message, row_id=row_id))
    context = panels.panel_context(panel, thread=thread, error=message, values=values or {})
    return render(request, panels.PANEL_TEMPLATES[panel], context, status=400)


def panel_response(request: HttpRequest, name: str, *, thread: Thread, **extra) -> HttpResponse:
    """The whole panel (a GET, or the objective's own form)."""
    return render(request, panels.PANEL_TEMPLATES[name], panels.panel_context(name, thread=thread, **extra))
