"""Plan: the todo tree. Each view is one service call on a step looked up
inside this thread; the services keep the pre-order tree valid and refuse
moves that would break it (shown in the panel, nothing changed)."""

from django.contrib.auth.decorators import login_required
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from ..errors import WorkspaceError
from ..models import Todo
from ..services import plan as plan_services
from .common import get_in_thread_or_404, get_thread_for_user, panel_response, parse_flag

PANEL = "plan"


def _step_action(request, thread_id, pk, action, *, error_target="row", keep_values=False):
    """Run `action(todo)` on a step of this thread and answer with the plan panel."""
    thread = get_thread_for_user(request, thread_id)
    todo = get_in_thread_or_404(Todo, thread=thread, pk=pk)
    try:
        action(todo)
    except WorkspaceError as exc:
        extra = {"values": request.POST} if keep_values else {}
        return panel_response(request, PANEL, thread=thread, error=exc, error_target=error_target, error_pk=pk, **extra)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_GET
def plan_panel(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def step_add(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    try:
        plan_services.todo_add(thread=thread, text=request.POST.get("text", ""))
    except WorkspaceError as exc:
        return panel_response(request, PANEL, thread=thread, error=exc, error_target="add", values=request.POST)
    return panel_response(request, PANEL, thread=thread)


@login_required
@require_POST
def step_add_child(request, thread_id, pk):
    return _step_action(
        request,
        thread_id,
        pk,
        lambda todo: plan_services.todo_add(thread=todo.thread, text=request.POST.get("text", ""), parent=todo),
        error_target="child",
        keep_values=True,
    )


@login_required
@require_POST
def step_update(request, thread_id, pk):
    return _step_action(
        request,
        thread_id,
        pk,
        lambda todo: plan_services.todo_update_text(todo=todo, text=request.POST.get("text", "")),
        error_target="edit",
        keep_values=True,
    )


@login_required
@require_POST
def step_done(request, thread_id, pk):
    return _step_action(
        request,
        thread_id,
        pk,
        lambda todo: plan_services.todo_set_done(todo=todo, done=parse_flag(request.POST.get("done", "0"), label="the step is done")),
    )


@login_required
@require_POST
def step_delete(request, thread_id, pk):
    return _step_action(request, thread_id, pk, lambda todo: plan_services.todo_delete(todo=todo))


@login_required
@require_POST
def step_indent(request, thread_id, pk):
    return _step_action(request, thread_id, pk, lambda todo: plan_services.todo_indent(todo=todo))


@login_required
@require_POST
def step_outdent(request, thread_id, pk):
    return _step_action(request, thread_id, pk, lambda todo: plan_services.todo_outdent(todo=todo))


@login_required
@require_POST
def step_move(request, thread_id, pk):
    return _step_action(
        request, thread_id, pk, lambda todo: plan_services.todo_move(todo=todo, direction=request.POST.get("direction", ""))
    )


urlpatterns = [
    path("plan/", plan_panel, name="plan"),
    path("plan/add/", step_add, name="plan-add"),
    path("plan/<int:pk>/add/", step_add_child, name="plan-add-child"),
    path("plan/<int:pk>/edit/", step_update, name="plan-update"),
    path("plan/<int:pk>/done/", step_done, name="plan-done"),
    path("plan/<int:pk>/delete/", step_delete, name="plan-delete"),
    path("plan/<int:pk>/indent/", step_indent, name="plan-indent"),
    path("plan/<int:pk>/outdent/", step_outdent, name="plan-outdent"),
    path("plan/<int:pk>/move/", step_move, name="plan-move"),
]
