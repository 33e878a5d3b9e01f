"""Branches, feedback, moderation and the activity log of a thread.

The thread itself is workspace.models.Thread (docs/adr/0006)."""

from django.conf import settings
from django.db import models

from workspace.models import Thread


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
