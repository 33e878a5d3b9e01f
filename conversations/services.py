"""Writes for threads: creation, renaming, soft-delete, feedback, staff
moderation and the activity log. The turn guard is conversations.turns.guard."""

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from workspace.errors import InvalidInput
from workspace.events import Change, announce
from workspace.models import Thread
from workspace.text import clean_text

from .models import ActivityLogEntry, Feedback, ModerationAction

THREAD_TITLE_MAX_CHARS = 200
DEFAULT_THREAD_TITLE = "New thread"


def clean_title(title) -> str:
    return clean_text(title, label="Title", max_chars=THREAD_TITLE_MAX_CHARS, collapse_whitespace=True)


def announce_thread(thread: Thread) -> None:
    """Title or deletion changed: every open tab of the thread hears of it."""
    announce(Change(thread_id=thread.pk, surface="thread"))


@transaction.atomic
def thread_create(*, owner: AbstractBaseUser, title: str = DEFAULT_THREAD_TITLE) -> Thread:
    return Thread.objects.create(owner=owner, title=clean_title(title))


@transaction.atomic
def thread_rename(*, thread: Thread, title: str) -> Thread:
    thread.title = clean_title(title)
    thread.save(update_fields=["title"])
    announce_thread(thread)
    return thread


@transaction.atomic
def thread_soft_delete(*, thread: Thread, staff_user: AbstractBaseUser | None = None) -> Thread:
    thread.is_deleted = True
    thread.deleted_at = timezone.now()
    thread.save(update_fields=["is_deleted", "deleted_at"])
    if staff_user is not None:
        ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=ModerationAction.Action.SOFT_DELETE)
    announce_thread(thread)
    return thread


@transaction.atomic
def thread_restore(*, thread: Thread, staff_user: AbstractBaseUser) -> Thread:
    thread.is_deleted = False
    thread.deleted_at = None
    thread.save(update_fields=["is_deleted", "deleted_at"])
    ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=ModerationAction.Action.RESTORE)
    announce_thread(thread)
    return thread


def title_from_message(message: str, *, limit: int = 60) -> str:
    words = " ".join(message.split())
    if len(words) <= limit:
        return words
    return words[: limit - 1].rsplit(" ", 1)[0] + "…"


@transaction.atomic
def activity_log(*, thread: Thread, message: str, level: str = ActivityLogEntry.Level.INFO, turn_index: int | None = None):
    return ActivityLogEntry.objects.create(thread=thread, message=message, level=level, turn_index=turn_index)


@transaction.atomic
def feedback_add(
    *, thread: Thread, user: AbstractBaseUser, turn_index: int, rating: int, scope: str = "turn", aspect: str = "overall", comment: str = ""
) -> Feedback:
    if scope not in Feedback.Scope.values:
        raise InvalidInput(f"Scope must be one of {', '.join(Feedback.Scope.values)}.")
    # bool is an int subclass; a checkbox's True is not a rating.
    if not isinstance(rating, int) or isinstance(rating, bool) or not -1 <= rating <= 5:
        raise InvalidInput("Rating must be a whole number from -1 to 5.")
    if not isinstance(turn_index, int) or isinstance(turn_index, bool) or not 1 <= turn_index <= thread.turn_index:
        raise InvalidInput(f"Turn {turn_index!r} does not exist in this thread.")
    aspect = clean_text(aspect, label="Aspect", max_chars=50)
    comment = clean_text(comment, label="Comment", max_chars=5000, allow_empty=True)
    return Feedback.objects.create(
        thread=thread, user=user, turn_index=turn_index, rating=rating, scope=scope, aspect=aspect, comment=comment
    )


@transaction.atomic
def moderation_record(*, thread: Thread, staff_user: AbstractBaseUser, action: str, detail: str = "") -> ModerationAction:
    return ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=action, detail=detail[:500])
