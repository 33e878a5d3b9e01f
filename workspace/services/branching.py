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
    DocumentReviewDecision,
    DocumentRevision,
    Objective,
    ObjectiveRevision,
    PlanChange,
    Preference,
    Thread,
    Todo,
)
from ..selectors import WorkspaceAfterTurn
from .common import rewritten
from .document import EMPTY_CONTENT, EMPTY_TITLE


@transaction.atomic
def workspace_copy(
    *, thread: Thread, workspace: WorkspaceAfterTurn, source: Thread, through_turn: int, next_turn_began=None
) -> None:
    """Write `workspace` into the empty `thread`, and copy `source`'s
    artifacts of turns 1..through_turn and the plan's history up to the
    same point (their turn numbers kept: a branch's turns are numbered like
    its source's). `next_turn_began`: when turn through_turn + 1 began in
    `source` (None: it has not), for the review answers given before it."""
    if workspace.document_title != EMPTY_TITLE or workspace.document_content != EMPTY_CONTENT:
        _document_copy(
            thread=thread, workspace=workspace, source=source, through_turn=through_turn, next_turn_began=next_turn_began
        )
    if workspace.objective_text is not None:
        Objective.objects.create(thread=thread, text=workspace.objective_text)
        _objective_history_copy(thread=thread, text=workspace.objective_text, source=source, through_turn=through_turn)
    # Positions are re-assigned by list order (hard first, as the source showed them).
    Preference.objects.bulk_create(
        Preference(thread=thread, position=position, **preference) for position, preference in enumerate(workspace.preferences)
    )
    Todo.objects.bulk_create(Todo(thread=thread, position=position, **todo) for position, todo in enumerate(workspace.todos))
    # Each dated when the source's turn made it, as the histories below keep
    # their times (the panel and the branch's archive show it).
    Artifact.objects.bulk_create(
        Artifact(thread=thread, **row)
        for row in Artifact.objects.filter(thread=source, turn_index__lte=through_turn).order_by("id").values(*_ARTIFACT_FIELDS)
    )
    # The changes that made the plan the branch starts from: those written
    # during turns 1..k and after them, before turn k+1 began (its snapshot
    # is that plan). Who and when are kept, as the copied turns keep theirs.
    PlanChange.objects.bulk_create(
        PlanChange(thread=thread, **row)
        for row in PlanChange.objects.filter(thread=source, turn_index__lte=through_turn).order_by("id").values(*_PLAN_FIELDS)
    )
    rewritten(thread.pk)


# The histories a branch starts with are its source's up to the branch
# point (written during turns 1..k and before turn k+1 began), each entry
# with who wrote it and when, as the plan's history and the copied turns
# keep theirs (docs/adr/0085). Should the newest not be the text the branch
# starts from (a history older than the rows that keep it), a system entry
# with that text follows it.

_REVISION_FIELDS = (
    "version",
    "title",
    "body_id",
    "author",
    "token_name",
    "turn_index",
    "created_at",
    "person_id",
    "person_username",
    "restored_from",
)
_ARTIFACT_FIELDS = ("artifact_type", "title", "payload", "turn_index", "created_at")
_ANSWER_FIELDS = ("turn_index", "hunk", "decision", "created_at", "person_id", "person_username")
_PLAN_FIELDS = ("action", "summary", "author", "token_name", "turn_index", "created_at", "person_id", "person_username")
_OBJECTIVE_FIELDS = ("text", "author", "token_name", "turn_index", "created_at", "person_id", "person_username")


def _document_copy(*, thread: Thread, workspace: WorkspaceAfterTurn, source: Thread, through_turn: int, next_turn_began) -> None:
    # The blobs are shared, not copied: a revision refers to its text by content.
    history = list(
        DocumentRevision.objects.filter(document__thread=source, turn_index__lte=through_turn)
        .order_by("version")
        .values(*_REVISION_FIELDS)
    )
    newest = history[-1] if history else {}
    newest_body = ContentBlob.objects.filter(pk=newest["body_id"]).only("id", "sha256").first() if newest else None
    starts_there = (
        newest_body is not None
        and newest["title"] == workspace.document_title
        and newest_body.sha256 == content_store.digest(workspace.document_content)
    )
    version = newest.get("version", 0) + (0 if starts_there else 1)
    document = Document.objects.create(
        thread=thread, title=workspace.document_title, content=workspace.document_content, version=version
    )
    DocumentRevision.objects.bulk_create(DocumentRevision(document=document, **row) for row in history)
    if starts_there:
        # The text was last changed when its newest version was written, not
        # at the fork (the agent reads the date; an export states it).
        Document.objects.filter(pk=document.pk).update(updated_at=newest["created_at"])
    else:
        DocumentRevision.objects.create(
            document=document,
            version=version,
            title=document.title,
            body=content_store.store_text(ContentBlob, document.content, base=newest_body),
            author=DocumentRevision.Author.SYSTEM,
            turn_index=through_turn,
        )
    # The review answers of those turns given before the next turn began, so
    # a turn answered in the source is not asked again here; one given later
    # (an Undo after turn k+1) did not happen in this branch's text.
    answers = DocumentReviewDecision.objects.filter(document__thread=source, turn_index__lte=through_turn)
    if next_turn_began is not None:
        answers = answers.filter(created_at__lt=next_turn_began)
    DocumentReviewDecision.objects.bulk_create(
        DocumentReviewDecision(document=document, **row) for row in answers.values(*_ANSWER_FIELDS)
    )


def _objective_history_copy(*, thread: Thread, text: str, source: Thread, through_turn: int) -> None:
    history = list(
        ObjectiveRevision.objects.filter(thread=source, turn_index__lte=through_turn).order_by("id").values(*_OBJECTIVE_FIELDS)
    )
    ObjectiveRevision.objects.bulk_create(ObjectiveRevision(thread=thread, **row) for row in history)
    if not history or history[-1]["text"] != text:
        ObjectiveRevision.objects.create(
            thread=thread, text=text, author=ObjectiveRevision.Author.SYSTEM, turn_index=through_turn
        )
