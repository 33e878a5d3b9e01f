"""Per-turn snapshots: the workspace as the agent saw it at the start of a turn.

The document text, preferences and plan are stored by content, each as a
delta against the same field of the thread's previous snapshot when that is
smaller (docs/adr/0015): a turn that changed nothing costs three references."""

import json
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from .. import content_store, selectors
from ..models import ContentBlob, Thread, WorkspaceSnapshot


def snapshot_json(value) -> str:
    """The stored JSON text of a snapshot's preferences or plan: compact, keys
    in the order they were captured, so equal values are equal texts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# Inside a turn's claim no savepoint of its own: a failure here fails the
# whole claim, which is then rolled back, so a savepoint would only cost two
# statements on every turn.
@transaction.atomic(savepoint=False)
def snapshot_capture(*, thread: Thread, turn_index: int, user_message: str) -> WorkspaceSnapshot:
    """Record the workspace as the agent will see it at the start of this turn.
    Write-once. Read with the prompt's own light reads (selectors.workspace_reading_for):
    the same values, hard preferences first and the plan in pre-order. Once
    the snapshot commits, its reading is the one the turn's first prompt
    starts from (selectors.workspace_reading_kept_on_commit)."""
    reading = selectors.workspace_reading_kept_on_commit(thread=thread)
    document = reading.document or selectors.UNWRITTEN_DOCUMENT
    preferences = [{"title": p.title, "subtitle": p.subtitle, "kind": p.kind, "locked": p.locked} for p in reading.preferences]
    todos = [
        {"text": step.text, "done": step.done, "position": position, "depth": step.depth}
        for position, step in enumerate(reading.todos)
    ]
    return snapshot_store(
        thread=thread,
        turn_index=turn_index,
        user_message=user_message,
        document_title=document.title,
        document_content=document.content,
        objective_text=reading.objective_text,
        preferences=preferences,
        todos=todos,
    )


def snapshot_store(
    *,
    thread: Thread,
    turn_index: int,
    user_message: str,
    document_title: str,
    document_content: str | None,
    objective_text: str | None,
    preferences: list[dict],
    todos: list[dict],
    captured_at: datetime | None = None,
    document_body: ContentBlob | None = None,
) -> WorkspaceSnapshot:
    """Write one snapshot, its texts stored against the thread's previous
    snapshot (the turn's capture, or an imported archive's, in turn order,
    with the archive's time). `document_body`, instead of `document_content`:
    the blob already holding the document (an imported revision's, docs/adr/0161),
    taken as it is, its text not read."""
    # The previous snapshot's blobs by id and key only: a field whose text is
    # unchanged (most fields of most turns) is the same blob, and only a
    # changed one needs its base's row, to be stored as a delta against it.
    # (Read with the blobs joined, the ORDER BY over their ~40 columns cost
    # more than the rest of the claim's reads: docs/adr/0089.)
    previous = (
        WorkspaceSnapshot.objects.filter(thread=thread, turn_index__lt=turn_index)
        .order_by("-turn_index")
        .values_list(*(f"{field}_id" for field in _BODIES), *(f"{field}__sha256" for field in _BODIES))
        .first()
    )

    texts = {
        "preferences_body": snapshot_json(preferences),
        "todos_body": snapshot_json(todos),
    }
    if document_body is None:
        assert document_content is not None
        texts["document_body"] = document_content
    keys = {field: content_store.digest(text) for field, text in texts.items()}
    if document_body is not None:
        keys["document_body"] = document_body.sha256
    # The changed fields' texts looked up in one query, not one each
    # (docs/adr/0135): on most first turns every one is stored already.
    known = content_store.blobs_by_key(
        ContentBlob,
        (key for field, key in keys.items() if previous is None or key != previous[len(_BODIES) + _BODIES.index(field)]),
    )
    if document_body is not None:
        known[document_body.sha256] = document_body

    def stored(field: str) -> int:
        key = keys[field]
        if key in known:
            return known[key].pk
        text = texts[field]
        if previous is None:
            return content_store.store_text(ContentBlob, text, known=known).pk
        position = _BODIES.index(field)
        base_id, base_key = previous[position], previous[len(_BODIES) + position]
        if key == base_key:
            return base_id
        return content_store.store_text(ContentBlob, text, base=ContentBlob.objects.get(pk=base_id), known=known).pk

    return WorkspaceSnapshot.objects.create(
        thread=thread,
        turn_index=turn_index,
        user_message=user_message,
        document_title=document_title,
        document_body_id=stored("document_body"),
        objective_text=objective_text,
        preferences_body_id=stored("preferences_body"),
        todos_body_id=stored("todos_body"),
        captured_at=captured_at or timezone.now(),
    )


_BODIES = ("document_body", "preferences_body", "todos_body")
