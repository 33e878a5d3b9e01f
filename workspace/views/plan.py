"""Plan: the todo tree. Each view validates its form, makes one service call
on a step looked up inside this thread, and answers with the patch of what
changed; the services keep the pre-order tree valid and refuse moves that
would break it (nothing changed, the message shown where the person asked).
Every change is recorded as the signed-in person's (docs/adr/0090); the
plan's history is read a page at a time, by anyone who may see the thread."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from .. import selectors
from ..errors import NotFound
from ..forms import (
    PlanHistoryForm,
    StepAtForm,
    StepDoneForm,
    StepEditForm,
    StepMoveForm,
    StepPlaceForm,
    StepTextForm,
    first_error,
)
from ..models import Todo
from ..selectors import Access
from ..services import plan as plan_services
from .common import act_on_row, add_to_panel, get_thread_for_user, in_thread_or_none, panel_response

PANEL = "plan"
STEP_GONE = "That step no longer exists (it may have been deleted in another tab); the plan now shows what is left."
HISTORY = "workspace/panels/plan.html"


def _by(request) -> dict:
    """Who the plan's history records for this request's change."""
    return {"author": plan_services.Author.PERSON, "person": request.user}


@login_required
@require_GET
def plan_panel(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def step_add(request, thread_id):
    def add(thread, data):
        plan_services.todo_add(thread=thread, text=data["text"], **_by(request))

    return add_to_panel(request, thread_id, add, panel=PANEL, form_class=StepTextForm)


def _on_step(request, thread_id, pk, action, **options):
    """Run `action(todo, cleaned_data)` on a step of this thread (see `act_on_row`)."""
    return act_on_row(request, thread_id, pk, action, model=Todo, panel=PANEL, gone_message=STEP_GONE, **options)


@login_required
@require_POST
def step_add_child(request, thread_id, pk):
    def add(todo, data):
        plan_services.todo_add(thread=todo.thread, text=data["text"], parent=todo, **_by(request))

    return _on_step(request, thread_id, pk, add, form_class=StepTextForm, target="child")


@login_required
@require_POST
def step_update(request, thread_id, pk):
    return _on_step(
        request,
        thread_id,
        pk,
        lambda todo, data: plan_services.todo_update_text(todo=todo, text=data["text"], was=data["was"], **_by(request)),
        form_class=StepEditForm,
        target="edit",
    )


@login_required
@require_POST
def step_done(request, thread_id, pk):
    return _on_step(
        request,
        thread_id,
        pk,
        lambda todo, data: plan_services.todo_set_done(todo=todo, done=data["done"], **_by(request)),
        form_class=StepDoneForm,
    )


@login_required
@require_POST
def step_delete(request, thread_id, pk):
    return _on_step(request, thread_id, pk, lambda todo, data: plan_services.todo_delete(todo=todo, **_by(request)))


@login_required
@require_POST
def step_indent(request, thread_id, pk):
    return _on_step(
        request,
        thread_id,
        pk,
        lambda todo, data: plan_services.todo_indent(todo=todo, shown_number=data["number"], **_by(request)),
        form_class=StepAtForm,
    )


@login_required
@require_POST
def step_outdent(request, thread_id, pk):
    return _on_step(
        request,
        thread_id,
        pk,
        lambda todo, data: plan_services.todo_outdent(todo=todo, shown_number=data["number"], **_by(request)),
        form_class=StepAtForm,
    )


@login_required
@require_POST
def step_move(request, thread_id, pk):
    return _on_step(
        request,
        thread_id,
        pk,
        lambda todo, data: plan_services.todo_move(
            todo=todo, direction=data["direction"], shown_number=data["number"], **_by(request)
        ),
        form_class=StepMoveForm,
    )


@login_required
@require_POST
def step_place(request, thread_id, pk):
    """A drag in the tree: the step goes before another step of its level
    (the service refuses a drop that would change its level). With what the
    page showed (`number`, `before_number`), a drop on a plan someone changed
    since moves nothing and the page is shown the plan as it is now
    (docs/adr/0125)."""

    def place(todo, data):
        shown = data["number"] is not None
        before = None
        if data["before"] is not None:
            before = in_thread_or_none(Todo, thread=todo.thread, pk=data["before"])
            if before is None and shown:
                # The page still showed it: answered with the plan as it is now, like any stale drop.
                raise plan_services.drop_target_gone(todo)
            if before is None:
                raise NotFound(STEP_GONE)
        plan_services.todo_place(
            todo=todo, before=before, shown_number=data["number"], shown_before=data["before_number"], **_by(request)
        )

    return _on_step(request, thread_id, pk, place, form_class=StepPlaceForm)


@login_required
@require_GET
def plan_history(request, thread_id):
    """The plan's history, newest first: the popover's content; with
    `before` the page of older changes that takes the place of its
    "Show older changes" row; with `after` the entries newer than the newest
    an open history shows, for static/js/live.js to put at its top when a
    push says there are some (docs/adr/0092)."""
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    form = PlanHistoryForm(request.GET)
    if not form.is_valid():
        return HttpResponse(first_error(form), status=400, content_type="text/plain; charset=utf-8")
    before, after = form.cleaned_data["before"], form.cleaned_data["after"]
    context = {"thread": thread, "page": selectors.plan_history(thread=thread, before=before, after=after)}
    whole = before is None and after is None
    return render(request, f"{HISTORY}#{'history' if whole else 'entries'}", context)


urlpatterns = [
    path("plan/", plan_panel, name="plan"),
    path("plan/history/", plan_history, name="plan-history"),
    path("plan/add/", step_add, name="plan-add"),
    path("plan/<row:pk>/add/", step_add_child, name="plan-add-child"),
    path("plan/<row:pk>/edit/", step_update, name="plan-update"),
    path("plan/<row:pk>/done/", step_done, name="plan-done"),
    path("plan/<row:pk>/delete/", step_delete, name="plan-delete"),
    path("plan/<row:pk>/indent/", step_indent, name="plan-indent"),
    path("plan/<row:pk>/outdent/", step_outdent, name="plan-outdent"),
    path("plan/<row:pk>/move/", step_move, name="plan-move"),
    path("plan/<row:pk>/place/", step_place, name="plan-place"),
]
