"""Reads of the workspace. No function here writes."""

import bisect
import threading
from collections import Counter, OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from enum import IntEnum
from functools import cached_property
from operator import attrgetter
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import Count, Max, Min
from django.http import Http404

from . import people, plan_tree, write_counts
from .diff import DiffLine, Hunk, TextDiff, change_hunks, diff_text, revert_hunks
from .merge import merge_lines_keeping_ours
from .models import (
    Artifact,
    Document,
    DocumentReviewDecision,
    DocumentRevision,
    Objective,
    ObjectiveRevision,
    PlanChange,
    Preference,
    Thread,
    ThreadMember,
    Todo,
    WorkspaceSnapshot,
)

STANDING_OBJECTIVE = (
    "Understand what the user is trying to achieve, clearing up any ambiguity and "
    "asking again if needed, then state it as a clear, specific objective."
)


# --- threads: access lives here so every layer shares it (docs/adr/0084) -----


class Access(IntEnum):
    """What a person may do in a thread; each level includes the ones below.
    VIEW: read everything (a viewer, a link viewer); EDIT: every write of the
    workspace and the chat (an editor); OWN: share, rename, delete, export
    the archive (the owner only)."""

    VIEW = 1
    EDIT = 2
    OWN = 3


ROLE_ACCESS = {ThreadMember.Role.VIEWER: Access.VIEW, ThreadMember.Role.EDITOR: Access.EDIT}


def threads_for_user(*, user: User) -> list[Thread]:
    """The person's own live threads, most recently active first."""
    return list(Thread.objects.filter(owner=user, is_deleted=False).order_by("-last_activity_at"))


def any_owns_threads(*, user_ids) -> bool:
    """Whether any of these accounts owns a thread, deleted or not (an index
    probe: the staff's refused account deletion, docs/adr/0129)."""
    return Thread.objects.filter(owner_id__in=list(user_ids)).exists()


def threads_shared_with(*, user: User) -> list[Thread]:
    """Other people's live threads shared with `user`, most recently active
    first, each with its owner loaded and `shared_role` set."""
    memberships = ThreadMember.objects.filter(user=user, thread__is_deleted=False).select_related("thread__owner")
    threads = []
    for membership in memberships.order_by("-thread__last_activity_at"):
        thread = membership.thread
        thread.shared_role = membership.get_role_display()  # type: ignore[attr-defined]  # for the list only
        threads.append(thread)
    return threads


def access_to(*, user: User | AnonymousUser | None, thread: Thread) -> Access | None:
    """The level `user` has on `thread` (None: none at all)."""
    # getattr: a socket's scope may hold no user at all.
    if user is None or not getattr(user, "is_authenticated", False) or thread.is_deleted:
        return None
    person = cast(User, user)
    if thread.owner_id == person.pk:
        return Access.OWN
    role = ThreadMember.objects.filter(thread=thread, user=person).values_list("role", flat=True).first()
    return None if role is None else ROLE_ACCESS[ThreadMember.Role(role)]


def thread_and_access_for_user(*, user: User | AnonymousUser | None, thread_id) -> tuple[Thread | None, Access | None]:
    """The live thread and `user`'s level on it; (None, None) when they have none."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None, None
    thread = Thread.objects.filter(pk=thread_id, is_deleted=False).first()
    access = access_to(user=user, thread=thread) if thread is not None else None
    return (thread, access) if access is not None else (None, None)


def thread_for_user(*, user: User | AnonymousUser | None, thread_id, level: Access) -> Thread | None:
    """The live thread if `user` has at least `level` on it, else None."""
    thread, access = thread_and_access_for_user(user=user, thread_id=thread_id)
    return thread if access is not None and access >= level else None


class ViewOnly(Http404):
    """A write to a thread the person may only view: a 404 to everything
    that treats it as one, which a page may answer with VIEW_ONLY_MESSAGE
    (the person sees the thread, so its existence is no secret to them)."""


def get_thread_for_user_or_404(*, user: User | AnonymousUser, thread_id, level: Access) -> Thread:
    """A thread the person may not act on at `level` is a 404, never a 403
    that would confirm it exists to a stranger; a viewer's write raises
    ViewOnly, a 404 that says why to whoever answers it."""
    thread, access = thread_and_access_for_user(user=user, thread_id=thread_id)
    if thread is None or access is None:
        raise Http404("No such thread.")
    if access < level:
        # An editor at an owner's route is answered as a stranger: "view
        # only" would be untrue, and the owner's routes are the owner's.
        raise ViewOnly("View only.") if access == Access.VIEW and level == Access.EDIT else Http404("No such thread.")
    return thread


# --- surfaces ------------------------------------------------------------------


def objective_for(*, thread: Thread) -> Objective | None:
    return Objective.objects.filter(thread=thread).first()


def objective_text_for(*, thread: Thread) -> str | None:
    """The concrete objective, or None while the standing one applies."""
    return Objective.objects.filter(thread=thread).values_list("text", flat=True).first()


@dataclass(frozen=True)
class ObjectiveHistoryEntry:
    text: str | None  # None means the standing objective
    author: str | None  # ObjectiveRevision.Author; None for the standing objective
    turn_index: int | None  # the turn counter when it was written; None for the standing objective
    at: object
    token_name: str = ""  # the access token of an MCP author
    person_name: str = ""  # who wrote it, or whose turn or token it was (workspace.people)


def objective_history(*, thread: Thread) -> list[ObjectiveHistoryEntry]:
    """Every value the objective has had, newest (the live value) first, each
    with who set it and when; the standing objective it started from last."""
    revisions = [
        ObjectiveHistoryEntry(
            text=r.text,
            author=r.author,
            turn_index=r.turn_index,
            at=r.created_at,
            token_name=r.token_name,
            person_name=r.person_name,
        )
        for r in ObjectiveRevision.objects.filter(thread=thread).select_related("person").order_by("-id")
    ]
    live = objective_for(thread=thread)
    if live is not None and (not revisions or revisions[0].text != live.text):
        # Written without the service (no revision): still the live value.
        revisions.insert(0, ObjectiveHistoryEntry(text=live.text, author=None, turn_index=None, at=live.updated_at))
    standing = ObjectiveHistoryEntry(text=None, author=None, turn_index=None, at=None)
    return [*revisions, standing]


# The plan's history is read a page at a time, newest first: what a person
# opens it for is the latest changes, and a thread's history has no end
# (docs/adr/0090). "Show older changes" asks for the page before the oldest shown.
PLAN_HISTORY_PAGE = 50


@dataclass(frozen=True)
class PlanHistoryPage:
    entries: list[PlanChange]  # newest first, their people loaded
    has_older: bool = False  # more entries before the last of these

    @property
    def oldest_id(self) -> int | None:
        return self.entries[-1].pk if self.entries else None


def plan_history(
    *, thread: Thread, before: int | None = None, after: int | None = None, limit: int = PLAN_HISTORY_PAGE
) -> PlanHistoryPage:
    """The plan's changes, newest first, at most `limit`; with `before`,
    those older than the entry of that id; with `after`, those newer than
    it: the `limit` right after it (not the newest `limit`), so a page that
    asks again from the newest of these leaves no gap (docs/adr/0092)."""
    rows = PlanChange.objects.filter(thread=thread).select_related("person")
    if after is not None:
        return PlanHistoryPage(entries=list(rows.filter(pk__gt=after).order_by("id")[:limit])[::-1])
    if before is not None:
        rows = rows.filter(pk__lt=before)
    entries = list(rows.order_by("-id")[: limit + 1])
    return PlanHistoryPage(entries=entries[:limit], has_older=len(entries) > limit)


# The one definition of each list's order, shared by every read of it: the
# page, the agent's prompt and its 1-based indices, the services.
# Preferences: hard before soft, then by position. The database gives them
# by position and `in_preference_order` puts the hard ones first (a stable
# sort): an ORDER BY on a CASE costs more to build than the whole read.
PREFERENCE_POSITION = ("position", "id")


def in_preference_order(rows: list, kind=attrgetter("kind")) -> list:
    """`rows` (read in PREFERENCE_POSITION order), hard before soft."""
    return sorted(rows, key=lambda row: kind(row) != Preference.Kind.HARD)


# The plan: pre-order, the order of its outline numbers.
PLAN_ORDER = ("position", "id")


def preferences_for(*, thread: Thread) -> list[Preference]:
    """Hard before soft, then by position: the order the agent's 1-based indices use."""
    return in_preference_order(list(Preference.objects.filter(thread=thread).order_by(*PREFERENCE_POSITION)))


@dataclass(frozen=True)
class ShownPreference:
    """One preference as its panel and the agent's prompt show it. `after`
    is the id of the preference before it in its own list (hard or soft), ""
    for the first, set only where a patch needs it."""

    pk: int
    title: str
    subtitle: str
    kind: str  # Preference.Kind
    locked: bool
    after: int | str | None = None


def shown_preferences(*, thread_id) -> list[ShownPreference]:
    """The preferences in preferences_for's order, as plain rows: a hundred
    model instances cost a page about four times the read itself."""
    rows = Preference.objects.filter(thread_id=thread_id).order_by(*PREFERENCE_POSITION)
    return in_preference_order([ShownPreference(*row) for row in rows.values_list("id", "title", "subtitle", "kind", "locked")])


def todos_for(*, thread: Thread) -> list[Todo]:
    """The plan in pre-order (the order its 1-based indices and outline numbers use)."""
    return list(Todo.objects.filter(thread=thread).order_by(*PLAN_ORDER))


@dataclass(frozen=True)
class PlanStep:
    """One step as the plan panel shows it. `after` is the id of the step
    before it ("" for the first), set only where a patch needs it."""

    pk: int
    text: str
    done: bool
    depth: int
    number: str
    after: int | str | None = None


def plan_steps(*, thread: Thread) -> list[PlanStep]:
    """The plan in pre-order with outline numbers: what the tree view shows."""
    rows = list(Todo.objects.filter(thread_id=thread.pk).order_by(*PLAN_ORDER).values_list("id", "text", "done", "depth"))
    numbers = plan_tree.outline_numbers([depth for _pk, _text, _done, depth in rows])
    return [
        PlanStep(pk=pk, text=text, done=done, depth=depth, number=number)
        for (pk, text, done, depth), number in zip(rows, numbers)
    ]


@dataclass(frozen=True)
class PlanPatch:
    """What brings a page's plan up to date: the touched steps that exist,
    each with its place (`after`), in plan order; the ids that are gone;
    every step's (id, outline number) in plan order; how many are done."""

    steps: list[PlanStep]
    removed: list[int]
    numbers: list[tuple[int, str]]
    done: int


def plan_patch(*, thread: Thread, ids=None, steps: list[PlanStep] | None = None) -> PlanPatch:
    """The patch for the steps among `ids` (None: all). Reads the outline
    (ids, depths, done) and only the touched rows' text; with `steps` (the
    whole plan as `plan_steps` reads it: a kept reading's, docs/adr/0127)
    reads nothing."""
    if steps is not None:
        return _plan_patch_of(steps, ids)
    outline = list(Todo.objects.filter(thread=thread).order_by(*PLAN_ORDER).values_list("id", "depth", "done"))
    numbers = plan_tree.outline_numbers([depth for _, depth, _ in outline])
    touched = Todo.objects.filter(thread=thread)
    if ids is not None:
        touched = touched.filter(pk__in=set(ids))
    texts = {pk: (text, done) for pk, text, done in touched.values_list("id", "text", "done")}
    wanted = set(ids) if ids is not None else set(texts)
    steps = []
    for i, (pk, depth, _) in enumerate(outline):
        if pk in texts:
            text, done = texts[pk]
            steps.append(PlanStep(pk, text, done, depth, numbers[i], after=outline[i - 1][0] if i else ""))
    return PlanPatch(
        steps=steps,
        removed=sorted(wanted - set(texts)),
        numbers=[(pk, number) for (pk, _, _), number in zip(outline, numbers)],
        done=sum(1 for _, _, done in outline if done),
    )


def _plan_patch_of(steps: list[PlanStep], ids) -> PlanPatch:
    """plan_patch's answer from the whole plan in pre-order."""
    wanted = set(ids) if ids is not None else {step.pk for step in steps}
    touched = [replace(step, after=steps[i - 1].pk if i else "") for i, step in enumerate(steps) if step.pk in wanted]
    return PlanPatch(
        steps=touched,
        removed=sorted(wanted - {step.pk for step in touched}),
        numbers=[(step.pk, step.number) for step in steps],
        done=sum(1 for step in steps if step.done),
    )


def preferences_patch(
    *, thread: Thread, ids=None, preferences: list[ShownPreference] | None = None
) -> tuple[list[ShownPreference], list[int]]:
    """Like plan_patch, for preferences: each touched one that exists with
    its place (`after`), and the ids that are gone. `preferences`: all of
    them as `shown_preferences` reads them (a kept reading's), read otherwise."""
    if preferences is None:
        preferences = shown_preferences(thread_id=thread.pk)
    wanted = set(ids) if ids is not None else {p.pk for p in preferences}
    found: list[ShownPreference] = []
    previous: dict[str, int] = {}
    for preference in preferences:
        if preference.pk in wanted:
            found.append(replace(preference, after=previous.get(preference.kind, "")))
        previous[preference.kind] = preference.pk
    return found, sorted(wanted - {p.pk for p in found})


def document_for(*, thread: Thread) -> Document:
    """The thread's document; an unsaved empty one (version 0) if none was written yet."""
    document = Document.objects.filter(thread=thread).first()
    if document is None:
        document = Document(thread=thread, title="Untitled", content="", version=0)
    return document


def document_version(*, thread: Thread) -> int:
    """The document's version (0 before its first write), without its text."""
    return Document.objects.filter(thread=thread).values_list("version", flat=True).first() or 0


# --- the document's versions ------------------------------------------------------

# Versions listed in the history, newest first; older ones are still kept
# and can be compared and restored by number.
DOCUMENT_HISTORY_LIMIT = 100


def mcp_author_label(token_name: str, person_name: str = "") -> str:
    """Who wrote through MCP: the person whose token it was, with its name."""
    who = person_name or "A person"
    return f"{who}, through MCP (token “{token_name}”)" if token_name else f"{who}, through MCP"


def author_label(author: str, *, person_name: str = "", token_name: str = "") -> str:
    """Who wrote a revision, the same for every viewer (docs/adr/0085): the
    person's name (workspace.people), the agent, or the system."""
    if author == DocumentRevision.Author.MCP:
        return mcp_author_label(token_name, person_name)
    if author == DocumentRevision.Author.PERSON:
        return person_name or "A person"
    return DocumentRevision.Author(author).label if author in DocumentRevision.Author.values else ""


@dataclass(frozen=True)
class DocumentVersion:
    version: int
    title: str
    author: str  # DocumentRevision.Author; "" for version 0
    created_at: object  # None for version 0
    # The turn an agent's edit was made in: the last turn started before it
    # (one turn runs at a time per thread, docs/adr/0003). None for the
    # person's and the system's edits, which may fall between turns.
    turn_index: int | None = None
    token_name: str = ""  # the access token of an MCP author
    person_name: str = ""  # who wrote it, or whose turn or token it was (workspace.people)
    restored_from: int | None = None  # the version a person's restore brought back

    @property
    def author_label(self) -> str:
        return author_label(self.author, person_name=self.person_name, token_name=self.token_name)


@dataclass(frozen=True)
class DocumentHistory:
    current_version: int
    versions: list[DocumentVersion]  # newest first, at most DOCUMENT_HISTORY_LIMIT
    total: int  # every kept version (the document may have more than it lists)


def _turns_started(thread: Thread) -> tuple[list, list[int]]:
    """(capture times, turn numbers) of the thread's snapshots, oldest first."""
    rows = WorkspaceSnapshot.objects.filter(thread=thread).order_by("captured_at").values_list("captured_at", "turn_index")
    return [at for at, _ in rows], [turn for _, turn in rows]


def _turn_at(turns: tuple[list, list[int]], at) -> int | None:
    """The last turn started at or before `at`."""
    times, numbers = turns
    index = bisect.bisect_right(times, at)
    return numbers[index - 1] if index else None


def document_history(*, thread: Thread, limit: int = DOCUMENT_HISTORY_LIMIT) -> DocumentHistory:
    """The document's kept versions, newest first, without their text."""
    document = Document.objects.filter(thread=thread).only("pk", "version").first()
    if document is None:
        return DocumentHistory(current_version=0, versions=[], total=0)
    revisions = DocumentRevision.objects.filter(document=document)
    rows = list(revisions.select_related("person").order_by("-version")[:limit])
    turns = _turns_started(thread) if any(r.author == DocumentRevision.Author.AGENT for r in rows) else ([], [])
    versions = [
        DocumentVersion(
            version=r.version,
            title=r.title,
            author=r.author,
            created_at=r.created_at,
            token_name=r.token_name,
            turn_index=_turn_at(turns, r.created_at) if r.author == DocumentRevision.Author.AGENT else None,
            person_name=r.person_name,
            restored_from=r.restored_from,
        )
        for r in rows
    ]
    return DocumentHistory(current_version=document.version, versions=versions, total=revisions.count())


def document_authors_between(*, thread: Thread, after_version: int, before_version: int) -> set[str]:
    """The kinds of author (DocumentRevision.Author) of the versions after
    `after_version` and before `before_version`."""
    return set(
        DocumentRevision.objects.filter(
            document__thread=thread, version__gt=after_version, version__lt=before_version
        ).values_list("author", flat=True)
    )


@dataclass(frozen=True)
class DocumentRestore:
    """The document's current version is a person's restore of an earlier one."""

    restored_from: int
    person_id: int | None  # None once the account is gone
    person_name: str


def document_restore_shown(document: Document) -> DocumentRestore | None:
    """Whether `document`'s current version is a restore, and whose: what its
    patch tells the other open pages (docs/adr/0164)."""
    if document.pk is None:  # never written: the empty document stands in
        return None
    revision = (
        DocumentRevision.objects.filter(document=document, version=document.version, restored_from__isnull=False)
        .select_related("person")
        .first()
    )
    if revision is None or revision.restored_from is None:
        return None
    return DocumentRestore(revision.restored_from, revision.person_id, revision.person_name)


@dataclass(frozen=True)
class SavesUndone:
    """One person's saves after the version a restore brought back."""

    person_name: str
    first_version: int
    last_version: int
    saves: int


def document_saves_a_restore_undid(*, thread: Thread, restored: int, through: int, restorer) -> list[SavesUndone]:
    """Who else saved the document (themselves or through MCP) after version
    `restored` and up to version `through`, the version the restore was
    based on: the changes the restore took out of the text. Saves after
    `through` were merged into it, not undone. First saver first; counted
    by the database, however many autosaves lie between."""
    rows = list(
        DocumentRevision.objects.filter(
            document__thread=thread,
            version__gt=restored,
            version__lte=through,
            author__in=(DocumentRevision.Author.PERSON, DocumentRevision.Author.MCP),
        )
        .exclude(person=restorer)
        .values("person_id", "person_username")
        .annotate(first=Min("version"), last=Max("version"), saves=Count("id"))
        .order_by("first")
    )
    users = get_user_model().objects.in_bulk({row["person_id"] for row in rows if row["person_id"] is not None})
    return [
        SavesUndone(
            people.recorded_name(users.get(row["person_id"]), row["person_username"]),
            row["first"],
            row["last"],
            row["saves"],
        )
        for row in rows
    ]


def document_version_listed(*, thread: Thread, version: int) -> bool:
    """Whether the history's list (`document_history`) shows `version`: one
    of the newest DOCUMENT_HISTORY_LIMIT kept versions."""
    newer = DocumentRevision.objects.filter(document__thread=thread, version__gt=version)
    return DocumentRevision.objects.filter(document__thread=thread, version=version).exists() and (
        newer.count() < DOCUMENT_HISTORY_LIMIT
    )


def document_version_text(*, thread: Thread, version: int) -> tuple[str, str] | None:
    """(title, content) of one kept version; version 0 is the empty document
    before its first write. None when that version is not kept."""
    if version == 0:
        return "Untitled", ""
    revision = DocumentRevision.objects.filter(document__thread=thread, version=version).select_related("body").first()
    return (revision.title, revision.content) if revision is not None else None


@dataclass(frozen=True)
class DocumentDiff:
    old_version: int
    new_version: int
    old_title: str
    new_title: str
    text: TextDiff
    # Who wrote each side ("" for version 0, the empty document).
    old_by: str = ""
    new_by: str = ""

    @property
    def title_changed(self) -> bool:
        return self.old_title != self.new_title

    @property
    def identical(self) -> bool:
        return self.text.identical and not self.title_changed


# What a comparison of two versions shows at once, as a review does
# (docs/adr/0110): its first changes, at most so many of their lines and so
# many characters in all. Two far-apart versions of a long document differ
# in most of its lines: shown whole, comparing the first version of a
# 199 000-character document with now was 871 KB and most of a second.
DIFF_CHANGES_SHOWN = 30
DIFF_LINES_SHOWN = 200
DIFF_CHARS_SHOWN = 40_000


def document_diff(*, thread: Thread, old_version: int, new_version: int) -> DocumentDiff | None:
    """What changed from `old_version` to `new_version` (either may be the
    older), its first changes only; None when either is not kept."""
    old = _revision(thread, old_version)
    new = _revision(thread, new_version)
    if old is None or new is None:
        return None
    return DocumentDiff(
        old_version,
        new_version,
        old[0],
        new[0],
        diff_text(old[1], new[1], max_changes=DIFF_CHANGES_SHOWN, max_lines=DIFF_LINES_SHOWN, max_chars=DIFF_CHARS_SHOWN),
        old_by=old[2],
        new_by=new[2],
    )


def _revision(thread: Thread, version: int) -> tuple[str, str, str] | None:
    """(title, content, who wrote it) of one kept version, as document_version_text."""
    if version == 0:
        return "Untitled", "", ""
    revision = DocumentRevision.objects.filter(document__thread=thread, version=version).select_related("body", "person").first()
    if revision is None:
        return None
    who = author_label(revision.author, person_name=revision.person_name, token_name=revision.token_name)
    return revision.title, revision.content, who


def artifacts_for(*, thread: Thread, artifact_type: str | None = None, limit: int | None = None) -> list[Artifact]:
    """Newest first."""
    qs = Artifact.objects.filter(thread=thread).order_by("-id")
    if artifact_type:
        qs = qs.filter(artifact_type=artifact_type)
    if limit:
        qs = qs[:limit]
    return list(qs)


def artifact_index_for(*, thread: Thread) -> list[Artifact]:
    """Newest first, without payloads (which may be large): enough to list them."""
    return list(Artifact.objects.filter(thread=thread).defer("payload").order_by("-id"))


def artifact_for(*, thread: Thread, artifact_id: int) -> Artifact | None:
    return Artifact.objects.filter(thread=thread, pk=artifact_id).first()


def latest_artifact_for(*, thread: Thread) -> Artifact | None:
    return Artifact.objects.filter(thread=thread).order_by("-id").first()


def snapshot_messages_for(*, thread: Thread) -> list[tuple[int, str]]:
    """(turn_index, user_message) of every turn, oldest first, without the
    snapshot's document copy (read on every page load of the chat)."""
    return list(WorkspaceSnapshot.objects.filter(thread=thread).order_by("turn_index").values_list("turn_index", "user_message"))


def snapshot_for(*, thread: Thread, turn_index: int) -> WorkspaceSnapshot | None:
    """One snapshot with its stored texts, read back as captured."""
    return (
        WorkspaceSnapshot.objects.filter(thread=thread, turn_index=turn_index)
        .select_related("document_body", "preferences_body", "todos_body")
        .first()
    )


def snapshot_index_for(*, thread: Thread) -> list[Mapping[str, Any]]:
    """Every snapshot of the thread, oldest first, without what it stored:
    id, turn_index, user_message, captured_at (docs/adr/0072)."""
    return list(
        WorkspaceSnapshot.objects.filter(thread=thread)
        .order_by("turn_index")
        .values("id", "turn_index", "user_message", "captured_at")
    )


@dataclass(frozen=True)
class WorkspaceAfterTurn:
    """The workspace as it stood after one turn, as plain values (what a
    branch starts from: docs/adr/0014). Preferences hard first, the plan in
    pre-order; no positions, they are the list order."""

    document_title: str
    document_content: str
    objective_text: str | None
    preferences: list[dict]  # {"title", "subtitle", "kind", "locked"}
    todos: list[dict]  # {"text", "done", "depth"}


def workspace_after_turn(*, thread: Thread, turn_index: int) -> WorkspaceAfterTurn | None:
    """After turn k: the snapshot of turn k+1 when a later turn exists (it
    also holds the person's edits made before that turn began: the state
    exactly as the agent saw it next), else the live rows. None when a
    later turn exists but its snapshot does not."""
    if turn_index < thread.turn_index:
        snapshot = snapshot_for(thread=thread, turn_index=turn_index + 1)
        if snapshot is None:
            return None
        return WorkspaceAfterTurn(
            document_title=snapshot.document_title or "Untitled",
            document_content=snapshot.document_content,
            objective_text=snapshot.objective_text,
            preferences=[
                {
                    "title": p.get("title", ""),
                    "subtitle": p.get("subtitle", ""),
                    "kind": p.get("kind", Preference.Kind.SOFT),
                    "locked": bool(p.get("locked")),
                }
                for p in snapshot.preferences_json
            ],
            todos=[
                {"text": t.get("text", ""), "done": bool(t.get("done")), "depth": int(t.get("depth") or 0)}
                for t in sorted(snapshot.todos_json, key=lambda t: t.get("position", 0))
            ],
        )
    reading = workspace_reading_for(thread=thread)
    document = reading.document or UNWRITTEN_DOCUMENT
    return WorkspaceAfterTurn(
        document_title=document.title,
        document_content=document.content,
        objective_text=reading.objective_text,
        preferences=[{"title": p.title, "subtitle": p.subtitle, "kind": p.kind, "locked": p.locked} for p in reading.preferences],
        todos=[{"text": step.text, "done": step.done, "depth": step.depth} for step in reading.todos],
    )


@dataclass(frozen=True)
class DocumentRow:
    """The document as the prompt shows it."""

    title: str
    content: str
    updated_at: object  # None only for UNWRITTEN_DOCUMENT
    version: int


# A document never written yet reads as an empty "Untitled" one at version 0.
UNWRITTEN_DOCUMENT = DocumentRow(title="Untitled", content="", updated_at=None, version=0)


@dataclass(frozen=True)
class ArtifactRow:
    """An artifact without its payload (which may be large)."""

    id: int
    artifact_type: str
    turn_index: int
    title: str


@dataclass(frozen=True)
class WorkspaceReading:
    """The workspace as plain values, read with one light query per surface:
    what the agent's prompt needs before every model call (no model
    instances, no artifact payload)."""

    objective_text: str | None
    preferences: list[ShownPreference]  # hard first
    todos: list[PlanStep]  # pre-order, with outline numbers
    document: DocumentRow | None  # None: never written
    latest_artifact: ArtifactRow | None


_OBJECTIVE_AND_DOCUMENT = ("objective__text", "document__title", "document__content", "document__updated_at", "document__version")


def _document_row(title, content, updated_at, version) -> DocumentRow | None:
    return DocumentRow(title, content, updated_at, version) if version is not None else None


def _latest_artifact(thread_id) -> ArtifactRow | None:
    rows = (
        Artifact.objects.filter(thread_id=thread_id).order_by("-id").values_list("id", "artifact_type", "turn_index", "title")[:1]
    )
    return next((ArtifactRow(*row) for row in rows), None)


def _read_workspace(thread_id, *, counts: bool = True) -> tuple[tuple[int, ...], WorkspaceReading]:
    """The thread's write counts (unless not `counts`) and its reading, the counts read first (in
    the objective's and document's statement): each surface is then at
    least as new as its count says."""
    # Four reads: the objective and the document are the thread's one-to-ones,
    # read with it in one statement (each ORM query costs more to build than to run).
    counted = Thread.WRITE_COUNTS.values() if counts else ()
    row = Thread.objects.filter(pk=thread_id).values_list(*_OBJECTIVE_AND_DOCUMENT, *counted).get()
    objective_text, title, content, updated_at, version = row[: len(_OBJECTIVE_AND_DOCUMENT)]
    reading = WorkspaceReading(
        objective_text=objective_text,
        preferences=shown_preferences(thread_id=thread_id),
        todos=plan_steps(thread=Thread(pk=thread_id)),
        document=_document_row(title, content, updated_at, version),
        latest_artifact=_latest_artifact(thread_id),
    )
    return tuple(row[len(_OBJECTIVE_AND_DOCUMENT) :]), reading


def workspace_reading_for(*, thread: Thread) -> WorkspaceReading:
    return _read_workspace(thread.pk, counts=False)[1]


# thread id -> (its write counts, its reading then), the most recently used last.
_current_readings: OrderedDict[Any, tuple[tuple[int, ...], WorkspaceReading]] = OrderedDict()
_current_readings_lock = threading.Lock()
# Readings kept besides those held: the threads read most recently.
CURRENT_READINGS_KEPT = 128
# thread id -> how many of this process's turns hold its reading (docs/adr/0134).
_held: Counter = Counter()
_NOT_READ = object()


def _reread(thread_id, reading: WorkspaceReading, moved: set[str], objective_text=_NOT_READ) -> WorkspaceReading:
    """`reading` with the surfaces in `moved` read again; `objective_text`:
    the objective's, if already read with the counts."""
    fresh: dict[str, Any] = {}
    if objective_text is not _NOT_READ and "objective" in moved:
        fresh["objective_text"] = objective_text
        moved = moved - {"objective"}
    if "objective" in moved and "document" in moved:
        objective_text, *document = Thread.objects.filter(pk=thread_id).values_list(*_OBJECTIVE_AND_DOCUMENT).get()
        fresh.update(objective_text=objective_text, document=_document_row(*document))
    elif "objective" in moved:
        fresh["objective_text"] = Thread.objects.filter(pk=thread_id).values_list("objective__text", flat=True).get()
    elif "document" in moved:
        fresh["document"] = _document_row(*Thread.objects.filter(pk=thread_id).values_list(*_OBJECTIVE_AND_DOCUMENT[1:]).get())
    if "preferences" in moved:
        fresh["preferences"] = shown_preferences(thread_id=thread_id)
    if "plan" in moved:
        fresh["todos"] = plan_steps(thread=Thread(pk=thread_id))
    if "artifacts" in moved:
        fresh["latest_artifact"] = _latest_artifact(thread_id)
    return replace(reading, **fresh)


def surface_writes_of(thread_id) -> int:
    """Thread.surface_writes as stored now, without reading the thread."""
    try:
        return sum(write_counts.read(thread_id))
    except Thread.DoesNotExist:
        return 0


def workspace_reading_current(*, thread: Thread, expected: Collection[str] = ()) -> WorkspaceReading:
    """What `workspace_reading_for` reads now, from this process's copy of
    an earlier reading where the thread's write counts (Thread.WRITE_COUNTS)
    say a surface has not changed since: one statement when nothing has,
    plus one per surface that has (docs/adr/0093). Every write to a surface
    raises its count in its own transaction, in whichever process it runs,
    so the copy is never older than the database. Inside a transaction the
    whole workspace is read: its writes may still be rolled back.
    `expected`: surfaces known to have been written (a change just
    committed); the objective, the thread's one-to-one, is then read in
    the counts' statement (docs/adr/0127)."""
    if transaction.get_connection().in_atomic_block:
        return workspace_reading_for(thread=thread)
    counts, reading, moved = _from_kept_reading(thread.pk, with_objective="objective" in expected)
    if not moved:
        with _current_readings_lock:
            if thread.pk in _current_readings:
                _current_readings.move_to_end(thread.pk)
        return reading
    _keep(thread.pk, counts, reading)
    return reading


def _from_kept_reading(thread_id, *, with_objective: bool = False) -> tuple[tuple, WorkspaceReading, bool]:
    """The thread's write counts and its reading: this process's kept one
    with the surfaces whose counts moved read again, or, where none is
    kept, the whole workspace read; and whether anything was read besides
    the counts (`False`: the kept reading is current as it is)."""
    with _current_readings_lock:
        kept = _current_readings.get(thread_id)
    if kept is None:
        counts, reading = _read_workspace(thread_id)
        return counts, reading, True
    kept_counts, reading = kept
    row = write_counts.read(thread_id, with_objective=with_objective)
    counts = tuple(row[: len(Thread.WRITE_COUNTS)])
    moved = {surface for surface, was, now in zip(Thread.WRITE_COUNTS, kept_counts, counts) if was != now}
    if moved:
        reading = _reread(thread_id, reading, moved, *row[len(Thread.WRITE_COUNTS) :])
    return counts, reading, bool(moved)


def workspace_reading_kept(*, thread: Thread, expected: Collection[str] = ()) -> WorkspaceReading | None:
    """What `workspace_reading_current` answers, where this process keeps a
    reading of the thread (a turn runs or ran on it here) and no transaction
    is open; None otherwise, reading nothing. The live patches of a write
    take what they show from it after the write commits: the next model
    call's prompt then finds its reading up to date (docs/adr/0127)."""
    if transaction.get_connection().in_atomic_block:
        return None
    with _current_readings_lock:
        kept = thread.pk in _current_readings
    if not kept:
        return None
    try:
        return workspace_reading_current(thread=thread, expected=expected)
    except Thread.DoesNotExist:
        return None  # deleted meanwhile: the patches read what is left, as before


def plan_written(thread_id, counts: tuple[int, ...], steps: list[PlanStep]) -> None:
    """A plan write committed: `counts`, the thread's write counts as its
    own counting statement left them (write_counts.raise_counts), `steps`
    the plan it left, as `plan_steps` would read it. Where this process
    keeps a reading of the thread whose plan is the one just before (its
    plan count one less), that reading takes `steps` at the new count, so
    the write's live patches and the next prompt need not read the plan
    again. The count proves it: every plan write raises it in its own
    transaction, so one more means no other plan write committed between
    the kept plan and this one; a write after it counts after it
    (docs/adr/0140). Otherwise the kept reading is left as it is, to be
    read again by its counts."""
    plan = list(Thread.WRITE_COUNTS).index("plan")
    with _current_readings_lock:
        kept = _current_readings.get(thread_id)
        if kept is None or kept[0][plan] != counts[plan] - 1:
            return
        kept_counts, reading = kept
        _current_readings[thread_id] = (
            (*kept_counts[:plan], counts[plan], *kept_counts[plan + 1 :]),
            replace(reading, todos=steps),
        )


def _keep(thread_id, counts: tuple[int, ...], reading: WorkspaceReading) -> None:
    with _current_readings_lock:
        _current_readings[thread_id] = (counts, reading)
        _current_readings.move_to_end(thread_id)
        _trim()


def _trim() -> None:
    """Drop the least recently used readings beyond CURRENT_READINGS_KEPT,
    never a held one (the caller holds the lock)."""
    if len(_current_readings) <= CURRENT_READINGS_KEPT:
        return
    unheld = [thread_id for thread_id in _current_readings if thread_id not in _held]
    for thread_id in unheld[: max(0, len(unheld) - CURRENT_READINGS_KEPT)]:
        del _current_readings[thread_id]


def workspace_reading_hold(thread_id) -> None:
    """A turn of this process runs on the thread: its kept reading (the
    claim's, docs/adr/0099, then each prompt's) stays until
    `workspace_reading_release`, however many other threads are read
    meanwhile. Every running turn reads its thread before each model call;
    with more turns running than CURRENT_READINGS_KEPT, an unheld reading
    would be dropped before its turn came back to it, and every prompt would
    read the whole workspace again (docs/adr/0134). Held readings are still
    checked against the write counts on every read."""
    with _current_readings_lock:
        _held[thread_id] += 1


def workspace_reading_release(thread_id) -> None:
    """The turn that held the thread's reading ended: the reading is kept
    like any other, the most recently used first."""
    with _current_readings_lock:
        _held[thread_id] -= 1
        if _held[thread_id] <= 0:
            del _held[thread_id]
        _trim()


def workspace_reading_kept_on_commit(*, thread: Thread) -> WorkspaceReading:
    """What `workspace_reading_for` reads, kept as this process's copy for
    `workspace_reading_current` once the transaction it is read in commits,
    never if that rolls back. A turn's snapshot reads the workspace in the
    claim's transaction; kept, that reading is its first prompt's, which
    then costs one statement. The counts are read first, in the same
    transaction, so each surface is at least as new as its count, as for
    any kept reading.

    Where this process keeps a reading of the thread already (its turn
    before ran here, or a page of it was patched here), the claim starts
    from it as a prompt does (`workspace_reading_current`): the counts in
    one statement, then only the surfaces whose counts moved. The claim's
    transaction has written no surface before this (docs/adr/0099), so its
    counts are the committed ones and the rule of docs/adr/0093 holds as
    for any kept reading: four of a turn's five reads fewer when nothing
    moved since its last turn (docs/adr/0140, round three)."""
    counts, reading, _ = _from_kept_reading(thread.pk)
    transaction.on_commit(lambda: _keep(thread.pk, counts, reading))
    return reading


# --- the review of an agent turn's document changes (docs/adr/0019) --------------------


@dataclass(frozen=True)
class ReviewHunk:
    hunk: Hunk
    # Its new lines are still in the document exactly: Undo can put the old
    # ones back without touching anything written since.
    undoable: bool


# What a review shows at once: its first changes, and of their lines at
# most so many in all (each change shows at least its first line). A rewrite
# of a whole chapter is thousands of changed lines, and the review goes with
# the page and with every push of the document to every open tab: in full,
# a 150 000-character rewrite made both a megabyte. What is left out is
# said; the changes after these show as these are answered, and Keep all /
# Undo all answer every one.
REVIEW_HUNKS_SHOWN = 30
REVIEW_ROWS_SHOWN = 200
REVIEW_CHARS_SHOWN = 40_000


@dataclass(frozen=True)
class ShownHunk:
    entry: ReviewHunk
    rows: tuple[DiffLine, ...]  # its first lines, as many as the review shows
    rows_left_out: int


@dataclass(frozen=True)
class DocumentReview:
    """What the latest agent turn that changed the document changed: the text
    before its first agent revision against its last, as hunks, less those
    the person already kept or undid."""

    turn_index: int
    before_version: int  # the version just before the turn's first agent edit
    after_version: int  # the turn's last agent edit
    after_content: str
    hunks: list[ReviewHunk]  # still to answer, in document order
    total: int  # every hunk of the turn's change
    kept: int
    undone: int
    # Grows with every write of the document and every answer: a page shows
    # a review it receives only if it is not older than the one it shows.
    stamp: int = 0

    @property
    def open(self) -> bool:
        return bool(self.hunks)

    @cached_property
    def shown(self) -> list[ShownHunk]:
        """The changes the review shows now, each with the lines it shows."""
        shown, rows_left, chars_left = [], REVIEW_ROWS_SHOWN, REVIEW_CHARS_SHOWN
        for entry in self.hunks[:REVIEW_HUNKS_SHOWN]:
            rows = entry.hunk.rows
            count = 0
            for row in rows:
                if count and (rows_left <= 0 or chars_left < len(row.text)):
                    break
                count += 1
                rows_left -= 1
                chars_left -= len(row.text)
            shown.append(ShownHunk(entry=entry, rows=rows[:count], rows_left_out=len(rows) - count))
        return shown

    @property
    def hunks_left_out(self) -> int:
        """Changes after the ones shown, still to answer."""
        return max(0, len(self.hunks) - REVIEW_HUNKS_SHOWN)


def _with_others_edits(thread: Thread, before: str, between: range, agents: set[int]) -> str | None:
    """The text before the turn's first agent edit with every edit someone
    else made between the turn's agent edits (the person, another editor, an
    MCP client) put on it, so the review compares the agent's edits only: a
    paragraph the person rewrote between two of the agent's writes is theirs,
    not a change of the agent's to keep or undo. A line they changed after
    the agent had changed it is theirs as it stands. None: a version is
    missing."""
    # Their consecutive versions (a person's autosaves while the model
    # thinks) are one change each: two reads and one merge per gap.
    runs: list[list[int]] = []
    for version in between:
        if version in agents:
            continue
        if runs and runs[-1][1] == version - 1:
            runs[-1][1] = version
        else:
            runs.append([version, version])
    base = before
    for first, last in runs:
        previous = document_version_text(thread=thread, version=first - 1)
        theirs = document_version_text(thread=thread, version=last)
        if previous is None or theirs is None:
            return None
        base = merge_lines_keeping_ours(previous[1], theirs[1], base)
    return base


def document_review(*, thread: Thread, document: Document | None = None) -> DocumentReview | None:
    """The review of the latest agent turn's document changes, or None when
    no agent turn changed the document (since turn numbers were recorded).
    `document`: the row as already read (locked, in the undo service)."""
    if document is None:
        document = Document.objects.filter(thread=thread).only("pk", "content", "version").first()
    if document is None:
        return None
    agent = DocumentRevision.objects.filter(document=document, author=DocumentRevision.Author.AGENT, turn_index__gt=0)
    turn_index = agent.order_by("-version").values_list("turn_index", flat=True).first()
    if turn_index is None:
        return None
    versions = [v for v in agent.filter(turn_index=turn_index).values_list("version", flat=True)]
    before_version, after_version = min(versions) - 1, max(versions)
    before = document_version_text(thread=thread, version=before_version)
    after = document_version_text(thread=thread, version=after_version)
    if before is None or after is None:
        return None
    base = _with_others_edits(thread, before[1], range(before_version + 1, after_version), set(versions))
    if base is None:
        return None
    hunks = change_hunks(base, after[1])
    decisions = dict(
        DocumentReviewDecision.objects.filter(document=document, turn_index=turn_index).values_list("hunk", "decision")
    )
    pending = [hunk for hunk in hunks if hunk.index not in decisions]
    _, reverted, _ = revert_hunks(after[1], document.content, pending) if pending else ("", [], [])
    undoable = set(reverted)
    return DocumentReview(
        turn_index=turn_index,
        before_version=before_version,
        after_version=after_version,
        after_content=after[1],
        hunks=[ReviewHunk(hunk=hunk, undoable=hunk.index in undoable) for hunk in pending],
        total=len(hunks),
        kept=sum(1 for d in decisions.values() if d == DocumentReviewDecision.Decision.KEPT),
        undone=sum(1 for d in decisions.values() if d == DocumentReviewDecision.Decision.UNDONE),
        stamp=document.version + DocumentReviewDecision.objects.filter(document=document).count(),
    )
