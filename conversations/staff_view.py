"""A thread's workspace as staff see it from the admin ("View on site"):
everything its owner sees, read-only.

The page has no forms and no scripts that edit, so nothing on it can change
the thread or start a turn; every visit is recorded in the thread's
moderation history, like staff's other actions on it, and so is every other
staff read of a thread's content (the admin's review and the admin pages
that show it: conversations.admin). It stays up to date: its socket
(conversations.consumers.StaffThreadConsumer) only listens, and whenever the
thread changes it is sent the page's content again (`render_live_content`,
the same partial), at most about once a second."""

from django.contrib.auth.models import AbstractBaseUser
from django.template.loader import render_to_string

from workspace import selectors as workspace_selectors
from workspace.artifact_registry import artifact_view
from workspace.markdown import render_markdown
from workspace.models import Thread

from . import services
from .chat import chat_turns
from .models import ModerationAction


def staff_workspace_context(*, thread: Thread) -> dict:
    document = workspace_selectors.document_for(thread=thread)
    return {
        "thread": thread,
        "objective": workspace_selectors.objective_text_for(thread=thread),
        "preferences": workspace_selectors.preferences_for(thread=thread),
        "plan": workspace_selectors.plan_steps(thread=thread),
        "document": document,
        "document_html": render_markdown(document.content),
        "artifacts": [artifact_view(artifact) for artifact in workspace_selectors.artifacts_for(thread=thread)],
        "turns": chat_turns(thread=thread),
    }


def may_view(user: AbstractBaseUser | None) -> bool:
    """Whether `user` may read threads here: what the admin asks before
    showing a thread or its review (ModelAdmin.has_view_permission behind
    admin_view), an active staff member allowed to view, or to change,
    threads."""
    return bool(
        user is not None
        and user.is_authenticated
        and user.is_active
        and user.is_staff
        and (user.has_perm("workspace.view_thread") or user.has_perm("workspace.change_thread"))
    )


def thread_for_staff(thread_id) -> Thread | None:
    """Any person's thread, soft-deleted ones too (staff review those)."""
    return Thread.objects.filter(pk=thread_id).select_related("owner").first()


def render_live_content(*, thread_id) -> str:
    """The page's content as it is now, to swap in on an open staff page ("" if the thread is gone)."""
    thread = thread_for_staff(thread_id)
    if thread is None:
        return ""
    return render_to_string("conversations/staff_workspace.html#content", {**staff_workspace_context(thread=thread), "oob": True})


def record_staff_visit(*, thread: Thread, staff_user: AbstractBaseUser) -> ModerationAction:
    return record_staff_read(
        thread=thread,
        staff_user=staff_user,
        action=ModerationAction.Action.VIEW_WORKSPACE,
        detail="Opened the read-only workspace view",
    )


def record_staff_read(*, thread: Thread, staff_user: AbstractBaseUser, action: str, detail: str) -> ModerationAction:
    """A staff member read this thread's content (a page of the admin, its
    review, the read-only workspace): in its moderation history, like the
    changes staff make (docs/adr/0050)."""
    return services.moderation_record(thread=thread, staff_user=staff_user, action=action, detail=detail)


def record_staff_list_read(*, thread_ids, staff_user: AbstractBaseUser, detail: str) -> None:
    """A list of the admin that read as these threads' content (searched,
    filtered, or all one thread's rows, docs/adr/0137): one read in each
    thread's moderation history."""
    ModerationAction.objects.bulk_create(
        ModerationAction(
            thread_id=thread_id, staff_user=staff_user, action=ModerationAction.Action.VIEW_ADMIN, detail=detail[:500]
        )
        for thread_id in thread_ids
    )
