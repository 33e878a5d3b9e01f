"""What every workspace view shares: the access-scoped lookups and the ways a
view answers.

An htmx request that changed something is answered with the live patches of
the changes it caused (`changed`): the same fragments every other open page
of the thread receives over its socket, so the person's own tab and their
other tabs show the same thing. A refusal (`refused`) answers htmx with a
message patch shown where the person asked, leaving what they typed in
place. Plain form posts (no JavaScript) get the page back on success and the
panel with its message (400) on a refusal.

A row someone changed since the person's page showed it (`changed_meanwhile`,
docs/adr/0125) is answered like a refusal too: nothing was written, the
message says what the row holds now, htmx gets the rows as stored and the
open form's new base, a plain post its form back with what was typed.

A row another tab deleted (`gone`) is answered like a refusal, with the
panel's rows refreshed so the page drops it; what has no place in a panel
(`flash`) goes to the page's flash line. Never an error status for htmx: with
DEBUG on, django-htmx replaces the whole page with the error page."""

from collections.abc import Callable

from django.db.models import Model
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django_htmx.http import reswap, trigger_client_event
from django_htmx.middleware import HtmxDetails

from .. import events, panels
from ..errors import ChangedMeanwhile, WorkspaceError
from ..events import Change
from ..forms import first_error
from ..models import Thread
from ..selectors import Access, get_thread_for_user_or_404

SAVED_EVENT = "haico:saved"
FLASH_EVENT = "haico:flash"


class HtmxHttpRequest(HttpRequest):
    """A request through django_htmx's middleware, which sets `htmx`."""

    htmx: HtmxDetails


# Panels whose rows another tab may delete, and how to bring their rows up to date.
REFRESH_ROWS = {"plan": panels.render_plan_patch, "preferences": panels.render_preferences_patch}


def get_thread_for_user(request: HttpRequest, thread_id, level: Access) -> Thread:
    """The live thread if the signed-in person has `level` on it, else 404
    (a stranger's request and a viewer's write alike: docs/adr/0084)."""
    return get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=level)


def in_thread_or_none(model: type[Model], *, thread: Thread, pk: int):
    """A workspace row by id if it belongs to `thread`; None when it is not (or no longer) there."""
    return model.objects.filter(thread=thread, pk=pk).first()  # type: ignore[attr-defined]  # every workspace row model has it


def gone(request: HtmxHttpRequest, panel: str, *, thread: Thread, message: str) -> HttpResponse:
    """The row asked for is not in the thread (another tab deleted it): htmx
    gets the message in the panel and every row as stored (a complete patch,
    so the page drops the stale one); a plain request a 404."""
    if not request.htmx:
        raise Http404(message)
    error = panels.render_error(panel=panel, target="panel", message=message)
    return HttpResponse(error + REFRESH_ROWS[panel](thread=thread))


def changed_meanwhile(
    request: HtmxHttpRequest, panel: str, *, thread: Thread, error: ChangedMeanwhile, target: str, row_id
) -> HttpResponse:
    """The person's page showed the row before someone else changed it:
    nothing was written. htmx gets the message at `target` with the base the
    open form takes on (`error.base`), and the row as stored (no base: every
    row, a step moved: the plan as it is now); a plain post the panel with
    the message and, when there is a base, the form back with what was typed
    and that base (400), so saving again replaces the change deliberately."""
    if request.htmx:
        message = panels.render_error(panel=panel, target=target, message=error.message, row_id=row_id, base=error.base)
        return HttpResponse(message + REFRESH_ROWS[panel](thread=thread, ids=[row_id] if error.base else None))
    retry = {"url": request.path, "values": request.POST, "base": error.base} if error.base else None
    context = panels.panel_context(panel, thread=thread, error=error.message, retry=retry)
    return render(request, panels.PANEL_TEMPLATES[panel], context, status=400)


def flash(message: str) -> HttpResponse:
    """200 that leaves the page as it is and shows `message` in its flash line (static/js/workspace.js)."""
    return trigger_client_event(reswap(HttpResponse(""), "none"), FLASH_EVENT, {"message": message})


def changed(request: HtmxHttpRequest, thread: Thread, changes: list[Change]) -> HttpResponse:
    if not request.htmx:
        return redirect("thread-page", thread_id=thread.pk)
    response = HttpResponse(panels.render_changes(thread, changes))
    # The form that asked closes or clears itself (static/js/live.js).
    return trigger_client_event(response, SAVED_EVENT)


def refused(
    request: HtmxHttpRequest,
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


def act_on_row(
    request: HtmxHttpRequest,
    thread_id,
    pk: int,
    action: Callable[[Model, dict], None],
    *,
    model: type[Model],
    panel: str,
    gone_message: str,
    form_class: type[Form] | None = None,
    target: str = "row",
) -> HttpResponse:
    """A row action of a panel (a plan step, a preference): look the row up in
    this thread (`gone` when another tab deleted it), validate `form_class`,
    then run `action(row, cleaned_data)` and answer with what it changed; a
    refusal is shown at `target` on the row."""
    thread = get_thread_for_user(request, thread_id, Access.EDIT)  # every row action writes
    row = in_thread_or_none(model, thread=thread, pk=pk)
    if row is None:
        return gone(request, panel, thread=thread, message=gone_message)
    data = {}
    if form_class is not None:
        form = form_class(request.POST)
        if not form.is_valid():
            return refused(request, panel, thread=thread, message=first_error(form), target=target, row_id=pk)
        data = form.cleaned_data
    with events.collecting() as changes:
        try:
            action(row, data)
        except ChangedMeanwhile as exc:
            return changed_meanwhile(request, panel, thread=thread, error=exc, target=target, row_id=pk)
        except WorkspaceError as exc:
            return refused(request, panel, thread=thread, message=exc.message, target=target, row_id=pk)
    return changed(request, thread, changes)


def add_to_panel(
    request: HtmxHttpRequest, thread_id, write: Callable[[Thread, dict], None], *, panel: str, form_class: type[Form]
) -> HttpResponse:
    """A new row of a panel (a plan step, a preference): validate
    `form_class`, then run `write(thread, cleaned_data)` and answer with what
    it changed; a refusal is shown at the panel's add form, with what was
    typed there kept."""
    thread = get_thread_for_user(request, thread_id, Access.EDIT)
    form = form_class(request.POST)
    if not form.is_valid():
        return refused(request, panel, thread=thread, message=first_error(form), target="add", values=request.POST)
    with events.collecting() as changes:
        try:
            write(thread, form.cleaned_data)
        except WorkspaceError as exc:
            return refused(request, panel, thread=thread, message=exc.message, target="add", values=request.POST)
    return changed(request, thread, changes)


def panel_response(request: HttpRequest, name: str, *, thread: Thread, **extra) -> HttpResponse:
    """The whole panel (a GET, or the objective's own form)."""
    return render(request, panels.PANEL_TEMPLATES[name], panels.panel_context(name, thread=thread, **extra))
