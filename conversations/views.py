"""The person's thread list (open, create, rename, soft-delete), a thread's
activity log, and the page of one thread, which composes every workspace
panel with the chat.

Every view that takes a thread id looks it up scoped to the signed-in owner,
so another person's (or a deleted) thread is a 404, never a 403 that would
confirm it exists."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from workspace import panels
from workspace.errors import UserFacingError
from workspace.selectors import get_thread_for_user_or_404
from workspace.views.common import flash

from . import selectors, services, trajectory
from .branching import rerun_in_branch
from .chat import chat_context, chat_turns
from .forms import EditTurnForm

ROW_TEMPLATE = "conversations/thread_list.html#row"


@login_required
@require_GET
def thread_list(request):
    return render(request, "conversations/thread_list.html", {"threads": selectors.thread_list_for(user=request.user)})


@login_required
@require_POST
def thread_create(request):
    thread = services.thread_create(owner=request.user)
    return redirect("thread-page", thread_id=thread.pk)


def _listed(request, thread):
    """The thread as its row in the list shows it (branch point, depth)."""
    return next((t for t in selectors.thread_list_for(user=request.user) if t.pk == thread.pk), thread)


@login_required
@require_POST
def thread_rename(request, thread_id):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    try:
        services.thread_rename(thread=thread, title=request.POST.get("title", ""))
    except UserFacingError as exc:
        thread = _listed(request, thread)
        context = {"thread": thread, "error": exc.message, "values": request.POST}
        return render(request, ROW_TEMPLATE, context, status=200 if request.htmx else 400)
    if request.htmx:
        return render(request, ROW_TEMPLATE, {"thread": _listed(request, thread)})
    return redirect("conversations:list")


@login_required
@require_POST
def thread_delete(request, thread_id):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    services.thread_soft_delete(thread=thread)
    if request.htmx:
        # An empty body swapped over the row removes it from the list.
        return HttpResponse("")
    return redirect("conversations:list")


@login_required
@require_GET
def thread_activity(request, thread_id):
    """The thread's activity log: model warnings (e.g. a reply cut off at the
    output limit) and turn errors, newest first."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    entries = selectors.activity_for(thread=thread)
    return render(request, "conversations/panels/activity.html#entries", {"thread": thread, "entries": entries})


def page_context(*, thread, user) -> dict:
    """One context for all panels; their keys are disjoint apart from `thread`."""
    return {
        **panels.objective_context(thread=thread),
        **panels.preferences_context(thread=thread),
        **panels.plan_context(thread=thread),
        **panels.centre_context(thread=thread, selected_artifact_id=None),
        **chat_context(thread=thread, user=user),
        **trajectory.map_context(trajectory.family_graph(thread=thread)),
        "thread": thread,
        "oob": False,
    }


@login_required
@require_GET
def workspace_page(request, thread_id):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    return render(request, "conversations/thread_page.html", page_context(thread=thread, user=request.user))


@login_required
@require_GET
def trajectory_turn(request, thread_id, turn_index):
    """The read-only preview of the workspace after one turn of the map
    (the node's own thread), with "Continue from here" (docs/adr/0016)."""
    source = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    workspace = trajectory.preview_context(thread=source, turn_index=turn_index)
    if workspace is None or not trajectory.is_own_turn(thread=source, turn_index=turn_index):
        raise Http404("No such turn.")
    chat = [turn for turn in chat_turns(thread=source) if turn["turn_index"] <= turn_index]
    context = {
        **workspace,
        "thread": source,
        "source": source,
        "turn_index": turn_index,
        "chat": chat,
    }
    return render(request, "conversations/panels/trajectory.html#preview", context)


# -- Regenerate and Edit: turn N run again in a branch at N-1 (docs/adr/0014) --


def _refused(request, message: str) -> HttpResponse:
    if request.htmx:
        return flash(message)
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _thread_with_turn_or_404(request, thread_id, turn_index: int):
    """A turn the thread does not have is missing like a row that is not there."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    if not 1 <= turn_index <= thread.turn_index:
        raise Http404("No such turn.")
    return thread


def _rerun(request, thread_id, turn_index: int, *, message: str | None) -> HttpResponse:
    thread = _thread_with_turn_or_404(request, thread_id, turn_index)
    try:
        branch = rerun_in_branch(source=thread, turn_index=turn_index, user=request.user, message=message)
    except UserFacingError as exc:
        return _refused(request, exc.message)
    url = reverse("thread-page", kwargs={"thread_id": branch.pk}) + f"#turn-{turn_index}"
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@login_required
@require_POST
def turn_regenerate(request, thread_id, turn_index: int):
    """A new reply to turn N's message, in a new branch; the page moves there."""
    return _rerun(request, thread_id, turn_index, message=None)


@login_required
@require_POST
def turn_edit(request, thread_id, turn_index: int):
    """Turn N with a changed message, in a new branch; the page moves there."""
    _thread_with_turn_or_404(request, thread_id, turn_index)
    form = EditTurnForm(request.POST)
    if not form.is_valid():
        return _refused(request, " ".join(error for errors in form.errors.values() for error in errors))
    return _rerun(request, thread_id, turn_index, message=form.cleaned_data["message"])
