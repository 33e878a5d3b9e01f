"""A thread's workspace as staff see it from the admin ("View on site"):
everything its owner sees, read-only.

The page has no forms, no socket and no scripts that edit, so nothing on it
can change the thread or start a turn; every visit is recorded in the
thread's moderation history, like staff's other actions on it."""

from django.contrib.auth.models import AbstractBaseUser

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


def record_staff_visit(*, thread: Thread, staff_user: AbstractBaseUser) -> ModerationAction:
    return services.moderation_record(
        thread=thread, staff_user=staff_user, action=ModerationAction.Action.VIEW_WORKSPACE,
        detail="Opened the read-only workspace view",
    )
