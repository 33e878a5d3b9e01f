"""The one-turn-at-a-time guard, in the database (docs/adr/0003).

A thread's running-turn columns (workspace.models.Thread) are written only
here. Claiming a turn bumps the counter and snapshots the workspace in the
same transaction, before the agent runs."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from workspace.models import Thread, WorkspaceSnapshot
from workspace.services.snapshots import snapshot_capture
from workspace.text import clean_text

from ..errors import TurnAlreadyRunning
from ..services import DEFAULT_THREAD_TITLE, announce_thread, title_from_message

# How often a running turn refreshes its claim (turns.registry), and how
# long a claim may go unrefreshed before it counts as left by a server that
# died mid-turn (then the next message takes the thread over).
TURN_KEEPALIVE = timedelta(seconds=15)
STALE_TURN_AFTER = timedelta(seconds=90)


def running_turn(thread: Thread, now=None) -> int | None:
    """The turn in progress, unless its claim went stale (its server died)."""
    if thread.running_turn_index is None or thread.running_since is None:
        return None
    if (now or timezone.now()) - thread.running_since >= STALE_TURN_AFTER:
        return None
    return thread.running_turn_index


def clean_user_message(message) -> str:
    """The chat message as it will be stored (exactly as typed), or InvalidInput saying why not."""
    return clean_text(message, label="Message", max_chars=settings.HAICO_MESSAGE_MAX_CHARS, strip=False)


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
    if running_turn(locked, now) is not None:
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
        announce_thread(locked)
    locked.save(update_fields=update_fields)
    snapshot = snapshot_capture(thread=locked, turn_index=locked.turn_index, user_message=user_message)
    for name in ("turn_index", "title", "running_turn_index", "running_since", "cancel_requested"):
        setattr(thread, name, getattr(locked, name))
    return locked.turn_index, snapshot


@transaction.atomic
def turns_keepalive(*, turns: dict) -> int:
    """Refresh the claims of running turns ({thread id: turn index}) in one
    statement, a sign of life for the stale-claim rule. Returns how many
    claims were still theirs."""
    if not turns:
        return 0
    mine = Q()
    for thread_id, turn_index in turns.items():
        mine |= Q(pk=thread_id, running_turn_index=turn_index)
    return Thread.objects.filter(mine).update(running_since=timezone.now())


def cancel_requested_among(thread_ids) -> set:
    """Which of these threads a Stop was requested for (from any process)."""
    if not thread_ids:
        return set()
    return set(Thread.objects.filter(pk__in=list(thread_ids), cancel_requested=True).values_list("pk", flat=True))


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
