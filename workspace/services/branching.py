"""Filling a new branch thread with the workspace it starts from (docs/adr/0014).

The thread is brand new and not yet visible to anyone, so nothing is
announced: the branch's page renders it whole when it is first opened.
"""

from django.db import transaction

from .. import content_store
from ..models import (
    Artifact,
    ContentBlob,
    Document,
    DocumentRevision,
    Objective,
    PlanChange,
    Preference,
    Thread,
    Todo,
)
from ..selectors import WorkspaceAfterTurn
from .common import rewritten
from .document import EMPTY_CONTENT, EMPTY_TITLE


@transaction.atomic
def workspace_copy(*, thread: Thread, workspace: WorkspaceAfterTurn, source: Thread, through_turn: int) -> None:
    """Write `workspace` into the empty `thread`, and copy `source`'s
    artifacts of turns 1..through_turn and the plan's history up to the
    same point (their turn numbers kept: a branch's turns are numbered like
    its source's)."""
    if workspace.document_title != EMPTY_TITLE or workspace.document_content != EMPTY_CONTENT:
        document = Document.objects.create(
            thread=thread, title=workspace.document_title, content=workspace.document_content, version=1
        )
        DocumentRevision.objects.create(
            document=document,
            version=1,
            title=document.title,
            body=content_store.store_text(ContentBlob, document.content),
            author=DocumentRevision.Author.SYSTEM,
        )
    if workspace.objective_text is not None:
        Objective.objects.create(thread=thread, text=workspace.objective_text)
    # Positions are re-assigned by list order (hard first, as the source showed them).
    Preference.objects.bulk_create(
        Preference(thread=thread, position=position, **preference) for position, preference in enumerate(workspace.preferences)
    )
    Todo.objects.bulk_create(Todo(thread=thread, position=position, **todo) for position, todo in enumerate(workspace.todos))
    Artifact.objects.bulk_create(
        Artifact(thread=thread, artifact_type=a.artifact_type, title=a.title, payload=a.payload, turn_index=a.turn_index)
        for a in Artifact.objects.filter(thread=source, turn_index__lte=through_turn).order_by("id")
    )
    # The changes that made the plan the branch starts from: those written
    # during turns 1..k and after them, before turn k+1 began (its snapshot
    # is that plan). Who and when are kept, as the copied turns keep theirs.
    PlanChange.objects.bulk_create(
        PlanChange(
            thread=thread,
            action=c.action,
            summary=c.summary,
            author=c.author,
            token_name=c.token_name,
            turn_index=c.turn_index,
            created_at=c.created_at,
            person_id=c.person_id,
            person_username=c.person_username,
        )
        for c in PlanChange.objects.filter(thread=source, turn_index__lte=through_turn).order_by("id")
    )
    rewritten(thread.pk)
