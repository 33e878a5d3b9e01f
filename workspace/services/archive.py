"""Writing an imported archive's workspace into a new thread (docs/adr/0025,
docs/adr/0049).

The thread is brand new and hidden until the import has finished, so
nothing is announced: its page renders it whole when first opened. The data
was checked by workspace.archive.parse_workspace. A large archive is written
in many short transactions rather than one long one (which would keep every
other person's writes waiting on SQLite), so the writes come in parts the
import (conversations.archive) groups into transactions: the live workspace,
then the histories in chunks, then the snapshots one by one, in turn order
(each is stored as a delta against the one before it). Every row keeps the
time the archive gives it; one without a time gets `now`."""

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from .. import content_store, people, text_delta
from ..archive import ArchiveRefused
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
    WorkspaceSnapshot,
)
from .common import rewritten
from .document import newest_revision_body
from .snapshots import snapshot_store


def _time(value: datetime | None, now: datetime) -> datetime:
    return value if value is not None else now


@transaction.atomic
def workspace_restore_current(*, thread: Thread, workspace: dict) -> None:
    """The live workspace: objective, preferences, plan, the document as it is now."""
    if workspace["objective"] is not None:
        Objective.objects.create(thread=thread, text=workspace["objective"])
    Preference.objects.bulk_create(
        Preference(thread=thread, position=position, **preference) for position, preference in enumerate(workspace["preferences"])
    )
    Todo.objects.bulk_create(Todo(thread=thread, position=position, **step) for position, step in enumerate(workspace["plan"]))
    document = workspace["document"]
    if document is not None:
        row = Document.objects.create(
            thread=thread, title=document["title"], content=document["content"], version=document["version"]
        )
        now = timezone.now()
        DocumentReviewDecision.objects.bulk_create(
            DocumentReviewDecision(
                document=row,
                turn_index=d["turn"],
                hunk=d["hunk"],
                decision=d["decision"],
                created_at=_time(d["at"], now),
                **people.imported(d["by"], importer=thread.owner),
            )
            for d in document["review_decisions"]
        )
    rewritten(thread.pk)


@transaction.atomic
def objective_history_restore(*, thread: Thread, rows: list[dict]) -> None:
    now = timezone.now()
    ObjectiveRevision.objects.bulk_create(
        ObjectiveRevision(
            thread=thread,
            text=r["text"],
            author=r["author"],
            token_name=r["token"],
            turn_index=r["turn"],
            created_at=_time(r["at"], now),
            **people.imported(r["by"], importer=thread.owner),
        )
        for r in rows
    )


@transaction.atomic
def plan_history_restore(*, thread: Thread, rows: list[dict]) -> None:
    now = timezone.now()
    PlanChange.objects.bulk_create(
        PlanChange(
            thread=thread,
            action=r["action"],
            summary=r["summary"],
            author=r["author"],
            token_name=r["token"],
            turn_index=r["turn"],
            created_at=_time(r["at"], now),
            **people.imported(r["by"], importer=thread.owner),
        )
        for r in rows
    )


@dataclass
class _Carried:
    """The newest revision's blob and text as the part before left them, so
    the next part of the same import starts from them rather than rebuilding
    that text from its keyframe (docs/adr/0123)."""

    body: ContentBlob | None = None
    text: str | None = None


@transaction.atomic
def document_revisions_restore(*, thread: Thread, rows: list[dict], carried: _Carried | None = None) -> None:
    """Revisions in version order, after those already restored: each text
    is stored against the one before it (docs/adr/0078), as the archive's
    delta when it has one. `carried`: what the part before left, used only
    where it is still the newest revision's blob (a part rolled back leaves
    it behind)."""
    carried = carried if carried is not None else _Carried()
    document = Document.objects.get(thread=thread)
    now = timezone.now()
    base, base_text = newest_revision_body(document), None
    if base is not None and carried.body is not None and carried.body.pk == base.pk:
        base, base_text = carried.body, carried.text
    revisions = []
    for r in rows:
        if r["delta"] is None:
            text, ops = r["content"], None
        else:
            # Rebuilt from the revision before it, in this chunk or the one before (docs/adr/0123).
            if base_text is None:
                base_text = content_store.read_text(ContentBlob, base)
            text, ops = text_delta.apply_delta(base_text, r["delta"]), r["delta"]
        base = content_store.store_text(ContentBlob, text, base=base, base_text=base_text, ops=ops)
        base_text = text
        revisions.append(
            DocumentRevision(
                document=document,
                version=r["version"],
                title=r["title"],
                body=base,
                author=r["author"],
                token_name=r["token"],
                turn_index=r["turn"],
                created_at=_time(r["at"], now),
                restored_from=r.get("restored"),
                **people.imported(r["by"], importer=thread.owner),
            )
        )
    DocumentRevision.objects.bulk_create(revisions)
    carried.body, carried.text = base, base_text


@transaction.atomic
def artifacts_restore(*, thread: Thread, rows: list[dict]) -> None:
    now = timezone.now()
    Artifact.objects.bulk_create(
        Artifact(
            thread=thread,
            artifact_type=a["artifact_type"],
            title=a["title"],
            payload=a["payload"],
            turn_index=a["turn"],
            created_at=_time(a["at"], now),
        )
        for a in rows
    )
    rewritten(thread.pk)


@dataclass
class _SnapshotBefore:
    """The document of the snapshot the part before restored: what the next
    snapshot's delta is applied to (docs/adr/0161)."""

    text: str | None = None


@transaction.atomic
def snapshot_restore(*, thread: Thread, snapshot: dict, before: _SnapshotBefore | None = None) -> None:
    """One snapshot; call them in turn order (each is stored against the one
    before, and its document may be a delta against the one before's)."""
    before = before if before is not None else _SnapshotBefore()
    body = None
    if snapshot["document_revision"] is not None:
        # The blob of the version imported before it, whose key is the
        # SHA-256 of the text rebuilt from the archive (docs/adr/0161).
        revision = (
            DocumentRevision.objects.filter(document__thread=thread, version=snapshot["document_revision"])
            .select_related("body")
            .first()
        )
        if revision is None or revision.body.sha256 != snapshot["document_sha256"]:
            raise ArchiveRefused(
                f"workspace.snapshots[{snapshot['position']}]: the document's version {snapshot['document_revision']} "
                "is not the text its document_sha256 names; the archive is damaged or was changed."
            )
        body, content = revision.body, None
    elif snapshot["document_delta"] is None:
        content = snapshot["document_content"]
    else:
        if before.text is None:
            raise RuntimeError("a snapshot's document delta has no snapshot before it to apply to")
        content = text_delta.apply_delta(before.text, snapshot["document_delta"])
        # Checked when the archive was read (parse_workspace); checked again
        # here, where it is stored, so no other text can be written.
        if content_store.digest(content) != snapshot["document_sha256"]:
            raise content_store.CorruptContent(f"snapshot of turn {snapshot['turn']} does not rebuild to its key")
    snapshot_store(
        thread=thread,
        turn_index=snapshot["turn"],
        user_message=snapshot["user_message"],
        document_title=snapshot["document_title"],
        document_content=content,
        document_body=body,
        objective_text=snapshot["objective"],
        preferences=snapshot["preferences"],
        todos=[
            {"text": step["text"], "done": step["done"], "position": position, "depth": step["depth"]}
            for position, step in enumerate(snapshot["plan"])
        ],
        captured_at=_time(snapshot["at"], timezone.now()),
    )
    before.text = content


# A part writes at most this many rows or characters of text, so no part
# keeps the database busy for long whatever the archive holds.
PART_MAX_ROWS = 100
PART_MAX_CHARS = 500_000


def _chunks(rows: list[dict], size) -> Iterator[list[dict]]:
    chunk: list[dict] = []
    chars = 0
    for row in rows:
        if chunk and (len(chunk) >= PART_MAX_ROWS or chars + size(row) > PART_MAX_CHARS):
            yield chunk
            chunk, chars = [], 0
        chunk.append(row)
        chars += size(row)
    if chunk:
        yield chunk


def _revision_size(row: dict) -> int:
    """What a revision costs a part: the text it writes, whole or as the
    delta's inserts (a revision carried as a delta is stored as that delta,
    docs/adr/0123), and a twentieth of the text it rebuilds (copied and
    hashed): a part holds about 50 autosaves of a document at its
    200 000-character limit (a twentieth of a second here), not two."""
    if row["delta"] is None:
        written = row["length"]
    else:
        written = sum(len(op) if isinstance(op, str) else 8 for op in row["delta"])
    return written + row["length"] // 20 + len(row["title"])


def workspace_restore_parts(*, thread: Thread, workspace: dict) -> list[Callable[[], None]]:
    """The writes that restore `workspace` into the new `thread`, in the
    order they must run, each a small transaction of its own; the import
    runs them (conversations.archive)."""
    parts: list[Callable[[], None]] = [partial(workspace_restore_current, thread=thread, workspace=workspace)]
    parts += [
        partial(objective_history_restore, thread=thread, rows=rows)
        for rows in _chunks(workspace["objective_history"], lambda r: len(r["text"]))
    ]
    parts += [
        partial(plan_history_restore, thread=thread, rows=rows)
        for rows in _chunks(workspace["plan_history"], lambda r: len(r["summary"]))
    ]
    if workspace["document"] is not None:
        carried = _Carried()
        parts += [
            partial(document_revisions_restore, thread=thread, rows=rows, carried=carried)
            for rows in _chunks(workspace["document"]["revisions"], _revision_size)
        ]
    parts += [
        partial(artifacts_restore, thread=thread, rows=rows)
        for rows in _chunks(workspace["artifacts"], lambda a: len(json.dumps(a["payload"])))
    ]
    # In turn order, which is the archive's where a snapshot's document is
    # a delta against the one before (parse_workspace).
    before = _SnapshotBefore()
    parts += [
        partial(snapshot_restore, thread=thread, snapshot=snapshot, before=before)
        for snapshot in sorted(workspace["snapshots"], key=lambda s: s["turn"])
    ]
    return parts


# -- removing an import that did not finish --

_SNAPSHOT_BODIES = ("document_body", "preferences_body", "todos_body")
_IN_BATCH = 500


def _batches(ids) -> Iterator[list[int]]:
    ids = list(ids)
    for start in range(0, len(ids), _IN_BATCH):
        yield ids[start : start + _IN_BATCH]


def thread_content_blob_ids(*, thread_id) -> set[int]:
    """The content blobs the thread's revisions and snapshots refer to."""
    ids = set(DocumentRevision.objects.filter(document__thread_id=thread_id).values_list("body_id", flat=True))
    for field in _SNAPSHOT_BODIES:
        ids.update(WorkspaceSnapshot.objects.filter(thread_id=thread_id).values_list(f"{field}_id", flat=True))
    return ids


@transaction.atomic
def content_blobs_release(ids: set[int]) -> int:
    """Delete those of the blobs `ids` nothing refers to any more (call it
    after deleting the rows that did, e.g. a failed import's thread): a
    blob another thread's revision or snapshot holds, or another blob is
    built on, is kept with the chain it is built on. How many were deleted."""
    rows: dict[int, tuple[int | None, int | None, int]] = {}
    for batch in _batches(ids):
        rows.update(
            (pk, (base_id, keyframe_id, depth))
            for pk, base_id, keyframe_id, depth in ContentBlob.objects.filter(pk__in=batch).values_list(
                "pk", "base_id", "keyframe_id", "depth"
            )
        )
    held: set[int] = set()
    for batch in _batches(rows):
        held.update(DocumentRevision.objects.filter(body_id__in=batch).values_list("body_id", flat=True))
        for field in _SNAPSHOT_BODIES:
            held.update(WorkspaceSnapshot.objects.filter(**{f"{field}_id__in": batch}).values_list(f"{field}_id", flat=True))
        built_on = ContentBlob.objects.exclude(pk__in=rows.keys()).filter(Q(base_id__in=batch) | Q(keyframe_id__in=batch))
        for base_id, keyframe_id in built_on.values_list("base_id", "keyframe_id"):
            held.update((base_id, keyframe_id))
    # A held blob keeps every blob its text is rebuilt from.
    for pk in list(held):
        current = rows.get(pk)
        while current is not None and current[0] is not None:
            held.add(current[0])
            current = rows.get(current[0])
    free = [pk for pk in rows if pk not in held]
    # Deepest first, one depth at a time: a blob is protected while a
    # delta built on it is there, even one deleted in the same statement.
    for depth in sorted({rows[pk][2] for pk in free}, reverse=True):
        for batch in _batches(pk for pk in free if rows[pk][2] == depth):
            ContentBlob.objects.filter(pk__in=batch).delete()
    return len(free)
