"""The thread's Share dialog (the owner's only: every route needs Access.OWN,
so anyone else gets the same 404 as for a thread they cannot see) and the
read-only link's landing route (docs/adr/0084).

Every answer to the dialog is its body, swapped over itself: the people
on the thread as stored now, with what was just done or refused."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from workspace.errors import UserFacingError
from workspace.models import Thread, ThreadMember, ThreadMemberName
from workspace.selectors import Access, get_thread_for_user_or_404

from . import sharing
from .forms import ShareAddForm, ShareRoleForm

DIALOG_BODY = "conversations/panels/share.html#body"
SHARE_PAGE = "conversations/share_page.html"


def _owned(request, thread_id) -> Thread:
    return get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.OWN)


def _dialog(request, thread: Thread, *, error: str = "", saved: str = "", values=None, status: int = 200):
    # Each name the thread is shared under, as typed, in the order of the names
    # shown: a username's place would hint at it (docs/adr/0137).
    members = ThreadMemberName.objects.filter(member__thread=thread).order_by("by_link", "name", "pk")
    link = (
        request.build_absolute_uri(reverse("conversations:share-link", kwargs={"key": thread.share_link_key}))
        if thread.share_link_key
        else ""
    )
    context = {
        "thread": thread,
        "members": members,
        "roles": ThreadMember.Role.choices,
        "link": link,
        "error": error,
        "saved": saved,
        "values": values or {},
    }
    # htmx swaps the body in the dialog; a plain request (no JavaScript) gets a page with it.
    template = DIALOG_BODY if request.htmx else SHARE_PAGE
    # A refusal is 200 for htmx (the message shows in the dialog), 400 for a plain form.
    return render(request, template, context, status=200 if request.htmx else status)


@login_required
@require_GET
def share_dialog(request, thread_id):
    return _dialog(request, _owned(request, thread_id))


@login_required
@require_POST
def share_add(request, thread_id):
    thread = _owned(request, thread_id)
    form = ShareAddForm(request.POST)
    if not form.is_valid():
        return _dialog(request, thread, error=form.first_error(), values=request.POST, status=400)
    try:
        sharing.thread_member_add(thread=thread, who=form.cleaned_data["who"], role=form.cleaned_data["role"], by=request.user)
    except UserFacingError as exc:
        return _dialog(request, thread, error=exc.message, values=request.POST, status=400)
    # Named as the owner named them, with the role of that name: by email, the
    # answer does not tell whose account it is, nor what else they are here (docs/adr/0137).
    name, role = form.cleaned_data["who"].strip(), form.cleaned_data["role"]
    return _dialog(request, thread, saved=f"{name} can now {'edit' if role == 'editor' else 'view'} this thread.")


def _member_or_gone(request, thread: Thread, pk):
    """The name the thread is shared under, by id, in this thread; another
    tab may have removed it (htmx: the dialog says so), and another
    thread's is a 404."""
    member = ThreadMemberName.objects.filter(member__thread=thread, pk=pk).first()
    if member is None and not request.htmx:
        raise Http404(sharing.NO_SUCH_MEMBER)
    return member


@login_required
@require_POST
def share_role(request, thread_id, pk):
    thread = _owned(request, thread_id)
    if _member_or_gone(request, thread, pk) is None:
        return _dialog(request, thread, error=sharing.NO_SUCH_MEMBER)
    form = ShareRoleForm(request.POST)
    if not form.is_valid():
        return _dialog(request, thread, error=form.first_error(), status=400)
    try:
        member = sharing.thread_member_name_set_role(thread=thread, name_id=pk, role=form.cleaned_data["role"], by=request.user)
    except UserFacingError as exc:
        return _dialog(request, thread, error=exc.message, status=400)
    return _dialog(request, thread, saved=f"{member.name} is now {member.get_role_display().lower()}.")


@login_required
@require_POST
def share_remove(request, thread_id, pk):
    thread = _owned(request, thread_id)
    member = _member_or_gone(request, thread, pk)
    if member is None:
        return _dialog(request, thread, error=sharing.NO_SUCH_MEMBER)
    try:
        sharing.thread_member_name_remove(thread=thread, name_id=pk, by=request.user)
    except UserFacingError as exc:
        return _dialog(request, thread, error=exc.message, status=400)
    # Not "they no longer have the thread": under another name the owner gave, they may (docs/adr/0137).
    return _dialog(request, thread, saved=f"Removed {member.name}: the thread is no longer shared under that name.")


@login_required
@require_POST
def share_line_from_before(request, thread_id, pk, action):
    """A Share dialog opened before its lines became the names a thread is
    shared under still posts a member's id to the old path. The two ids are
    numbered apart, so acting on it could change or remove someone else:
    nothing is changed, and the dialog is shown as it is now."""
    thread = _owned(request, thread_id)
    if not ThreadMember.objects.filter(thread=thread, pk=pk).exists():
        if not request.htmx:
            raise Http404(sharing.NO_SUCH_MEMBER)
        return _dialog(request, thread, error=sharing.NO_SUCH_MEMBER)
    return _dialog(request, thread, error=sharing.DIALOG_FROM_BEFORE, status=409)


@login_required
@require_POST
def share_link_make(request, thread_id):
    thread = _owned(request, thread_id)
    sharing.share_link_create(thread=thread, by=request.user)
    return _dialog(request, thread, saved="Anyone signed in here with the link can now view this thread.")


@login_required
@require_POST
def share_link_revoke(request, thread_id):
    thread = _owned(request, thread_id)
    sharing.share_link_revoke(thread=thread, by=request.user)
    return _dialog(request, thread, saved="The link no longer works; no one keeps access through it.")


@login_required
@require_GET
def share_link_open(request, key):
    """The read-only link: the signed-in person becomes a viewer and goes to the thread."""
    thread = sharing.share_link_open(user=request.user, key=key)
    if thread is None:
        raise Http404("This link does not work (any more).")
    return redirect("thread-page", thread_id=thread.pk)
