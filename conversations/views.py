"""The person's thread list (open, create, rename, soft-delete), a thread's
activity log, feedback on a turn, and the page of one thread, which composes
every workspace panel with the chat.

Every view that takes a thread id looks it up with the level of access it
needs (docs/adr/0084): reads need to view, writes to edit, renaming and
deleting to own. Whoever lacks that level (a stranger, a viewer writing) gets
a 404, never a 403 that would confirm the thread exists."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from workspace import panels
from workspace.errors import UserFacingError
from workspace.forms import first_error
from workspace.selectors import Access, get_thread_for_user_or_404, thread_and_access_for_user
from workspace.views.common import flash

from . import live, presence, selectors, services, staff_view, trajectory
from .branching import rerun_in_branch
from .chat import ChatHistory, chat_context, chat_turns, shown_turns, turn_state
from .forms import (
    PAGE_NOTES,
    ChooseModelForm,
    EditTurnForm,
    FeedbackForm,
    LayoutForm,
    ModeForm,
    ThreadSearchForm,
    page_note_query,
)
from .turns import fragments
from .turns.slot import running_turn

ROW_TEMPLATE = "conversations/thread_list.html#row"
FEEDBACK_TEMPLATE = "conversations/fragments/feedback.html"
TITLE_TEMPLATE = "conversations/fragments/turn.html#thread_title"
SWITCHER_TEMPLATE = "conversations/panels/switcher.html#results"


@login_required
@require_GET
def thread_list(request):
    page = selectors.thread_list_page(user=request.user, shown=_shown_threads(request))
    return render(request, "conversations/thread_list.html", {"page": page})


def _shown_threads(request) -> int:
    """`?shown=N`, how many families the list shows (the "Show older
    threads" link's); anything else, or fewer than a page, shows a page."""
    value = request.GET.get("shown", "")
    if value.isascii() and value.isdigit() and len(value) <= 6 and int(value) >= selectors.THREADS_PER_PAGE:
        return int(value)
    return selectors.THREADS_PER_PAGE


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
    if request.htmx and request.htmx.target == "thread-title":
        return _renamed_from_top_bar(request, thread_id)
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.OWN)
    try:
        services.thread_rename(thread=thread, title=request.POST.get("title", ""))
    except UserFacingError as exc:
        thread = _listed(request, thread)
        context = {"thread": thread, "error": exc.message, "values": request.POST}
        return render(request, ROW_TEMPLATE, context, status=200 if request.htmx else 400)
    if request.htmx:
        return render(request, ROW_TEMPLATE, {"thread": _listed(request, thread)})
    return redirect("conversations:list")


def _renamed_from_top_bar(request, thread_id):
    """Rename from the workspace page's top bar: the answer is the new title
    (the same fragment every open tab of the thread gets pushed), a refusal
    goes to the page's flash line."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.OWN)
    try:
        services.thread_rename(thread=thread, title=request.POST.get("title", ""))
    except UserFacingError as exc:
        return flash(exc.message)
    return render(request, TITLE_TEMPLATE, {"title": thread.title})


@login_required
@require_POST
def thread_choose_model(request, thread_id):
    """The chat's model selector changed: remembered for this thread, so the
    page offers it again after a reload. htmx gets the (empty, or refusal)
    status line under the selector."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.EDIT)
    form = ChooseModelForm(request.POST)
    message = first_error(form) if not form.is_valid() else ""
    if not message:
        try:
            services.thread_choose_model(thread=thread, model=form.cleaned_data["model"], user=request.user)
        except UserFacingError as exc:
            message = exc.message
    if request.htmx:
        return HttpResponse(message)
    if message:
        return HttpResponse(message, status=400, content_type="text/plain")
    return redirect("thread-page", thread_id=thread.pk)


@login_required
@require_POST
def thread_delete(request, thread_id):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.OWN)
    services.thread_soft_delete(thread=thread)
    if request.htmx:
        # An empty body swapped over the row removes it from the list.
        return HttpResponse("")
    return redirect("conversations:list")


@login_required
@require_POST
def thread_mode(request, thread_id):
    """The Mode selector's choice: stored on the thread for its next turns;
    the tabs' selectors are updated by the service's announcement (this
    tab's shows it already, so htmx gets the same value patch)."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.EDIT)
    form = ModeForm(request.POST)
    if not form.is_valid():
        return _refused(request, form.errors["mode"][0])
    services.thread_set_mode(thread=thread, mode=form.cleaned_data["mode"])
    if request.htmx:
        return HttpResponse(live.render_mode_patch(thread))
    return redirect("thread-page", thread_id=thread.pk)


@login_required
@require_GET
def thread_activity(request, thread_id):
    """The thread's activity log: model warnings (e.g. a reply cut off at the
    output limit) and turn errors, newest first."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.VIEW)
    entries = selectors.activity_for(thread=thread)
    return render(request, "conversations/panels/activity.html#entries", {"thread": thread, "entries": entries})


@login_required
@require_GET
def thread_switcher(request):
    """The top bar's thread switcher: the person's own threads whose title
    contains what they typed (never anyone else's)."""
    form = ThreadSearchForm(request.GET)
    query = form.cleaned_data["q"].strip() if form.is_valid() else ""
    threads = selectors.threads_matching(user=request.user, query=query)
    return render(request, SWITCHER_TEMPLATE, {"threads": threads, "query": query, "current": request.GET.get("current", "")})


@login_required
@require_POST
def layout_save(request):
    """A side rail collapsed or opened on the workspace page, remembered for
    the person on every device (docs/adr/0022)."""
    form = LayoutForm(request.POST)
    if not form.is_valid():
        message = next(iter(form.errors.values()))[0]
        return flash(message) if request.htmx else HttpResponse(message, status=400)
    services.layout_set_rail(user=request.user, rail=form.cleaned_data["rail"], collapsed=form.cleaned_data["collapsed"])
    return HttpResponse("") if request.htmx else redirect("conversations:list")


ROLE_LABELS = {Access.VIEW: "Viewer", Access.EDIT: "Editor"}


def page_context(*, thread, user, access: Access) -> dict:
    """One context for all panels; their keys are disjoint apart from `thread`.
    `access`: the person's, which decides the controls the page offers (docs/adr/0084)."""
    history = ChatHistory(thread=thread, user=user)
    # The map, and where a branch came from; a thread with no family's from the rows the chat read.
    graph = trajectory.family_graph(thread=thread, lone=history.lone_rows())
    return {
        "can_edit": access >= Access.EDIT,
        "can_share": access is Access.OWN,
        "shared_role": ROLE_LABELS.get(access, ""),
        "layout": selectors.layout_for(user=user),
        **panels.objective_context(thread=thread),
        **panels.preferences_context(thread=thread),
        **panels.plan_context(thread=thread),
        **panels.centre_context(thread=thread, selected_artifact_id=None),
        **chat_context(thread=thread, user=user, history=history),
        **trajectory.map_context(graph),
        "branch_origin": graph.origin,
        "thread": thread,
        "oob": False,
    }


@login_required
@require_GET
def workspace_page(request, thread_id):
    thread, access = thread_and_access_for_user(user=request.user, thread_id=thread_id)
    if thread is None or access is None:
        raise Http404("No such thread.")
    context = page_context(thread=thread, user=request.user, access=access)
    # A branch a rerun just opened may have a note for the person (static/js/chat.js drops it from the address).
    context["chat_notice"] = PAGE_NOTES.get(request.GET.get("note", ""), "")
    # Who has it open, this person counted in: their socket is about to connect.
    context["presence"] = presence.presence_context(thread_id=thread.pk, also=request.user)
    return render(request, "conversations/thread_page.html", context)


@login_required
@require_GET
@never_cache
def chat_from(request, thread_id, turn_index: int):
    """The chat from turn N on, for a page that shows turn N as its latest
    and may have missed pushes: one too big to send, one lost on the way, or
    none for a while when it shows a turn running (static/js/live.js,
    docs/adr/0043). Turn N is put in place as stored (unless it is still
    running: the page streams it), later turns are appended, and the
    controls say whether a turn runs. Out-of-band fragments, as pushes are."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.VIEW)
    if turn_index > thread.turn_index:
        raise Http404("No such turn.")  # 0: a page that shows no turn yet
    running, awaiting = turn_state(thread)
    parts = []
    # Every turn, not only the latest page's: a page that missed many gets them all.
    for turn in chat_turns(thread=thread, user=request.user, keep=lambda index: index >= turn_index):
        index = turn["turn_index"]
        if index == turn_index and turn["running"]:
            continue
        in_place = index == turn_index
        name = "turn" if in_place else "turn_append"
        parts.append(render_to_string(f"{fragments.TEMPLATE}#{name}", {"turn": turn, "turn_oob": in_place}, request=request))
    parts.append(fragments.controls(running=running is not None, awaiting=awaiting))
    return HttpResponse("".join(parts))


@login_required
@require_GET
def chat_earlier(request, thread_id, turn_index: int):
    """The turns before turn N, for a chat that shows N as its oldest: the
    page of turns before it (CHAT_TURNS_SHOWN), or with `?through=M` every
    turn from M on (a link to a turn the page does not show yet), then the
    control for what is still earlier. It replaces the "Show earlier turns"
    control it came from."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.VIEW)
    if turn_index > thread.turn_index + 1:
        raise Http404("No such turn.")  # one past the latest: every turn
    through = request.GET.get("through")
    if through is not None and not (through.isascii() and through.isdigit() and 1 <= int(through) < turn_index):
        return HttpResponse("through must be a turn before the one asked about.", status=400, content_type="text/plain")
    turns, earlier = shown_turns(
        thread=thread, user=request.user, before=turn_index, through=int(through) if through is not None else None
    )
    context = {"thread": thread, "earlier": earlier}
    parts = [render_to_string("conversations/panels/chat.html#earlier", context, request=request)] if earlier else []
    for turn in turns:
        parts.append(render_to_string(f"{fragments.TEMPLATE}#turn", {"turn": turn, "oob": False}, request=request))
    return HttpResponse("".join(parts))


@login_required
@require_GET
def staff_workspace_page(request, thread_id):
    """A thread's workspace for staff, read-only, from the admin's "View on
    site" (conversations.staff_view); anyone else gets 404, its owner too,
    who has the real page. Staff need what the admin's review of a thread
    needs (the permission to view threads), else 403, as the admin answers.
    Every visit is recorded in the moderation log."""
    if not request.user.is_staff:
        raise Http404("No such page.")
    if not staff_view.may_view(request.user):
        raise PermissionDenied
    thread = staff_view.thread_for_staff(thread_id)
    if thread is None:
        raise Http404("No such thread.")
    staff_view.record_staff_visit(thread=thread, staff_user=request.user)
    return render(request, "conversations/staff_workspace.html", staff_view.staff_workspace_context(thread=thread))


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


def _feedback_region(request, thread, turn_index, *, form=None, editing=None, edit_form=None, error="", saved="", status=200):
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
    thread = get_thread_for_user_or_404(
        user=request.user, thread_id=thread_id, level=Access.VIEW if request.method == "GET" else Access.EDIT
    )
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
    thread = get_thread_for_user_or_404(
        user=request.user, thread_id=thread_id, level=Access.VIEW if request.method == "GET" else Access.EDIT
    )
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
        initial = {
            "scope": feedback.scope,
            "aspect": feedback.aspect,
            "rating": feedback.rating,
            "comment": feedback.comment,
            "artifact": feedback.artifact_id,
        }
        edit_form = _feedback_form(thread, turn_index, initial=initial, prefix=prefix)
        return _feedback_region(request, thread, turn_index, editing=feedback.pk, edit_form=edit_form)
    edit_form = _feedback_form(thread, turn_index, data=request.POST, prefix=prefix)
    if not edit_form.is_valid():
        return _feedback_refused(request, thread, turn_index, edit_form.first_error(), editing=feedback.pk, edit_form=edit_form)
    try:
        services.feedback_update(feedback=feedback, **edit_form.service_kwargs())
    except UserFacingError as exc:
        return _feedback_refused(request, thread, turn_index, exc.message, editing=feedback.pk, edit_form=edit_form)
    if not request.htmx:
        return redirect("conversations:feedback", thread_id=thread.pk, turn_index=turn_index)
    return _feedback_region(request, thread, turn_index, saved="Your feedback is changed.")


@login_required
@require_GET
def trajectory_map(request, thread_id):
    """The thread's trajectory map, for a page whose map no longer fits the
    node patches it is sent (its family's lanes changed: docs/adr/0016)."""
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.VIEW)
    return HttpResponse(trajectory.render_map(trajectory.family_graph(thread=thread)))


@login_required
@require_GET
def trajectory_turn(request, thread_id, turn_index):
    """The read-only preview of the workspace after one turn of the map
    (the node's own thread), with "Continue from here" (docs/adr/0016)."""
    source = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.VIEW)
    workspace = trajectory.preview_context(thread=source, turn_index=turn_index)
    if workspace is None or not trajectory.is_own_turn(thread=source, turn_index=turn_index):
        raise Http404("No such turn.")
    chat = chat_turns(thread=source, keep=lambda index: index <= turn_index)
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
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.EDIT)
    if not 1 <= turn_index <= thread.turn_index:
        raise Http404("No such turn.")
    return thread


def _rerun(request, thread_id, turn_index: int, *, message: str | None) -> HttpResponse:
    thread = _thread_with_turn_or_404(request, thread_id, turn_index)
    try:
        branch, note = rerun_in_branch(source=thread, turn_index=turn_index, user=request.user, message=message)
    except UserFacingError as exc:
        return _refused(request, exc.message)
    url = reverse("thread-page", kwargs={"thread_id": branch.pk}) + page_note_query(note) + f"#turn-{turn_index}"
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@login_required
@require_POST
def feedback_delete(request, thread_id, pk):
    thread, feedback = _own_feedback_or_404(request, thread_id, pk)
    turn_index = feedback.turn_index
    services.feedback_remove(feedback=feedback)
    if not request.htmx:
        return redirect("conversations:feedback", thread_id=thread.pk, turn_index=turn_index)
    return _feedback_region(request, thread, turn_index, saved="Your feedback is removed.")


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
