"""Reads for a thread's conversation: its activity log and turn errors.
Thread lookups scoped to their owner are workspace.selectors'."""

from workspace.models import Thread

from .models import ActivityLogEntry, Turn


def activity_for(*, thread: Thread, limit: int = 50) -> list[ActivityLogEntry]:
    return list(ActivityLogEntry.objects.filter(thread=thread).order_by("-created_at")[:limit])


def turn_errors_for(*, thread: Thread) -> dict[int, str]:
    """Each failed turn's error message (the latest, when a turn has several)."""
    entries = ActivityLogEntry.objects.filter(
        thread=thread, level=ActivityLogEntry.Level.ERROR, turn_index__isnull=False
    ).order_by("created_at")
    return dict(entries.values_list("turn_index", "message"))


def turn_rows_for(*, thread: Thread) -> dict:
    """The thread's turn rows by turn index (conversations.models.Turn)."""
    return {row.index: row for row in Turn.objects.filter(thread=thread)}


def latest_turn_row(*, thread_id) -> "Turn | None":
    return Turn.objects.filter(thread_id=thread_id).order_by("-index").first()
