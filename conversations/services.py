"""Writes for threads: creation, renaming, soft-delete, the turn guard and
counter, feedback and staff moderation."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from workspace import services as workspace_services
from workspace.errors import InvalidInput
from workspace.models import WorkspaceSnapshot

from .errors import TurnAlreadyRunning
from .models import ActivityLogEntry, Feedback, ModerationAction, Thread

THREAD_TITLE_MAX_CHARS = 200
DEFAULT_THREAD_TITLE = "New thread"
# How often a running turn refreshes its claim (agent.runner); a claim left
# unrefreshed for models.STALE_TURN_AFTER lets the next message through.
TURN_KEEPALIVE = timedelta(seconds=15)


def _clean_title(title) -> str:
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput("Title cannot be empty.")
    title = " ".join(title.split())
    if "\x00" in title:
        raise InvalidInput("Title cannot contain NUL characters.")
    if len(title) > THREAD_TITLE_MAX_CHARS:
        raise InvalidInput(f"Title is too long ({len(title)} characters; the limit is {THREAD_TITLE_MAX_CHARS}).")
    return title


@transaction.atomic
def thread_create(*, owner: AbstractBaseUser, title: str = DEFAULT_THREAD_TITLE) -> Thread:
    return Thread.objects.create(owner=owner, title=_clean_title(title))


@transaction.atomic
def thread_rename(*, thread: Thread, title: str) -> Thread:
    thread.title = _clean_title(title)
    thread.save(update_fields=["title"])
    return thread


@transaction.atomic
def thread_soft_delete(*, thread: Thread, staff_user: AbstractBaseUser | None = None) -> Thread:
    thread.is_deleted = True
    thread.deleted_at = timezone.now()
    thread.save(update_fields=["is_deleted", "deleted_at"])
    if staff_user is not None:
        ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=ModerationAction.Action.SOFT_DELETE)
    return thread


@transaction.atomic
def thread_restore(*, thread: Thread, staff_user: AbstractBaseUser) -> Thread:
    thread.is_deleted = False
    thread.deleted_at = None
    thread.save(update_fields=["is_deleted", "deleted_at"])
    ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=ModerationAction.Action.RESTORE)
    return thread


def title_from_message(message: str, *, limit: int = 60) -> str:
    words = " ".join(message.split())
    if len(words) <= limit:
        return words
    return words[: limit - 1].rsplit(" ", 1)[0] + "…"


def clean_user_message(message) -> str:
    """The chat message as it will be stored, or InvalidInput saying why not."""
    if not isinstance(message, str) or not message.strip():
        raise InvalidInput("Type a message before sending.")
    limit = settings.HAICO_MESSAGE_MAX_CHARS
    if len(message) > limit:
        raise InvalidInput(f"Your message is {len(message):,} characters long; the limit is {limit:,}. Shorten it and send again.")
    if "\x00" in message:
        raise InvalidInput("Your message contains a NUL character, which cannot be stored; remove it and send again.")
    return message


@transaction.atomic
def turn_begin(*, thread: Thread, user_message: str) -> tuple[int, WorkspaceSnapshot]:
    """Claim the thread's single running-turn slot, bump the turn counter and
    snapshot the workspace, all before the agent runs.

    The claim is a row update in the database, so it holds across server
    processes. Raises TurnAlreadyRunning while another turn is in progress,
    and InvalidInput for a message that cannot be stored.
    """
    user_message = clean_user_message(user_message)
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    now = timezone.now()
    if locked.live_running_turn(now) is not None:
        raise TurnAlreadyRunning("A turn is already running in this thread; wait for it to finish or stop it.")
    locked.turn_index += 1
    locked.running_turn_index = locked.turn_index
    locked.running_since = now
    locked.cancel_requested = False
    locked.last_activity_at = now
    update_fields = ["turn_index", "running_turn_index", "running_since", "cancel_requested", "last_activity_at"]
    if locked.turn_index == 1 and locked.title == DEFAULT_THREAD_TITLE:
        locked.title = title_from_message(user_message) or DEFAULT_THREAD_TITLE
        update_fields.append("title")
    locked.save(update_fields=update_fields)
    snapshot = workspace_services.snapshot_capture(thread=locked, turn_index=locked.turn_index, user_message=user_message)
    thread.turn_index = locked.turn_index
    thread.title = locked.title
    thread.running_turn_index = locked.running_turn_index
    return locked.turn_index, snapshot


@transaction.atomic
def turn_keepalive(*, thread: Thread, turn_index: int) -> bool:
    """Refresh the running turn's claim (a sign of life for the stale-claim
    rule). False if the slot is no longer this turn's."""
    return bool(
        Thread.objects.filter(pk=thread.pk, running_turn_index=turn_index).update(running_since=timezone.now())
    )


@transaction.atomic
def turn_finish(*, thread: Thread, turn_index: int) -> None:
    """Release the running-turn slot (only if it is still this turn's)."""
    Thread.objects.filter(pk=thread.pk, running_turn_index=turn_index).update(
        running_turn_index=None, running_since=None, cancel_requested=False, last_activity_at=timezone.now()
    )


@transaction.atomic
def turn_request_cancel(*, thread: Thread) -> bool:
    """Ask the running turn to stop; True if a turn was running."""
    return bool(
        Thread.objects.filter(pk=thread.pk, running_turn_index__isnull=False).update(cancel_requested=True)
    )


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
    if not isinstance(aspect, str):
        raise InvalidInput("Aspect must be text.")
    aspect = aspect.strip()
    if not aspect:
        raise InvalidInput("Aspect cannot be empty.")
    if not isinstance(comment, str):
        raise InvalidInput("Comment must be text.")
    return Feedback.objects.create(
        thread=thread, user=user, turn_index=turn_index, rating=rating, scope=scope, aspect=aspect[:50], comment=comment[:5000]
    )


@transaction.atomic
def moderation_record(*, thread: Thread, staff_user: AbstractBaseUser, action: str, detail: str = "") -> ModerationAction:
    return ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=action, detail=detail[:500])
