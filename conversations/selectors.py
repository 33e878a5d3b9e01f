"""Reads for threads. Ownership scoping lives here so every caller shares it."""

from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404

from .models import ActivityLogEntry, Thread


def threads_for_user(*, user: AbstractBaseUser) -> list[Thread]:
    """The person's live threads, most recently active first."""
    return list(Thread.objects.filter(owner=user, is_deleted=False).order_by("-last_activity_at"))


def thread_for_user(*, user: AbstractBaseUser, thread_id) -> Thread | None:
    """The thread if `user` owns it and it is not deleted, else None."""
    if not getattr(user, "is_authenticated", False):
        return None
    return Thread.objects.filter(pk=thread_id, owner=user, is_deleted=False).first()


def get_thread_for_user_or_404(*, user: AbstractBaseUser, thread_id) -> Thread:
    thread = thread_for_user(user=user, thread_id=thread_id)
    if thread is None:
        raise Http404("No such thread.")
    return thread


def activity_for(*, thread: Thread, limit: int = 50) -> list[ActivityLogEntry]:
    return list(ActivityLogEntry.objects.filter(thread=thread).order_by("-created_at")[:limit])


def turn_errors_for(*, thread: Thread) -> dict[int, str]:
    """Each failed turn's error message (the latest, when a turn has several)."""
    entries = ActivityLogEntry.objects.filter(
        thread=thread, level=ActivityLogEntry.Level.ERROR, turn_index__isnull=False
    ).order_by("created_at")
    return dict(entries.values_list("turn_index", "message"))
