"""Reads for a thread's conversation: its activity log, turn errors and feedback.
Thread lookups scoped to their owner are workspace.selectors'."""

from django.db.models import Count

from workspace.models import Thread

from .models import ActivityLogEntry, Feedback, Turn


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


def feedback_on_turn(*, thread: Thread, user, turn_index: int) -> list[Feedback]:
    """What this person left on one turn, oldest first."""
    return list(
        Feedback.objects.filter(thread=thread, user=user, turn_index=turn_index)
        .select_related("artifact")
        .order_by("created_at", "pk")
    )


def feedback_counts(*, thread: Thread, user) -> dict[int, int]:
    """How many feedback entries this person left on each turn."""
    rows = Feedback.objects.filter(thread=thread, user=user).values("turn_index").annotate(n=Count("pk"))
    return {row["turn_index"]: row["n"] for row in rows.order_by()}


def feedback_of_user_or_none(*, thread: Thread, user, pk: int) -> Feedback | None:
    return Feedback.objects.filter(thread=thread, user=user, pk=pk).select_related("thread", "user").first()
