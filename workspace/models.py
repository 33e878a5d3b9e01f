"""The shared workspace of one thread: objective, preferences, plan, document,
artifacts, and the per-turn snapshots that make every past context replayable."""

from django.db import models

from conversations.models import Thread

OBJECTIVE_MAX_CHARS = 1000
PREFERENCE_TITLE_MAX_CHARS = 200
PREFERENCE_SUBTITLE_MAX_CHARS = 500
TODO_TEXT_MAX_CHARS = 1000
TODO_MAX_DEPTH = 8
DOCUMENT_TITLE_MAX_CHARS = 200
ARTIFACT_TITLE_MAX_CHARS = 200


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


class Artifact(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="artifacts")
    artifact_type = models.CharField(max_length=50)
    title = models.CharField(max_length=ARTIFACT_TITLE_MAX_CHARS, blank=True)
    payload = models.JSONField(default=dict)
    turn_index = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(fields=["thread", "-id"], name="artifact_thread_newest_idx"),
            models.Index(fields=["thread", "artifact_type"], name="artifact_thread_type_idx"),
        ]

    def __str__(self):
        return f"#{self.pk} {self.artifact_type}: {self.title}"


class WorkspaceSnapshot(models.Model):
    """The workspace as the agent saw it at the start of one turn. Write-once."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="snapshots")
    turn_index = models.PositiveIntegerField()
    user_message = models.TextField()
    document_title = models.CharField(max_length=DOCUMENT_TITLE_MAX_CHARS, blank=True)
    document_content = models.TextField(blank=True)
    objective_text = models.TextField(null=True, blank=True)
    preferences_json = models.JSONField(default=list)
    todos_json = models.JSONField(default=list)
    captured_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["thread", "turn_index"], name="snapshot_unique_thread_turn"),
        ]
        ordering = ["thread", "turn_index"]

    def __str__(self):
        return f"{self.thread_id} turn {self.turn_index}"
