"""The workspace part of a thread archive (docs/adr/0025): reading it out of
a thread, and checking an archive's workspace part before anything is
written.

An archive comes from a file anyone can edit, so nothing in it is trusted:
`parse_workspace` checks every field's type, range and length with the same
limits the services apply, and answers the first problem with where it is
("workspace.plan[3].depth: ..."). What it returns is plain data that
`services.archive.workspace_restore_parts` writes as is.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from . import content_store, people, plan_tree, text_delta
from .models import (
    ARTIFACT_TITLE_MAX_CHARS,
    ARTIFACT_TYPE_MAX_CHARS,
    ARTIFACT_TYPE_PATTERN,
    DOCUMENT_TITLE_MAX_CHARS,
    OBJECTIVE_MAX_CHARS,
    PLAN_CHANGE_SUMMARY_MAX_CHARS,
    PREFERENCE_SUBTITLE_MAX_CHARS,
    PREFERENCE_TITLE_MAX_CHARS,
    TODO_TEXT_MAX_CHARS,
    TOKEN_NAME_MAX_CHARS,
    Artifact,
    ContentBlob,
    Document,
    DocumentReviewDecision,
    DocumentRevision,
    ObjectiveRevision,
    PlanChange,
    Preference,
    Thread,
    WorkspaceSnapshot,
)
from .selectors import objective_text_for, preferences_for, todos_for
from .text import has_lone_surrogate

# Far above what a person writes in a thread, low enough that a crafted
# archive cannot make one import take minutes.
MAX_ROWS = 5_000
MAX_REVISIONS = 100_000
# What a document's revisions rebuild to, in all: an archive carries most
# as deltas, so a few bytes can stand for a whole text, and each rebuilt
# text is hashed and stored (about 1.6 s per 10^8 characters here). A
# document at its 200 000-character limit saved 20 000 times fits; a crafted
# archive cannot make one import rebuild more.
MAX_REVISION_CHARS = 4_000_000_000
ARTIFACT_PAYLOAD_MAX_CHARS = 1_000_000
MESSAGE_MAX_CHARS = 1_000_000
AUTHORS = {choice for choice, _ in DocumentRevision.Author.choices}
KINDS = {choice for choice, _ in Preference.Kind.choices}
DECISIONS = {choice for choice, _ in DocumentReviewDecision.Decision.choices}
PLAN_ACTIONS = {choice for choice, _ in PlanChange.Action.choices}


class ArchiveRefused(Exception):
    """The archive cannot be imported; nothing was written."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# -- reading a thread's workspace --


def _revisions(document: Document) -> list[dict]:
    """Every revision, oldest first, its text whole or, where it is stored
    as a delta against the revision before it (docs/adr/0078), as that
    delta (docs/adr/0123): a document saved thousands of times is carried
    as what each save changed, not as thousands of copies of itself.

    Every text is rebuilt and checked against its key on the way, as any
    read of it is (a damaged blob raises CorruptContent, never goes out as
    a wrong text), one at a time: the revisions are read as they go, not
    held with their texts."""
    reading: list[DocumentRevision] = []  # the revision whose body is being read

    def bodies():
        for revision in document.revisions.order_by("version").select_related("body").iterator(chunk_size=500):
            reading[:] = [revision]
            yield revision.body

    rows, previous, previous_text = [], None, None
    for text in content_store.read_texts(ContentBlob, bodies()):
        revision = reading[0]
        body = revision.body
        row: dict[str, Any] = {"version": revision.version, "title": revision.title}
        if previous is not None and body.pk == previous.pk and text:
            row["delta"] = [[0, len(text)]]  # the same text again (the title changed)
        elif previous is not None and body.delta is not None and body.base_id == previous.pk:
            row["delta"] = text_delta.decode(body.delta)  # applied and checked by read_texts
        else:
            # Stored whole (every MAX_CHAIN-th revision) or as a text seen before:
            # a delta still, when the text is mostly the one before it.
            ops: text_delta.Delta | None = text_delta.delta_between(previous_text, text) if previous_text else None
            if ops is not None and len(text_delta.encode(ops)) * 2 < len(text):
                row["delta"] = ops
            else:
                row["content"] = text
        row.update(
            {
                "author": revision.author,
                "token": revision.token_name,
                "turn": revision.turn_index,
                "at": revision.created_at.isoformat(),
                "by": revision.person_username,
                "restored": revision.restored_from,
            }
        )
        rows.append(row)
        previous, previous_text = body, text
    return rows


def workspace_section(thread: Thread) -> dict:
    """Everything of the workspace a person would want back: the live
    objective, preferences, plan and document, their histories (the plan's
    too: docs/adr/0090), the artifacts and the per-turn snapshots."""
    document = Document.objects.filter(thread=thread).first()
    return {
        "objective": objective_text_for(thread=thread),
        "objective_history": [
            {"text": text, "author": author, "token": token, "turn": turn, "at": at.isoformat(), "by": by}
            for text, author, token, turn, at, by in ObjectiveRevision.objects.filter(thread=thread)
            .order_by("id")
            .values_list("text", "author", "token_name", "turn_index", "created_at", "person_username")
        ],
        "preferences": [
            {"title": p.title, "subtitle": p.subtitle, "kind": p.kind, "locked": p.locked} for p in preferences_for(thread=thread)
        ],
        "plan": [{"text": t.text, "done": t.done, "depth": t.depth} for t in todos_for(thread=thread)],
        "plan_history": [
            {"action": action, "summary": summary, "author": author, "token": token, "turn": turn, "at": at.isoformat(), "by": by}
            for action, summary, author, token, turn, at, by in PlanChange.objects.filter(thread=thread)
            .order_by("id")
            .values_list("action", "summary", "author", "token_name", "turn_index", "created_at", "person_username")
        ],
        "document": None
        if document is None
        else {
            "title": document.title,
            "content": document.content,
            "version": document.version,
            "revisions": _revisions(document),
            "review_decisions": [
                {"turn": turn, "hunk": hunk, "decision": decision, "by": by, "at": at.isoformat()}
                for turn, hunk, decision, by, at in document.review_decisions.order_by("turn_index", "hunk").values_list(
                    "turn_index", "hunk", "decision", "person_username", "created_at"
                )
            ],
        },
        "artifacts": [
            {
                "artifact_type": a.artifact_type,
                "title": a.title,
                "payload": a.payload,
                "turn": a.turn_index,
                "at": a.created_at.isoformat(),
            }
            for a in Artifact.objects.filter(thread=thread).order_by("id")
        ],
        "snapshots": _snapshots(thread),
    }


def _snapshots(thread: Thread) -> list[dict]:
    """Every turn's snapshot, in turn order, its document carried as the
    document's version holding the same text, else as a delta against the
    snapshot before (where that carried a text and the delta is less than
    half of it), else whole; a version or a delta with the key (SHA-256) of
    the text (docs/adr/0161): a thread of hundreds of turns of a long
    document carries no copies of it.

    The texts are read in order, each checked against its key as any read
    is (a damaged blob raises CorruptContent, never goes out as a wrong
    text); a snapshot stored as a delta against the one before (docs/adr/0015)
    costs that delta."""
    # The newest version holding each text: a snapshot's document is, as a
    # rule, the text of the revision saved last before its turn (one blob
    # per text, docs/adr/0015), and is then carried as that version.
    versions = dict(
        DocumentRevision.objects.filter(document__thread=thread).order_by("version").values_list("body_id", "version")
    )
    snapshots = list(
        WorkspaceSnapshot.objects.filter(thread=thread)
        .select_related("document_body", "preferences_body", "todos_body")
        .order_by("turn_index")
    )

    def bodies():
        # A document unchanged since the turn before is the same blob: read once.
        last = None
        for snapshot in snapshots:
            if last is None or snapshot.document_body_id != last.pk:
                last = snapshot.document_body
            yield last

    rows, previous, previous_text = [], None, None
    for snapshot, text in zip(snapshots, content_store.read_texts(ContentBlob, bodies()), strict=True):
        body = snapshot.document_body
        row: dict[str, Any] = {"turn": snapshot.turn_index, "user_message": snapshot.user_message}
        row["document_title"] = snapshot.document_title
        ops: text_delta.Delta | None = None
        if previous is None or previous_text is None:
            pass  # the first, or the one before it was carried as a version: whole
        elif body.pk == previous.pk:
            ops = [[0, len(text)]]
        elif body.delta is not None and body.base_id == previous.pk:
            ops = text_delta.decode(body.delta)  # applied and checked by read_texts
        elif previous_text:
            ops = text_delta.delta_between(previous_text, text)
        if body.pk in versions:
            row["document_revision"] = versions[body.pk]
            row["document_sha256"] = body.sha256
        elif ops is not None and text and len(text_delta.encode(ops)) * 2 < len(text):
            row["document_delta"] = ops
            row["document_sha256"] = body.sha256
        else:
            row["document_content"] = text
        row.update(
            {
                "objective": snapshot.objective_text,
                "preferences": snapshot.preferences_json,
                "plan": sorted(snapshot.todos_json, key=lambda t: t.get("position", 0)),
                "at": snapshot.captured_at.isoformat(),
            }
        )
        rows.append(row)
        # A delta is read against the text of the snapshot before, which
        # the import knows only when that one carried it (parse_workspace).
        previous, previous_text = body, None if "document_revision" in row else text
    return rows


# -- checking an archive --


class Fields:
    """Typed reads from untrusted JSON, each naming where a problem is."""

    def __init__(self, value, path: str):
        if not isinstance(value, dict):
            raise ArchiveRefused(f"{path}: expected an object.")
        self.value = value
        self.path = path

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def obj(self, key: str, *, optional: bool = False) -> Fields | None:
        value = self.value.get(key)
        if value is None and optional:
            return None
        return Fields(value, self.at(key))

    def items(self, key: str, *, max_items: int) -> list:
        value = self.value.get(key, [])
        if not isinstance(value, list):
            raise ArchiveRefused(f"{self.at(key)}: expected a list.")
        if len(value) > max_items:
            raise ArchiveRefused(f"{self.at(key)}: {len(value):,} entries; at most {max_items:,} can be imported.")
        return value

    def text(self, key: str, *, max_chars: int, optional: bool = False, blank: bool = True) -> str | None:
        value = self.value.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise ArchiveRefused(f"{self.at(key)}: expected text.")
        check_text(value, self.at(key), max_chars=max_chars)
        if not blank and not value.strip():
            raise ArchiveRefused(f"{self.at(key)}: cannot be empty.")
        return value

    def choice(self, key: str, choices: set[str]) -> str:
        value = self.value.get(key)
        # Text first: a list or an object cannot be looked up in a set.
        if not isinstance(value, str) or value not in choices:
            raise ArchiveRefused(f"{self.at(key)}: expected one of {', '.join(sorted(choices))}.")
        return value

    def time(self, key: str) -> datetime | None:
        """An ISO 8601 date and time (UTC when it names no zone); None when
        absent, and the import then uses its own time."""
        value = self.value.get(key)
        if value is None:
            return None
        return parse_time(value, self.at(key))

    def number(self, key: str, *, low: int, high: int, optional: bool = False) -> int | None:
        value = self.value.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ArchiveRefused(f"{self.at(key)}: expected a whole number from {low} to {high}.")
        return value

    def flag(self, key: str) -> bool:
        value = self.value.get(key, False)
        if not isinstance(value, bool):
            raise ArchiveRefused(f"{self.at(key)}: expected true or false.")
        return value


# How far ahead of this server's clock an archive's time may be (another
# server's clock); later than that, it was made up.
CLOCK_SKEW = timedelta(days=1)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)


def parse_time(value, path: str) -> datetime:
    if not isinstance(value, str) or len(value) > 64:
        raise ArchiveRefused(f"{path}: expected a date and time (ISO 8601, e.g. 2026-01-31T09:30:00+00:00).")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ArchiveRefused(f"{path}: expected a date and time (ISO 8601, e.g. 2026-01-31T09:30:00+00:00).") from exc
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = moment.astimezone(UTC)
    except OverflowError as exc:  # year 1 with a zone east of UTC
        raise ArchiveRefused(f"{path}: not a time this server can store.") from exc
    if moment < EARLIEST:
        raise ArchiveRefused(f"{path}: {value} is before the year {EARLIEST.year}.")
    if moment > timezone.now() + CLOCK_SKEW:
        raise ArchiveRefused(f"{path}: {value} is in the future.")
    return moment


def check_text(value: str, path: str, *, max_chars: int) -> None:
    if len(value) > max_chars:
        raise ArchiveRefused(f"{path}: {len(value):,} characters; the limit is {max_chars:,}.")
    if "\x00" in value or has_lone_surrogate(value):
        raise ArchiveRefused(f"{path}: contains a character that cannot be stored (NUL or a lone surrogate).")


def check_values(value, path: str, *, max_chars: int) -> None:
    """Every text (keys too) and every number anywhere inside `value` can be
    stored. A number too large for a float (1e400) is read as infinity,
    which JSON and jsonb do not hold: refused here, where it is, rather than
    failing the write with "Try again" (docs/adr/0025)."""
    if isinstance(value, str):
        check_text(value, path, max_chars=max_chars)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ArchiveRefused(f"{path}: holds a number too large to store (larger than about 1.8e308).")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_values(key, path, max_chars=max_chars)
            check_values(item, path, max_chars=max_chars)
    elif isinstance(value, list):
        for item in value:
            check_values(item, path, max_chars=max_chars)


def person_by(row: Fields) -> str:
    """Who did it, by username (docs/adr/0085); "" for nobody, and for
    archives made before names were kept."""
    return row.text("by", max_chars=people.USERNAME_MAX_CHARS, optional=True) or ""


def _preference(value, path: str) -> dict:
    row = Fields(value, path)
    return {
        "title": row.text("title", max_chars=PREFERENCE_TITLE_MAX_CHARS, blank=False),
        "subtitle": row.text("subtitle", max_chars=PREFERENCE_SUBTITLE_MAX_CHARS, optional=True) or "",
        "kind": row.choice("kind", KINDS),
        "locked": row.flag("locked"),
    }


def _plan(items: list, path: str) -> list[dict]:
    steps: list[dict[str, Any]] = []
    for n, value in enumerate(items):
        row = Fields(value, f"{path}[{n}]")
        steps.append(
            {
                "text": row.text("text", max_chars=TODO_TEXT_MAX_CHARS, blank=False),
                "done": row.flag("done"),
                "depth": row.number("depth", low=0, high=MAX_ROWS),
            }
        )
    if not plan_tree.is_valid([step["depth"] for step in steps]):
        raise ArchiveRefused(
            f"{path}: the steps' depths do not form an outline (each step at most one level below the one before)."
        )
    return steps


def _revision_text(row: Fields, *, before: int | None, max_chars: int) -> dict:
    """A revision's text as the archive carries it: {"content": the text}
    or {"delta": operations rebuilding it from the revision before}
    (workspace.text_delta), with its "length". A delta is checked against
    the length of the text before it: every copy within it, every insert
    storable, the text it makes within the document's limit."""
    if row.value.get("delta") is None:
        if row.value.get("content") is None:
            raise ArchiveRefused(f"{row.path}: expected its text, whole (content) or as a delta against the one before (delta).")
        content = row.text("content", max_chars=max_chars) or ""
        return {"content": content, "delta": None, "length": len(content)}
    at = row.at("delta")
    if before is None:
        raise ArchiveRefused(f"{at}: the first revision has no revision before it; its text must be whole.")
    ops = row.value["delta"]
    length = delta_length(ops, at, before=before, max_chars=max_chars)
    return {"content": None, "delta": ops, "length": length}


def delta_length(ops, at: str, *, before: int, max_chars: int) -> int:
    """The length of the text the delta `ops` (workspace.text_delta) makes
    from a text of `before` characters, checked: every copy within it,
    every insert storable, the text within `max_chars`."""
    if not isinstance(ops, list):
        raise ArchiveRefused(f"{at}: expected a list.")
    length = 0
    for i, op in enumerate(ops):
        if isinstance(op, str):
            check_text(op, f"{at}[{i}]", max_chars=max_chars)
            length += len(op)
        elif (
            isinstance(op, list)
            and len(op) == 2
            and all(type(n) is int for n in op)
            and op[0] >= 0
            and op[1] >= 0
            and op[0] + op[1] <= before
        ):
            length += op[1]
        else:
            raise ArchiveRefused(f"{at}[{i}]: expected a text or [start, length] within the {before:,} characters before.")
        if length > max_chars:
            raise ArchiveRefused(f"{at}: makes a text of more than {max_chars:,} characters; the limit is {max_chars:,}.")
    return length


SHA256 = re.compile(r"[0-9a-f]{64}")


def _snapshot_key(row: Fields) -> str:
    key = row.value.get("document_sha256")
    if not isinstance(key, str) or not SHA256.fullmatch(key):
        raise ArchiveRefused(f"{row.at('document_sha256')}: expected the SHA-256 of the document, 64 hexadecimal digits.")
    return key


def _snapshot_document(
    row: Fields, *, first: bool, before: str | None, versions: set[int], max_chars: int, deltas: bool
) -> tuple[dict, str | None]:
    """A snapshot's document as the archive carries it, and its text where
    the archive holds it: whole (document_content) or, from version 3 on
    (docs/adr/0161), as the text of one of the document's versions
    (document_revision) or as a delta against the snapshot before
    (document_delta), either with the key of the text (document_sha256).
    A delta is rebuilt here and checked against its key as a stored text
    is, so a damaged or changed one is refused before anything is
    written; a version's text is rebuilt where it is stored, and its key
    checked there (workspace_restore_parts)."""
    carried = {"document_content": None, "document_delta": None, "document_revision": None, "document_sha256": None}
    if deltas and row.value.get("document_revision") is not None:
        version = row.number("document_revision", low=1, high=10**9)
        if version not in versions:
            raise ArchiveRefused(f"{row.at('document_revision')}: the document has no version {version} in this archive.")
        return {**carried, "document_revision": version, "document_sha256": _snapshot_key(row)}, None
    if not deltas or row.value.get("document_delta") is None:
        content = row.text("document_content", max_chars=max_chars) or ""
        return {**carried, "document_content": content}, content
    at = row.at("document_delta")
    if first:
        raise ArchiveRefused(f"{at}: the first snapshot has no snapshot before it; its document must be whole.")
    if before is None:
        raise ArchiveRefused(f"{at}: the snapshot before it carries a version, not a text; its document must be whole.")
    ops = row.value["document_delta"]
    delta_length(ops, at, before=len(before), max_chars=max_chars)
    key = _snapshot_key(row)
    text = text_delta.apply_delta(before, ops)
    if content_store.digest(text) != key:
        raise ArchiveRefused(
            f"{row.path}: its document_delta does not rebuild the document its document_sha256 names; "
            "the archive is damaged or was changed."
        )
    return {**carried, "document_delta": ops, "document_sha256": key}, text


def parse_workspace(value, *, turns: int, snapshot_deltas: bool = True) -> dict:
    """The archive's workspace part, checked; ArchiveRefused at the first
    problem. `snapshot_deltas`: whether a snapshot's document may come as a
    version or a delta (archive version 3, docs/adr/0161); before it, every
    one is whole."""
    section = Fields(value, "workspace")
    max_doc = settings.HAICO_DOCUMENT_MAX_CHARS
    parsed: dict = {
        "objective": section.text("objective", max_chars=OBJECTIVE_MAX_CHARS, optional=True, blank=False),
        "objective_history": [],
        "preferences": [
            _preference(v, f"workspace.preferences[{n}]") for n, v in enumerate(section.items("preferences", max_items=MAX_ROWS))
        ],
        "plan": _plan(section.items("plan", max_items=MAX_ROWS), "workspace.plan"),
        "plan_history": [],
        "document": None,
        "artifacts": [],
        "snapshots": [],
    }
    for n, v in enumerate(section.items("objective_history", max_items=MAX_REVISIONS)):
        row = Fields(v, f"workspace.objective_history[{n}]")
        parsed["objective_history"].append(
            {
                "text": row.text("text", max_chars=OBJECTIVE_MAX_CHARS, blank=False),
                "author": row.choice("author", AUTHORS),
                # The access token an MCP author wrote with; archives made before it was kept have none.
                "token": row.text("token", max_chars=TOKEN_NAME_MAX_CHARS, optional=True) or "",
                "turn": row.number("turn", low=0, high=turns),
                "at": row.time("at"),
                "by": person_by(row),
            }
        )
    # Archives made before the plan's history was kept have none.
    for n, v in enumerate(section.items("plan_history", max_items=MAX_REVISIONS)):
        row = Fields(v, f"workspace.plan_history[{n}]")
        parsed["plan_history"].append(
            {
                "action": row.choice("action", PLAN_ACTIONS),
                "summary": row.text("summary", max_chars=PLAN_CHANGE_SUMMARY_MAX_CHARS, blank=False),
                "author": row.choice("author", AUTHORS),
                "token": row.text("token", max_chars=TOKEN_NAME_MAX_CHARS, optional=True) or "",
                "turn": row.number("turn", low=0, high=turns),
                "at": row.time("at"),
                "by": person_by(row),
            }
        )
    document = section.obj("document", optional=True)
    if document is not None:
        revisions: list[dict[str, Any]] = []
        length, rebuilt = None, 0  # the text before, and all the texts, in characters
        for n, v in enumerate(document.items("revisions", max_items=MAX_REVISIONS)):
            row = Fields(v, f"workspace.document.revisions[{n}]")
            text = _revision_text(row, before=length, max_chars=max_doc)
            length = text["length"]
            rebuilt += length
            if rebuilt > MAX_REVISION_CHARS:
                raise ArchiveRefused(
                    f"workspace.document.revisions: more than {MAX_REVISION_CHARS:,} characters of text in all; "
                    "that cannot be imported."
                )
            revision_version = row.number("version", low=1, high=10**9)
            assert revision_version is not None  # not optional
            revisions.append(
                {
                    "version": revision_version,
                    "title": row.text("title", max_chars=DOCUMENT_TITLE_MAX_CHARS),
                    **text,
                    "author": row.choice("author", AUTHORS),
                    "token": row.text("token", max_chars=TOKEN_NAME_MAX_CHARS, optional=True) or "",
                    "turn": row.number("turn", low=0, high=turns, optional=True) or 0,
                    "at": row.time("at"),
                    "by": person_by(row),
                    # Archives before it have none: a restore then reads as a plain save.
                    "restored": row.number("restored", low=0, high=revision_version - 1, optional=True),
                }
            )
        versions = [r["version"] for r in revisions]
        if versions != sorted(set(versions)):
            raise ArchiveRefused("workspace.document.revisions: versions must be distinct and in order.")
        version = document.number("version", low=1, high=10**9)
        if versions and versions[-1] > version:
            raise ArchiveRefused("workspace.document.version: older than its newest revision.")
        decisions, seen_hunks = [], set()
        for n, v in enumerate(document.items("review_decisions", max_items=MAX_REVISIONS)):
            row = Fields(v, f"workspace.document.review_decisions[{n}]")
            key = (row.number("turn", low=0, high=turns), row.number("hunk", low=0, high=MAX_REVISIONS))
            if key in seen_hunks:
                raise ArchiveRefused(f"workspace.document.review_decisions[{n}]: that change was answered twice.")
            seen_hunks.add(key)
            decisions.append(
                {
                    "turn": key[0],
                    "hunk": key[1],
                    "decision": row.choice("decision", DECISIONS),
                    "by": person_by(row),
                    "at": row.time("at"),
                }
            )
        parsed["document"] = {
            "review_decisions": decisions,
            "title": document.text("title", max_chars=DOCUMENT_TITLE_MAX_CHARS),
            "content": document.text("content", max_chars=max_doc),
            "version": version,
            "revisions": revisions,
        }
    for n, v in enumerate(section.items("artifacts", max_items=MAX_ROWS)):
        row = Fields(v, f"workspace.artifacts[{n}]")
        payload = row.value.get("payload")
        if not isinstance(payload, dict):
            raise ArchiveRefused(f"workspace.artifacts[{n}].payload: expected an object.")
        if len(json.dumps(payload, ensure_ascii=False)) > ARTIFACT_PAYLOAD_MAX_CHARS:
            raise ArchiveRefused(f"workspace.artifacts[{n}].payload: too large to import.")
        check_values(payload, f"workspace.artifacts[{n}].payload", max_chars=ARTIFACT_PAYLOAD_MAX_CHARS)
        artifact_type = row.text("artifact_type", max_chars=ARTIFACT_TYPE_MAX_CHARS, blank=False) or ""
        if not ARTIFACT_TYPE_PATTERN.fullmatch(artifact_type):
            # A type this server does not know yet (a newer one's) is a name and imports;
            # every type a thread here holds is one (artifact_create).
            raise ArchiveRefused(
                f"{row.at('artifact_type')}: {artifact_type[:50]!r} is not an artifact type "
                "(lowercase letters, digits and underscores, like bar_chart)."
            )
        parsed["artifacts"].append(
            {
                "artifact_type": artifact_type,
                "title": row.text("title", max_chars=ARTIFACT_TITLE_MAX_CHARS),
                "payload": payload,
                "turn": row.number("turn", low=0, high=turns),
                "at": row.time("at"),
            }
        )
    seen_turns: set[int] = set()
    last_turn = 0
    before: str | None = None  # the document of the snapshot before
    revision_versions: set[int] = (
        {r["version"] for r in parsed["document"]["revisions"]} if parsed["document"] is not None else set()
    )
    for n, v in enumerate(section.items("snapshots", max_items=MAX_ROWS)):
        path = f"workspace.snapshots[{n}]"
        row = Fields(v, path)
        turn = row.number("turn", low=1, high=turns) or 0
        if turn in seen_turns:
            raise ArchiveRefused(f"{path}.turn: turn {turn} has two snapshots.")
        if snapshot_deltas and turn < last_turn:
            # Each is written against the one before it in turn order (workspace_restore_parts).
            raise ArchiveRefused(f"{path}.turn: snapshots come in turn order; turn {turn} comes after turn {last_turn}.")
        seen_turns.add(turn)
        last_turn = max(last_turn, turn)
        carried, before = _snapshot_document(
            row, first=n == 0, before=before, versions=revision_versions, max_chars=max_doc, deltas=snapshot_deltas
        )
        parsed["snapshots"].append(
            {
                "turn": turn,
                "user_message": row.text("user_message", max_chars=MESSAGE_MAX_CHARS),
                "document_title": row.text("document_title", max_chars=DOCUMENT_TITLE_MAX_CHARS),
                **carried,
                "position": n,
                "objective": row.text("objective", max_chars=OBJECTIVE_MAX_CHARS, optional=True),
                "preferences": [
                    _preference(p, f"{path}.preferences[{i}]") for i, p in enumerate(row.items("preferences", max_items=MAX_ROWS))
                ],
                "plan": _plan(row.items("plan", max_items=MAX_ROWS), f"{path}.plan"),
                "at": row.time("at"),
            }
        )
    return parsed
