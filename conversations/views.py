"""The person's thread list (open, create, rename, soft-delete), a thread's
activity log, feedback on a turn, and the page of one thread, which composes
every workspace panel with the chat.

Every view that takes a thread id looks it up scoped to the signed-in owner,
so another person's (or a deleted) thread is a 404, never a 403 that would
confirm it exists."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from workspace import panels
from workspace.errors import UserFacingError
from workspace.selectors import get_thread_for_user_or_404, threads_for_user

from . import selectors, services
from .chat import chat_context
from .forms import FeedbackForm
from .turns.guard import running_turn

ROW_TEMPLATE = "conversations/thread_list.html#row"
FEEDBACK_TEMPLATE = "conversations/fragments/feedback.html"


@login_required
@require_GET
def thread_list(request):
    return render(request, "conversations/thread_list.html", {"threads": threads_for_user(user=request.user)})


@login_required
@require_POST
def thread_create(request):
    thread = services.thread_create(owner=request.user)
    return redirect("thread-page", thread_id=thread.pk)


@login_required
@require_POST
def thread_rename(request, thread_id):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    try:
        services.thread_rename(thread=thread, title=request.POST.get("title", ""))
    except UserFacingError as exc:
        thread.refresh_from_db()
        context = {"thread": thread, "error": exc.message, "values": request.POST}
        return render(request, ROW_TEMPLATE, context, status=200 if request.htmx else 400)
    if request.htmx:
        return render(request, ROW_TEMPLATE, {"thread": thread})
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
        "thread": thread,
        "oob": False,
    }


@login_required
@require_GET
def workspace_page(request, thread_id):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    return render(request, "conversations/thread_page.html", page_context(thread=thread, user=request.user))


# --- feedback on a turn -----------------------------------------------------------------
# One region per turn (turn-N-feedback) in the chat: closed, the "Feedback"
# button; open, what the person left on the turn (each entry editable and
# removable) and a form to leave more. Every answer is that region, swapped
# over itself; a plain request (no JavaScript) gets it on a page of its own.


def _completed_turn(thread, turn_index: int) -> int:
    if not 1 <= turn_index <= thread.turn_index:
        raise Http404("No such turn.")
    return turn_index


def _feedback_form(thread, turn_index, *, data=None, initial=None, prefix: str) -> FeedbackForm:
    return FeedbackForm(data, initial=initial, thread=thread, turn_index=turn_index, auto_id=f"{prefix}-%s")


def _feedback_region(request, thread, turn_index, *, form=None, editing=None, edit_form=None,
                     error="", saved="", status=200):
    running = running_turn(thread) == turn_index
    context = {
        "thread": thread,
        "turn_index": turn_index,
        "entries": selectors.feedback_on_turn(thread=thread, user=request.user, turn_index=turn_index),
        "form": form or _feedback_form(thread, turn_index, prefix=f"feedback-{turn_index}"),
        "editing": editing,
        "edit_form": edit_form,
        "error": error,
        "saved": saved,
        "running": running,
    }
    template = f"{FEEDBACK_TEMPLATE}#open" if request.htmx else "conversations/feedback_page.html"
    return render(request, template, context, status=status)


def _feedback_refused(request, thread, turn_index, message, **kwargs):
    # htmx: 200 with the message in the region (house rule); a plain form post a 400.
    return _feedback_region(request, thread, turn_index, error=message, status=200 if request.htmx else 400, **kwargs)


@login_required
@require_http_methods(["GET", "POST"])
def feedback_turn(request, thread_id, turn_index):
    """GET: the turn's feedback region, open (or closed again with ?closed=1).
    POST: leave feedback on the turn."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    turn_index = _completed_turn(thread, turn_index)
    if request.method == "GET":
        if request.GET.get("closed") and request.htmx:
            count = len(selectors.feedback_on_turn(thread=thread, user=request.user, turn_index=turn_index))
            context = {"thread_id": thread.pk, "turn_index": turn_index, "count": count, "focus": True}
            return render(request, f"{FEEDBACK_TEMPLATE}#control", context)
        return _feedback_region(request, thread, turn_index)
    form = _feedback_form(thread, turn_index, data=request.POST, prefix=f"feedback-{turn_index}")
    if not form.is_valid():
        return _feedback_refused(request, thread, turn_index, form.first_error(), form=form)
    try:
        services.feedback_leave(thread=thread, user=request.user, turn_index=turn_index, **form.service_kwargs())
    except UserFacingError as exc:
        return _feedback_refused(request, thread, turn_index, exc.message, form=form)
    if not request.htmx:
        return redirect("conversations:feedback", thread_id=thread.pk, turn_index=turn_index)
    return _feedback_region(request, thread, turn_index, saved="Thank you: your feedback is saved.")


def _own_feedback_or_404(request, thread_id, pk):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id)
    feedback = selectors.feedback_of_user_or_none(thread=thread, user=request.user, pk=pk)
    if feedback is None:
        raise Http404("No such feedback.")
    return thread, feedback


@login_required
@require_http_methods(["GET", "POST"])
def feedback_edit(request, thread_id, pk):
    """GET: the region with this entry's form open. POST: change the entry."""
    thread, feedback = _own_feedback_or_404(request, thread_id, pk)
    turn_index, prefix = feedback.turn_index, f"feedback-edit-{feedback.pk}"
    if request.method == "GET":
        initial = {"scope": feedback.scope, "aspect": feedback.aspect, "rating": feedback.rating,
                   "comment": feedback.comment, "artifact": feedback.artifact_id}
        edit_form = _feedback_form(thread, turn_index, initial=initial, prefix=prefix)
        return _feedback_region(request, thread, turn_index, editing=feedback.pk, edit_form=edit_form)
    edit_form = _feedback_form(thread, turn_index, data=request.POST, prefix=prefix)
    if not edit_form.is_valid():
        return _feedback_refused(request, thread, turn_index, edit_form.first_error(), editing=feedback.pk,
                                 edit_form=edit_form)
    try:
        services.feedback_update(feedback=feedback, **edit_form.service_kwargs())
    except UserFacingError as exc:
        return _feedback_refused(request, thread, turn_index, exc.message, editing=feedback.pk, edit_form=edit_form)
    if not request.htmx:
        return redirect("conversations:feedback", thread_id=thread.pk, turn_index=turn_index)
    return _feedback_region(request, thread, turn_index, saved="Your feedback is changed.")


@login_required
@require_POST
def feedback_delete(request, thread_id, pk):
    thread, feedback = _own_feedback_or_404(request, thread_id, pk)
    turn_index = feedback.turn_index
    services.feedback_remove(feedback=feedback)
    if not request.htmx:
        return redirect("conversations:feedback", thread_id=thread.pk, turn_index=turn_index)
    return _feedback_region(request, thread, turn_index, saved="Your feedback is removed.")
