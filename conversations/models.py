"""Branches, feedback, moderation and the activity log of a thread.

The thread itself is workspace.models.Thread (docs/adr/0006)."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from workspace.models import PersonRecorded, Thread


class BranchLink(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACTIVE = "active", "Active"

    thread = models.OneToOneField(Thread, on_delete=models.CASCADE, related_name="branch_link")
    parent = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="child_links")
    branch_point_turn = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["parent", "status"], name="branch_parent_status_idx")]

    def __str__(self):
        return f"{self.parent_id} @{self.branch_point_turn} -> {self.thread_id}"


FEEDBACK_COMMENT_MAX_CHARS = 5000
FEEDBACK_RATING_MIN, FEEDBACK_RATING_MAX = 1, 5


class Feedback(models.Model):
    """What a person thought of one turn (thread, turn_index): which part of
    the workspace it is about (scope, and which artifact), which quality
    (aspect), a rating from 1 (poor) to 5 (excellent) and an optional comment.

    A 1-5 scale rather than thumbs: the aspects are matters of degree (an
    answer can be mostly correct, the tone a little off), five steps are
    the familiar scale people answer without a legend, and an average per
    aspect stays meaningful in the admin. One entry per person, turn, scope,
    aspect and artifact; leaving it again changes it (conversations.services)."""

    class Scope(models.TextChoices):
        TURN = "turn", "The turn"
        DOCUMENT = "document", "The document"
        PLAN = "plan", "The plan"
        PREFERENCES = "preferences", "The preferences"
        ARTIFACT = "artifact", "An artifact"
        THREAD = "thread", "The whole conversation"

    class Aspect(models.TextChoices):
        HELPFULNESS = "helpfulness", "Helpfulness"
        CORRECTNESS = "correctness", "Correctness"
        PREFERENCES = "preferences", "Followed my preferences"
        TONE = "tone", "Tone"
        OTHER = "other", "Other"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feedback")
    turn_index = models.PositiveIntegerField()
    scope = models.CharField(max_length=12, choices=Scope.choices, default=Scope.TURN)
    # Set exactly when scope is "artifact"; the title is kept so the entry
    # still says what it was about if the artifact goes.
    artifact = models.ForeignKey("workspace.Artifact", on_delete=models.SET_NULL, null=True, blank=True, related_name="feedback")
    artifact_title = models.CharField(max_length=200, blank=True)
    aspect = models.CharField(max_length=20, choices=Aspect.choices, default=Aspect.HELPFULNESS)
    rating = models.PositiveSmallIntegerField()
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "feedback"
        # By the column: "thread" would join the thread to sort by its last
        # activity, in every query of these rows (docs/adr/0099).
        ordering = ["thread_id", "turn_index", "created_at"]
        indexes = [models.Index(fields=["thread", "turn_index"], name="feedback_thread_turn_idx")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(rating__gte=FEEDBACK_RATING_MIN, rating__lte=FEEDBACK_RATING_MAX),
                name="feedback_rating_1_to_5",
            ),
        ]

    def __str__(self):
        return f"{self.thread_id} turn {self.turn_index} {self.scope}/{self.aspect}={self.rating}"

    @property
    def scope_label(self) -> str:
        if self.scope == self.Scope.ARTIFACT:
            return f"Artifact “{self.artifact.title if self.artifact else self.artifact_title}”"
        return self.get_scope_display()


class ModerationAction(models.Model):
    """A staff action on a thread, recorded who / what / when."""

    class Action(models.TextChoices):
        SOFT_DELETE = "soft_delete", "Soft-deleted"
        RESTORE = "restore", "Restored"
        LOCK_PREFERENCE = "lock_preference", "Locked a preference"
        UNLOCK_PREFERENCE = "unlock_preference", "Unlocked a preference"
        RENAME = "rename", "Renamed"
        VIEW_WORKSPACE = "view_workspace", "Viewed the workspace (read-only)"
        # Staff reads in the admin: the review (the whole transcript) and the
        # pages holding a thread's content (docs/adr/0050).
        VIEW_REVIEW = "view_review", "Viewed the review (transcript, snapshots, feedback)"
        VIEW_ADMIN = "view_admin", "Viewed in the admin"
        SHARE = "share", "Changed who the thread is shared with"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="moderation_actions")
    staff_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="moderation_actions"
    )
    action = models.CharField(max_length=30, choices=Action.choices)
    detail = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        # The admin's history lists every thread's actions newest first (docs/adr/0148).
        indexes = [
            models.Index(fields=["thread", "-created_at"], name="moderation_thread_idx"),
            models.Index(fields=["-created_at"], name="moderation_time_idx"),
        ]

    def __str__(self):
        return f"{self.get_action_display()} by {self.staff_user} at {self.created_at:%Y-%m-%d %H:%M}"


class ActivityLogEntry(PersonRecorded):
    """What happened behind a thread's turns that a person may want to know:
    provider errors and retries, cut-off replies, failed and refused tool
    calls, caps reached. `message` is written for the person; `detail` is
    the operator's (status code, body excerpt, exception class, tool
    arguments), shown one click away."""

    class Level(models.TextChoices):
        INFO = "info", "Info"
        WARNING = "warning", "Warning"
        ERROR = "error", "Error"

    class Kind(models.TextChoices):
        PROVIDER_ERROR = "provider_error", "Provider error"
        RETRY = "retry", "Retry"
        TRUNCATION = "truncation", "Cut off"
        TOOL_FAILURE = "tool_failure", "Tool failure"
        REFUSED_CALL = "refused_call", "Refused call"
        CAP_REACHED = "cap_reached", "Cap reached"
        APPROVAL_ASKED = "approval_asked", "Approval asked"
        APPROVAL_ANSWERED = "approval_answered", "Approval answered"
        MCP = "mcp", "MCP"
        OTHER = "other", "Other"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="activity")
    turn_index = models.PositiveIntegerField(null=True, blank=True)
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.INFO)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.OTHER)
    message = models.TextField()
    detail = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "activity log entry"
        verbose_name_plural = "activity log entries"
        ordering = ["-created_at"]
        # The admin's log lists every thread's lines newest first, and narrows by date (docs/adr/0148).
        indexes = [
            models.Index(fields=["thread", "-created_at"], name="activity_thread_idx"),
            models.Index(fields=["-created_at"], name="activity_time_idx"),
        ]

    def __str__(self):
        return f"[{self.level}] {self.message[:60]}"


class TurnSlot(models.Model):
    """A thread's single running-turn slot: which turn runs now, since when
    its server last said it is alive, and whether a Stop was asked for.
    Written only by conversations.turns.slot, with the thread's row locked
    (select_for_update), so one turn runs at a time per thread across server
    processes (docs/adr/0003). A thread gets its row with its first turn."""

    thread = models.OneToOneField(Thread, primary_key=True, on_delete=models.CASCADE, related_name="turn_slot")
    turn_index = models.PositiveIntegerField(null=True, blank=True)
    since = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)

    class Meta:
        verbose_name = "running-turn slot"

    def __str__(self):
        return f"turn {self.turn_index} running" if self.turn_index is not None else "no turn running"


class Turn(PersonRecorded):
    """One user turn as the person sees it: the message, how the turn ended,
    and the answer streamed so far.

    The agent's own history is the LangGraph checkpointer's; this row holds
    what the checkpointer cannot: a running turn's answer as it streams (so a
    server killed mid-answer loses at most the last half second of it), the
    server process that runs it (so its successor can release it at once),
    and endings with no message of their own: interrupted, cut off, failed,
    finished without an answer (docs/adr/0011)."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        COMPLETE = "complete", "Complete"
        STOPPED = "stopped", "Stopped"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"
        # Paused before a hard-to-undo change until the person answers
        # (docs/adr/0017): no process runs it, recovery leaves it alone.
        AWAITING = "awaiting", "Awaiting approval"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveIntegerField()
    user_message = models.TextField()
    model_name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    # While running: what has streamed so far. Once ended: the answer shown.
    answer = models.TextField(blank=True)
    # The answer ended before the model finished it (output limit, a cut stream).
    cut_off = models.BooleanField(default=False)
    # What the person is told about how the turn ended, in plain words.
    notice = models.TextField(blank=True)
    # The server process running it: a stable name (HAICO_INSTANCE) and the
    # id of that process's boot.
    instance = models.CharField(max_length=200, blank=True)
    boot = models.CharField(max_length=32, blank=True)
    retry_of = models.PositiveIntegerField(null=True, blank=True)
    # The mode the turn ran in (docs/adr/0018): the thread's mode may change
    # after it, and a turn resumed after an approval goes on in its own.
    mode = models.CharField(max_length=10, choices=Thread.Mode.choices, default=Thread.Mode.EXECUTE)
    # The passage of the document the message asked about ({"start", "end",
    # "text"}, docs/adr/0019), as checked when it was sent: Retry, Regenerate
    # and Edit send it again, checked again against the document then.
    selection = models.JSONField(null=True, blank=True)
    # The message was sent with a selection the document no longer had as
    # selected (or one unreadable), so it went without it: the key of the
    # note its bubble keeps saying so (message_checks.SELECTION_NOTES).
    selection_note = models.CharField(max_length=40, blank=True, default="")
    # While awaiting approval: the interrupt to resume and what the person is
    # asked ({"interrupt_id", "request"}); the checkpointer holds the paused
    # graph itself, this copy lets a page render the card without it. Once
    # answered it also holds the "decision" and, when the approved call could
    # not be applied, its "outcome" (turns.run); the card stays in copies.
    approval = models.JSONField(null=True, blank=True)
    # The id the sending page gave the message (random, per message): a page
    # whose connection dropped as it went sends it again with the same id,
    # and it is recognised as stored instead of starting a second turn
    # (docs/adr/0126). Empty for a message sent without one; not copied to
    # branches or archives, where it names nothing a page will send again.
    client_message_id = models.CharField(max_length=64, blank=True, default="")
    # A default, not auto_now_add: a branch's copies and an imported
    # archive's turns keep the time they started (docs/adr/0049).
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # By the column: "thread" would join the thread to sort by its last
        # activity, in every query of these rows (docs/adr/0099).
        ordering = ["thread_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["thread", "index"], name="turn_thread_index_unique"),
            # One turn per message a person's page sent, whatever the thread
            # ("Continue from here" makes a new branch for each copy).
            models.UniqueConstraint(
                fields=["person", "client_message_id"],
                condition=~models.Q(client_message_id=""),
                name="turn_person_client_message_unique",
            ),
        ]
        indexes = [models.Index(fields=["status", "instance"], name="turn_status_instance_idx")]

    def __str__(self):
        return f"{self.thread_id} turn {self.index} ({self.status})"


class LayoutPreference(models.Model):
    """How a person keeps the workspace page laid out, on every device they
    sign in from: which side rails are collapsed (docs/adr/0022)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="layout_preference")
    left_rail_collapsed = models.BooleanField(default=False)
    right_rail_collapsed = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"layout of {self.user_id}"


ACCESS_TOKEN_NAME_MAX_CHARS = 100


class AccessToken(models.Model):
    """A personal access token for the MCP server (conversations.mcp_server):
    it acts as its person, on that person's threads only. The secret is shown
    once when made and stored only as its SHA-256 (a random 256-bit secret
    needs no slow hash); `prefix` lets the person tell tokens apart."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="access_tokens")
    name = models.CharField(max_length=ACCESS_TOKEN_NAME_MAX_CHARS)
    prefix = models.CharField(max_length=16)
    secret_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # None: until revoked. After it, the token is refused (401) with a message saying so.
    expires_at = models.DateTimeField(null=True, blank=True)
    # Lists and reads threads only; every tool that writes is refused (conversations.mcp_server).
    read_only = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "-created_at"], name="token_user_idx")]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired


class Account(models.Model):
    """What staff decide about one person (docs/adr/0061, 0064): whether
    their account still waits for approval, and their own token limits.

    A person without a row is approved and has the site's limits: only
    sign-up with HAICO_SIGNUP_APPROVAL on, or staff, make one. A limit of
    None is the site's (HAICO_DAILY_TOKEN_LIMIT / HAICO_MONTHLY_TOKEN_LIMIT),
    0 is no limit."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="account")
    waiting_for_approval = models.BooleanField(default=False)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    daily_token_limit = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Tokens per UTC day; empty: the site's limit; 0: no limit."
    )
    monthly_token_limit = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Tokens per UTC month; empty: the site's limit; 0: no limit."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "account (approval and token limits)"
        verbose_name_plural = "accounts (approval and token limits)"
        indexes = [models.Index(fields=["waiting_for_approval"], name="account_waiting_idx")]

    def __str__(self):
        return f"account of {self.user}"


class Invite(models.Model):
    """A single-use sign-up link staff made (HAICO_SIGNUP=invite,
    docs/adr/0061). Only the SHA-256 of its random secret is kept: the link
    is shown once, when it is made."""

    secret_sha256 = models.CharField(max_length=64, unique=True)
    # The address it is meant for: sign-up with it uses this email. Blank: anyone holding the link.
    email = models.EmailField(blank=True)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="invites_made")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_by = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="invite_used"
    )
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"invite for {self.email or 'anyone'} ({self.created_at:%Y-%m-%d})"


class ModelUsage(models.Model):
    """The tokens of one model call (docs/adr/0063): who it was for, in
    which thread and turn, at which provider and model, as the provider
    reported them (`estimated` when it reported none and the text was
    counted). Written by the turn runner, a batch at a time, never per
    token; read for the person's usage page, their token limits and the
    admin's totals."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_usage")
    # Kept when a thread or turn goes (a branch discarded): the tokens were used all the same.
    thread = models.ForeignKey(Thread, on_delete=models.SET_NULL, null=True, blank=True, related_name="model_usage")
    turn = models.ForeignKey(Turn, on_delete=models.SET_NULL, null=True, blank=True, related_name="model_usage")
    turn_index = models.PositiveIntegerField(null=True, blank=True)
    # None: the environment's provider (or one deleted since; its name stays).
    provider = models.ForeignKey("agent.Provider", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    provider_name = models.CharField(max_length=100)
    model = models.CharField(max_length=200)
    model_key = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    estimated = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    # The call's own key, made when the turn counts it (docs/adr/0154): its
    # estimate stored while it streams and its real figure are one row, and
    # a batch stored again after a commit whose answer was lost (a failover)
    # finds its rows already there. Rows stored before keys have none.
    key = models.UUIDField(null=True, unique=True, default=uuid.uuid4, editable=False)

    class Meta:
        verbose_name = "model call"
        verbose_name_plural = "model calls"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user", "created_at"], name="usage_user_time_idx"),
            models.Index(fields=["created_at"], name="usage_time_idx"),
        ]

    def __str__(self):
        return f"{self.model} ({self.provider_name}): {self.input_tokens} in, {self.output_tokens} out"

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ArchiveImport(models.Model):
    """A thread still being written from an imported archive
    (conversations.archive, docs/adr/0049). While this row exists the thread
    is hidden (`is_deleted`, so every owner-scoped lookup refuses it) and
    the import writes it in short transactions, touching `touched_at` after
    each; the row goes in the transaction that shows the thread. A row left
    untouched for long belongs to an import whose server died: the turn
    recovery removes the thread and its checkpointer history."""

    thread = models.OneToOneField(Thread, on_delete=models.CASCADE, related_name="archive_import")
    started_at = models.DateTimeField(auto_now_add=True)
    touched_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["touched_at"], name="archive_import_touched_idx")]

    def __str__(self):
        return f"import of {self.thread_id} since {self.started_at:%Y-%m-%d %H:%M}"


class OpenPage(models.Model):
    """One open socket of a thread's page: who has the thread open now
    (docs/adr/0087). Written when a socket connects and removed when it
    closes, never per turn. The server process holding it (`instance`,
    `boot`, as a turn's) refreshes `seen_at` now and then, so the rows of a
    server that died are removed by any other within a minute."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="open_pages")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="open_pages")
    channel_name = models.CharField(max_length=200, unique=True)
    instance = models.CharField(max_length=200)
    boot = models.CharField(max_length=32)
    opened_at = models.DateTimeField(default=timezone.now)
    seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["thread", "user"], name="openpage_thread_user_idx"),
            models.Index(fields=["instance", "boot"], name="openpage_instance_boot_idx"),
            models.Index(fields=["seen_at"], name="openpage_seen_at_idx"),
        ]

    def __str__(self):
        return f"{self.user_id} on {self.thread_id} ({self.instance})"


class ClientDocumentRead(models.Model):
    """What an MCP token was shown of one version of a thread's document:
    its characters `start` to `end`, read with read_document or
    written by the token itself from a version it had seen whole. An MCP
    client keeps no session here, so this is how a whole rewrite it sends is
    checked against what it has seen, as the in-app agent's is against its
    run's reads (docs/adr/0111). Rows older than a day are removed as new
    ones are written."""

    token = models.ForeignKey(AccessToken, on_delete=models.CASCADE, related_name="document_reads")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="client_document_reads")
    version = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["token", "thread", "version"], name="clientread_token_version_idx")]

    def __str__(self):
        return f"{self.token_id} read {self.start}–{self.end} of version {self.version} of {self.thread_id}"


class ClientWorkspaceListing(models.Model):
    """The rows an MCP token was last listed of a thread, in the order it was
    given their #N indices: the objective, the plan's steps and the
    preferences, each as it read then (None: that part was never listed).
    An index the client sends names the row it was listed at that #N,
    wherever it is now, as the in-app agent's names the row its prompt
    showed; a row someone changed since keeps their change
    (docs/adr/0117). One row per token and thread, replaced as it reads."""

    token = models.ForeignKey(AccessToken, on_delete=models.CASCADE, related_name="workspace_listings")
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="client_workspace_listings")
    objective = models.TextField(null=True, blank=True)
    # [[step id, text, done], ...] and [[preference id, title, subtitle, kind], ...]
    plan = models.JSONField(null=True, blank=True)
    preferences = models.JSONField(null=True, blank=True)
    listed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["token", "thread"], name="clientlisting_one_per_token_thread")]

    def __str__(self):
        return f"what {self.token_id} was last listed of {self.thread_id}"
