"""The shared workspace of one thread: the thread itself, its objective,
preferences, plan, document, artifacts, and the per-turn snapshots that make
every past context replayable.

The thread lives here, at the bottom of the app graph, because every surface
hangs off it and every layer needs to find a person's thread (docs/adr/0006).
"""

import json
import re
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import models
from django.utils import timezone

from . import content_store, people

OBJECTIVE_MAX_CHARS = 1000
PREFERENCE_TITLE_MAX_CHARS = 200
PREFERENCE_SUBTITLE_MAX_CHARS = 500
TODO_TEXT_MAX_CHARS = 1000
TODO_MAX_DEPTH = 8
DOCUMENT_TITLE_MAX_CHARS = 200
ARTIFACT_TITLE_MAX_CHARS = 200
ARTIFACT_TYPE_MAX_CHARS = 50
# What an artifact's type is: a name (bar_chart, data_table), never free
# text. An archive's type reached the JSON download's file name as written
# (a quote, a path, a line break: docs/adr/0025).
ARTIFACT_TYPE_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
# The name of the access token an MCP client wrote with (conversations'
# AccessToken.name has the same limit).
TOKEN_NAME_MAX_CHARS = 100


class PersonRecorded(models.Model):
    """Who did it: the user, and their username as it was then, kept when the
    user is gone or never existed on this server (an imported archive).
    Empty for what no person did (scripts). Shown through `person_name`
    (workspace.people, docs/adr/0085)."""

    person = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    person_username = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        abstract = True

    @property
    def person_name(self) -> str:
        return people.recorded_name(self.person, self.person_username)


class Thread(models.Model):
    """One conversation and its owner: also the thread-user link (docs/adr/0001).

    The UUID primary key is also the LangGraph checkpointer thread id, so it is
    fresh for every thread and never reused. `turn_index` is monotonic: it is
    bumped once per user message and tags everything that turn produces.
    Which turn runs now is the conversation layer's (conversations.models.TurnSlot).

    `mode` is what the agent may do in the thread's next turns (the chat's
    "Mode" selector): Explore reads and answers, Plan changes only the
    objective and the plan, Execute may change everything (docs/adr/0018).
    """

    class Mode(models.TextChoices):
        EXPLORE = "explore", "Explore"
        PLAN = "plan", "Plan"
        EXECUTE = "execute", "Execute"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads")
    title = models.CharField(max_length=200, default="New thread")
    turn_index = models.PositiveIntegerField(default=0)
    is_deleted = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)  # a default: an imported thread keeps its own
    last_activity_at = models.DateTimeField(auto_now_add=True)
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.EXECUTE)
    # The model the person last chose in this thread's chat ("" for the
    # default); the chat offers it again while it is still configured.
    chat_model = models.CharField(max_length=200, blank=True, default="")
    # The secret of the thread's read-only link ("" when it has none). A new
    # link gets a new secret, so a revoked link never works again (docs/adr/0084).
    share_link_key = models.CharField(max_length=64, blank=True, default="")
    # How many committed transactions changed each surface the agent's prompt
    # reads: the write services raise a count in the transaction that writes
    # the surface (services.common.changed), so a copy of the prompt's
    # reading kept in memory is known to be current by reading these alone
    # (selectors.workspace_reading_current, docs/adr/0093). They only ever
    # grow, in the database: `save` never writes them from an instance.
    objective_writes = models.PositiveBigIntegerField(default=0, editable=False)
    preferences_writes = models.PositiveBigIntegerField(default=0, editable=False)
    plan_writes = models.PositiveBigIntegerField(default=0, editable=False)
    document_writes = models.PositiveBigIntegerField(default=0, editable=False)
    artifacts_writes = models.PositiveBigIntegerField(default=0, editable=False)

    # The surface (workspace.events) each count follows.
    WRITE_COUNTS = {
        "objective": "objective_writes",
        "preferences": "preferences_writes",
        "plan": "plan_writes",
        "document": "document_writes",
        "artifacts": "artifacts_writes",
    }

    class Meta:
        # The table keeps the name it had when conversations owned the model.
        db_table = "conversations_thread"
        indexes = [
            models.Index(fields=["owner", "is_deleted", "-last_activity_at"], name="thread_owner_activity_idx"),
        ]
        ordering = ["-last_activity_at"]

    def __str__(self):
        return f"{self.title} ({self.id})"

    @property
    def surface_writes(self) -> int:
        """All the counts together: a page names it as it was rendered, and
        its socket is told to read the workspace again if it grew before the
        socket joined the thread's pushes (conversations.consumers)."""
        return sum(getattr(self, count) for count in self.WRITE_COUNTS.values())

    def save(self, *args, **kwargs):
        # An instance read before a write would put the older counts back,
        # and a reading cached under a count the database reaches again
        # would be taken for current: an existing row's save leaves them out.
        if not self._state.adding and kwargs.get("update_fields") is None and not kwargs.get("force_insert"):
            left_out = self.get_deferred_fields() | set(self.WRITE_COUNTS.values())
            kwargs["update_fields"] = [
                field.attname for field in self._meta.concrete_fields if not field.primary_key and field.attname not in left_out
            ]
        super().save(*args, **kwargs)


class ThreadMember(models.Model):
    """A person the owner shared the thread with, and their role. The owner
    is `Thread.owner`, never a row here. `via_link`: the person opened the
    thread's read-only link; revoking the link deletes every such row, so it
    takes away every access the link gave (docs/adr/0084)."""

    class Role(models.TextChoices):
        VIEWER = "viewer", "Viewer"
        EDITOR = "editor", "Editor"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="thread_memberships")
    role = models.CharField(max_length=6, choices=Role.choices, default=Role.VIEWER)
    via_link = models.BooleanField(default=False)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["thread", "user"], name="thread_member_unique")]
        indexes = [models.Index(fields=["user", "thread"], name="thread_member_user_idx")]

    def __str__(self):
        return f"{self.user} ({self.role}) on {self.thread_id}"


class ThreadMemberName(models.Model):
    """A name the thread is shared under, as the owner's Share dialog lists
    it (docs/adr/0137): what the owner typed (a username or an email), or,
    `by_link`, the username of a person who opened the read-only link. Each
    has its own role; the person's `ThreadMember` row has the highest of
    their names' roles (`via_link` when all are the link's), and goes with
    the last of them. A person named two ways is listed twice, each line
    changed and removed on its own, so nothing in the dialog tells that an
    email and a username are one person."""

    member = models.ForeignKey(ThreadMember, on_delete=models.CASCADE, related_name="names")
    name = models.CharField(max_length=254)
    role = models.CharField(max_length=6, choices=ThreadMember.Role.choices, default=ThreadMember.Role.VIEWER)
    by_link = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["member", "name", "by_link"], name="thread_member_name_unique")]

    def __str__(self):
        return f"{self.name} ({self.role}{', by the link' if self.by_link else ''})"


class Objective(models.Model):
    thread = models.OneToOneField(Thread, on_delete=models.CASCADE, related_name="objective")
    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return self.text[:80]


class Preference(models.Model):
    class Kind(models.TextChoices):
        HARD = "hard", "Hard"
        SOFT = "soft", "Soft"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="preferences")
    title = models.CharField(max_length=PREFERENCE_TITLE_MAX_CHARS)
    subtitle = models.CharField(max_length=PREFERENCE_SUBTITLE_MAX_CHARS, blank=True)
    kind = models.CharField(max_length=4, choices=Kind.choices, default=Kind.SOFT)
    locked = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "position"], name="pref_thread_position_idx")]

    def __str__(self):
        return f"[{self.kind}] {self.title}"


class Todo(models.Model):
    """One step of the plan. The plan is a pre-order tree: rows ordered by
    `position` (0..n-1, dense), nesting given by `depth`; a row's depth is at
    most one more than the row before it, and the first row has depth 0."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="todos")
    text = models.CharField(max_length=TODO_TEXT_MAX_CHARS)
    done = models.BooleanField(default=False)
    position = models.PositiveIntegerField()
    depth = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "position"], name="todo_thread_position_idx")]

    def __str__(self):
        return f"{'  ' * self.depth}[{'x' if self.done else ' '}] {self.text}"


class Document(models.Model):
    thread = models.OneToOneField(Thread, on_delete=models.CASCADE, related_name="document")
    title = models.CharField(max_length=DOCUMENT_TITLE_MAX_CHARS, default="Untitled")
    content = models.TextField(blank=True)
    # Bumped on every write; a save based on an older version is a conflict.
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.title} v{self.version}"


class DocumentRevision(PersonRecorded):
    """One version of a document, as written: every write of the document
    adds one in the same transaction, so a save based on any earlier version
    can be merged against that version's text (docs/adr/0013). Write-once;
    none is ever removed.

    The text is stored by content (`body`, a `ContentBlob`), normally as a
    delta against the document's previous revision, so an autosave costs
    its edit rather than the whole text (docs/adr/0078). `content` reads it
    back exactly, or raises `content_store.CorruptContent`; the services
    that add revisions store the text (workspace.services.document)."""

    class Author(models.TextChoices):
        PERSON = "person", "Person"
        AGENT = "agent", "Agent"
        SYSTEM = "system", "System"  # scripts, data migrations, staff tooling
        # The person, through an MCP client with one of their access tokens
        # (docs/adr/0026): theirs, not an agent turn's; `token_name` says which.
        MCP = "mcp", "Through MCP"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    title = models.CharField(max_length=DOCUMENT_TITLE_MAX_CHARS)
    body = models.ForeignKey("ContentBlob", on_delete=models.PROTECT, related_name="+")
    author = models.CharField(max_length=6, choices=Author.choices)
    # For an MCP author: the name of the token it wrote with, as it was then.
    token_name = models.CharField(max_length=TOKEN_NAME_MAX_CHARS, blank=True, default="")
    # The thread's turn counter when it was written: an agent's revision
    # with turn_index N was written by turn N (what the review of a turn's
    # changes reads, docs/adr/0019). 0 for revisions from before it was kept.
    turn_index = models.PositiveIntegerField(default=0)
    # A default, not auto_now_add, so an imported archive keeps its times (docs/adr/0049).
    created_at = models.DateTimeField(default=timezone.now)
    # The earlier version a person's restore brought back, which this one is
    # (merged with what was saved meanwhile): the history says so, and the
    # other open pages are told whose restore undid the changes after it
    # (docs/adr/0164). None for every other write.
    restored_from = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            # Also the index every lookup uses: (document, version).
            models.UniqueConstraint(fields=["document", "version"], name="docrev_unique_document_version"),
        ]
        ordering = ["document", "-version"]

    def __str__(self):
        return f"{self.document_id} v{self.version} ({self.author})"

    @property
    def content(self) -> str:
        try:
            return _read_blob(self.body)
        except content_store.CorruptContent as exc:
            raise content_store.CorruptContent(
                f"Version {self.version} of document {self.document_id} cannot be read back exactly: {exc}"
            ) from None


@dataclass(frozen=True)
class PageSave:
    """Which save of which editor page a save is (docs/adr/0139): `page`, an
    id the page made when it loaded; `number`, counting the page's saves;
    `unanswered_from`, the number of the page's first save it had no answer
    to (the save's own number when every earlier one was answered). What
    `DocumentPageSave` keeps."""

    page: str
    number: int
    unanswered_from: int
    # A page that took over the unanswered saves of a page the tab left (a
    # reload, Back): that page's id, its last number and its first
    # unanswered one. Only a base to merge against, and a bar to that page's
    # late saves; never the new page's own numbering, so two tabs going on
    # from one left page never refuse or undo each other.
    took_over: "PageSave | None" = None


class DocumentPageSave(models.Model):
    """The last save an editor page had written, for the saves whose answer
    never reached that page (docs/adr/0139): which page (an id it made when
    it loaded), the save's number among that page's saves, the version it
    wrote, and the title and text it carried, the text as a delta from that
    version's own (empty when it was written as sent). The page's next save
    names its saves still unanswered; when this one is among them, that save
    is merged against what this one carried (the text the person's later
    edits started from), and a save of the page numbered before it is never
    written. One row per page and person, replaced by each save; not copied
    into branches or archives (no page sends them again)."""

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    person = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    page = models.CharField(max_length=64)
    number = models.PositiveIntegerField()
    version = models.PositiveIntegerField()
    sent_title = models.CharField(max_length=DOCUMENT_TITLE_MAX_CHARS)
    sent_delta = models.TextField(blank=True, default="")
    # False: another page took this one's unanswered saves over, and none of
    # them was written; the row only bars this page's saves up to `number`,
    # and carries nothing to merge against.
    carried = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document", "person", "page"], name="docpagesave_unique_page"),
        ]

    def __str__(self):
        return f"{self.document_id} page {self.page} save {self.number} wrote v{self.version}"


class DocumentReviewDecision(PersonRecorded):
    """The person's answer to one hunk of the changes an agent turn made to
    the document: kept (dismissed from the review) or undone (reverted by a
    new person-authored revision). The hunks are derived from the turn's
    revisions, so a hunk is named by its index among them (docs/adr/0019).
    Write-once: one answer per hunk."""

    class Decision(models.TextChoices):
        KEPT = "kept", "Kept"
        UNDONE = "undone", "Undone"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="review_decisions")
    turn_index = models.PositiveIntegerField()
    hunk = models.PositiveIntegerField()
    decision = models.CharField(max_length=6, choices=Decision.choices)
    # A default, not auto_now_add: a branch's copies and an imported
    # archive's answers keep when they were given (a branch takes only those
    # given before its next turn began).
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document", "turn_index", "hunk"], name="docreview_unique_hunk"),
        ]

    def __str__(self):
        return f"{self.document_id} turn {self.turn_index} hunk {self.hunk}: {self.decision}"


class Artifact(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="artifacts")
    artifact_type = models.CharField(max_length=ARTIFACT_TYPE_MAX_CHARS)
    title = models.CharField(max_length=ARTIFACT_TITLE_MAX_CHARS, blank=True)
    payload = models.JSONField(default=dict)
    turn_index = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)  # a default: imports keep their times

    class Meta:
        indexes = [
            models.Index(fields=["thread", "-id"], name="artifact_thread_newest_idx"),
            models.Index(fields=["thread", "artifact_type"], name="artifact_thread_type_idx"),
        ]

    def __str__(self):
        return f"#{self.pk} {self.artifact_type}: {self.title}"


class ContentBlob(models.Model):
    """One distinct text, stored once however many snapshots hold it
    (docs/adr/0015). Keyed by the SHA-256 of its UTF-8 bytes; held whole
    (`text`) or as a delta (`delta`, workspace.text_delta) against `base`,
    at most workspace.content_store.MAX_CHAIN deltas from the whole text
    `keyframe`. Write-once; read through workspace.content_store."""

    sha256 = models.CharField(max_length=64, unique=True)
    length = models.PositiveIntegerField()  # characters of the text
    text = models.TextField(null=True, blank=True)
    delta = models.TextField(null=True, blank=True)
    base = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    keyframe = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    depth = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(text__isnull=False, delta__isnull=True, base__isnull=True, keyframe__isnull=True, depth=0)
                    | models.Q(text__isnull=True, delta__isnull=False, base__isnull=False, keyframe__isnull=False)
                ),
                name="contentblob_whole_or_delta",
            ),
        ]
        indexes = [models.Index(fields=["keyframe", "depth"], name="contentblob_chain_idx")]

    def __str__(self):
        kind = "whole" if self.text is not None else f"delta {self.depth}"
        return f"{self.sha256[:12]} ({self.length} chars, {kind})"


def _read_blob(blob: ContentBlob) -> str:
    return content_store.read_text(ContentBlob, blob)


class WorkspaceSnapshot(models.Model):
    """The workspace as the agent saw it at the start of one turn. Write-once.

    The document text, preferences and plan are stored by content
    (`ContentBlob`): a snapshot whose document did not change refers to the
    same blob as the one before, and a small edit costs a small delta
    (docs/adr/0015). `document_content`, `preferences_json` and `todos_json`
    read them back exactly as captured."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="snapshots")
    turn_index = models.PositiveIntegerField()
    user_message = models.TextField()
    document_title = models.CharField(max_length=DOCUMENT_TITLE_MAX_CHARS, blank=True)
    document_body = models.ForeignKey(ContentBlob, on_delete=models.PROTECT, related_name="+")
    objective_text = models.TextField(null=True, blank=True)
    # JSON text of [{title, subtitle, kind, locked}] and [{text, done, position, depth}].
    preferences_body = models.ForeignKey(ContentBlob, on_delete=models.PROTECT, related_name="+")
    todos_body = models.ForeignKey(ContentBlob, on_delete=models.PROTECT, related_name="+")
    captured_at = models.DateTimeField(default=timezone.now)  # a default: imports keep their times

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "turn_index"], name="snapshot_unique_thread_turn"),
        ]
        # By the column: "thread" would join the thread to sort by its last
        # activity, in every query of these rows (docs/adr/0099).
        ordering = ["thread_id", "turn_index"]

    def __str__(self):
        return f"{self.thread_id} turn {self.turn_index}"

    @property
    def document_content(self) -> str:
        return _read_blob(self.document_body)

    @property
    def preferences_json(self) -> list:
        return json.loads(_read_blob(self.preferences_body))

    @property
    def todos_json(self) -> list:
        return json.loads(_read_blob(self.todos_body))


class ObjectiveRevision(PersonRecorded):
    """One change of a thread's objective, by whom and when (the agent's
    `set_objective`, the person's edit, or a script). Write-once; the newest
    is the live value. `turn_index` is the thread's turn counter when it
    was written: during turn N (the agent) or after it (the person)."""

    Author = DocumentRevision.Author

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="objective_revisions")
    text = models.TextField()
    author = models.CharField(max_length=6, choices=Author.choices)
    token_name = models.CharField(max_length=TOKEN_NAME_MAX_CHARS, blank=True, default="")  # as on DocumentRevision
    turn_index = models.PositiveIntegerField(default=0)
    # A default, not auto_now_add, so migration 0005 can date the history it recovers.
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["thread", "-id"], name="objrev_thread_newest_idx")]
        # By the column: "thread" would join the thread to sort by its last
        # activity, in every query of these rows (docs/adr/0099).
        ordering = ["thread_id", "-id"]

    def __str__(self):
        return f"{self.thread_id} by {self.author}: {self.text[:60]}"


# The most a plan change's summary holds: a tool call's list of steps is
# cut to a few names, each to PLAN_SUMMARY_STEP_CHARS (workspace.services.plan).
PLAN_CHANGE_SUMMARY_MAX_CHARS = 4000


class PlanChange(PersonRecorded):
    """One change of a thread's plan, by whom and when: a person's add,
    rename, tick, move or delete, or one tool call of the agent (which may
    touch several steps). Write-once, written by the plan services in the
    change's own transaction (docs/adr/0090).

    `summary` says what changed as it read then ('Added “Draft intro”',
    'Moved “Survey” up: 3 → 2'): the steps are named by their text, which a
    later rename or delete does not change here. `turn_index` is the
    thread's turn counter when it was written, as on ObjectiveRevision."""

    class Action(models.TextChoices):
        ADDED = "added", "Added"
        RENAMED = "renamed", "Renamed"
        TICKED = "ticked", "Ticked"
        UNTICKED = "unticked", "Unticked"
        TOGGLED = "toggled", "Ticked and unticked"  # one tool call that did both
        MOVED = "moved", "Moved"
        REMOVED = "removed", "Removed"

    Author = DocumentRevision.Author

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="plan_changes")
    action = models.CharField(max_length=8, choices=Action.choices)
    summary = models.TextField()
    author = models.CharField(max_length=6, choices=Author.choices)
    token_name = models.CharField(max_length=TOKEN_NAME_MAX_CHARS, blank=True, default="")  # as on DocumentRevision
    turn_index = models.PositiveIntegerField(default=0)
    # A default, not auto_now_add, so an imported archive keeps its times (docs/adr/0049).
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["thread", "-id"], name="planchange_thread_newest_idx")]
        # By the column: "thread" would join the thread to sort by its last
        # activity, in every query of these rows (docs/adr/0099).
        ordering = ["thread_id", "-id"]

    def __str__(self):
        return f"{self.thread_id} by {self.author}: {self.summary[:60]}"
