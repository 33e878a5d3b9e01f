"""Objective: the panel, its inline edit and the lazily loaded history.

The edit answers with the whole objective panel (the person's own form
closes); other open pages get only its read view (panels.render_changes).
The form carries the objective it was filled with (`was`); one someone set
since is kept and the form comes back with the person's text
(docs/adr/0125)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from .. import selectors
from ..errors import ChangedMeanwhile, WorkspaceError
from ..forms import ObjectiveForm, first_error
from ..selectors import Access
from ..services import objective as objective_services
from .common import get_thread_for_user, panel_response


@login_required
@require_GET
def objective_panel(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    return panel_response(request, "objective", thread=thread)


@login_required
@require_POST
def objective_update(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.EDIT)
    form = ObjectiveForm(request.POST)
    error = None if form.is_valid() else first_error(form)
    values = request.POST.copy()
    if error is None:
        was = form.cleaned_data["was"]
        try:
            objective_services.objective_set(
                thread=thread,
                text=form.cleaned_data["text"],
                author=objective_services.Author.PERSON,
                person=request.user,
                # What the person's form was filled with: one written since stays (docs/adr/0125).
                known=None if was is None else {was},
            )
        except ChangedMeanwhile as exc:
            error = exc.message
            values.update(exc.base)  # the form's base is now the objective as it is
        except WorkspaceError as exc:
            error = exc.message
    if error is None and not request.htmx:
        return redirect("thread-page", thread_id=thread.pk)
    if error is None:
        return panel_response(request, "objective", thread=thread)
    response = panel_response(request, "objective", thread=thread, error=error, editing=True, values=values)
    if not request.htmx:
        response.status_code = 400
    return response


@login_required
@require_GET
def objective_history(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    history = selectors.objective_history(thread=thread)
    context = {
        "thread": thread,
        # Newest first: the person opens the popover to see what it was just before.
        "live": history[0],
        "past": history[1:],
        "history": history,
    }
    return render(request, "workspace/panels/objective.html#history", context)


urlpatterns = [
    path("objective/", objective_panel, name="objective"),
    path("objective/edit/", objective_update, name="objective-update"),
    path("objective/history/", objective_history, name="objective-history"),
]
