"""Threads, their owner link and turn counter, branches, feedback, moderation."""

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

# A running turn refreshes its claim every few seconds (conversations.services
# TURN_KEEPALIVE, from agent.runner), so a claim not refreshed for this long
# belongs to a server that died mid-turn: it no longer counts as running.
STALE_TURN_AFTER = timedelta(seconds=90)


class Thread(models.Model):
    """One conversation and its owner (the seeds' conversation_users link).

    The UUID primary key is also the LangGraph checkpointer thread id, so it is
    fresh for every thread and never reused. `turn_index` is monotonic: it is
    bumped once per user message and tags everything that turn produces.
    The running-turn columns are the single guard that keeps one turn at a
    time per thread across server processes.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads")
    title = models.CharField(max_length=200, default="New thread")
    turn_index = models.PositiveIntegerField(default=0)
    is_deleted = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True)
    running_turn_index = models.PositiveIntegerField(null=True, blank=True)
    running_since = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)

    class Meta:
        indexes = [
            models.Index(fields=["owner", "is_deleted", "-last_activity_at"], name="thread_owner_activity_idx"),
        ]
        ordering = ["-last_activity_at"]

    def __str__(self):
        return f"{self.title} ({self.id})"

    @property
    def is_turn_running(self) -> bool:
        return self.running_turn_index is not None

    def live_running_turn(self, now=None) -> int | None:
        """The turn in progress, unless its claim went stale (its server died)."""
        if self.running_turn_index is None or self.running_since is None:
            return None
        if (now or timezone.now()) - self.running_since >= STALE_TURN_AFTER:
            return None
        return self.running_turn_index


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


class Feedback(models.Model):
    class Scope(models.TextChoices):
        TURN = "turn", "Turn"
        THREAD = "thread", "Thread"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feedback")
    turn_index = models.PositiveIntegerField()
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.TURN)
    aspect = models.CharField(max_length=50, default="overall")
    rating = models.SmallIntegerField()
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "feedback"
        indexes = [models.Index(fields=["thread", "turn_index"], name="feedback_thread_turn_idx")]

    def __str__(self):
        return f"{self.thread_id} turn {self.turn_index} {self.aspect}={self.rating}"


class ModerationAction(models.Model):
    """A staff action on a thread, recorded who / what / when."""

    class Action(models.TextChoices):
        SOFT_DELETE = "soft_delete", "Soft-deleted"
        RESTORE = "restore", "Restored"
        LOCK_PREFERENCE = "lock_preference", "Locked a preference"
        UNLOCK_PREFERENCE = "unlock_preference", "Unlocked a preference"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="moderation_actions")
    staff_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="moderation_actions"
    )
    action = models.CharField(max_length=30, choices=Action.choices)
    detail = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["thread", "-created_at"], name="moderation_thread_idx")]

    def __str__(self):
        return f"{self.get_action_display()} by {self.staff_user} at {self.created_at:%Y-%m-%d %H:%M}"


class ActivityLogEntry(models.Model):
    """Diagnostics a person may want to see (model warnings, turn errors)."""

    class Level(models.TextChoices):
        INFO = "info", "Info"
        WARNING = "warning", "Warning"
        ERROR = "error", "Error"

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="activity")
    turn_index = models.PositiveIntegerField(null=True, blank=True)
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.INFO)
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "activity log entry"
        verbose_name_plural = "activity log entries"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["thread", "-created_at"], name="activity_thread_idx")]

    def __str__(self):
        return f"[{self.level}] {self.message[:60]}"
