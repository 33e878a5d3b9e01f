"""The one-turn-at-a-time guard and the turn rows, in the database (docs/adr/0003, 0011).

A thread's running-turn columns (workspace.models.Thread) and its turn rows
(conversations.models.Turn) are written only here. Claiming a turn bumps
the counter, records the turn row and snapshots the workspace in one
transaction, before the agent runs.

A claim names the server process that holds it (turns.process). It is
released by its turn's end, by that process's successor at start-up
(`turns_release_predecessor`), by any process once the claim has gone
unrefreshed for STALE_TURN_AFTER (`turns_release_stale`, and the next
message or a Stop on that thread), and every open tab is told."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agent.approval_request import ApprovalRequest
from agent.context import Selection
from workspace.errors import InvalidInput
from workspace.models import Thread, WorkspaceSnapshot
from workspace.services.snapshots import snapshot_capture
from workspace.text import clean_text

from ..errors import ApprovalPending, BranchVanished, TooManyTurns, TurnAlreadyRunning
from ..live import RESYNC, RESYNC_CHAT, publish_turn_versions, publisher
from ..models import BranchLink, Turn
from ..services import DEFAULT_THREAD_TITLE, announce_thread, title_from_message
from . import fragments, outcome, process
from .approval_record import TurnApproval

# How often a running turn refreshes its claim (turns.registry), and how
# long a claim may go unrefreshed before it counts as left by a server that
# died mid-turn. Three refreshes fit in it, so a server busy enough to be
# late with one is not taken for dead.
TURN_KEEPALIVE = timedelta(seconds=10)
STALE_TURN_AFTER = timedelta(seconds=30)

APPROVAL_PENDING = "Answer the pending approval first: approve or reject the change the assistant asked about."
APPROVED, REJECTED, STOPPED = "approved", "rejected", "stopped"


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


def selection_json(selection: Selection | None) -> dict | None:
    """A turn's selection as its row stores it (conversations.models.Turn.selection)."""
    if selection is None:
        return None
    return {"start": selection.start, "end": selection.end, "text": selection.text}


@transaction.atomic
def turn_begin(
    *,
    thread: Thread,
    user_message: str,
    model_name: str | None = None,
    retry_of: int | None = None,
    mode: str | None = None,
    selection: Selection | None = None,
    activate_branch: bool = False,
) -> tuple[int, WorkspaceSnapshot]:
    """Claim the thread's single running-turn slot, bump the turn counter,
    record the turn row and snapshot the workspace, all before the agent runs.
    The row records the turn's `mode` (None: the thread's) and the checked
    `selection` its message asks about.

    The claim is a row update in the database, so it holds across server
    processes. Raises TurnAlreadyRunning while another turn is in progress,
    and InvalidInput for a message that cannot be stored. A claim left by a
    dead server is taken over, its turn marked interrupted.

    `activate_branch`: the thread is a pending branch made for this turn
    (conversations.branching.make_branch_for_turn); it becomes active and
    shown in this same transaction, so it is never shown without its turn
    (docs/adr/0045). BranchVanished if it is no longer pending.
    """
    user_message = clean_user_message(user_message)
    if activate_branch:
        locked = Thread.objects.select_for_update().filter(pk=thread.pk).first()
        activated = locked is not None and BranchLink.objects.filter(
            thread_id=locked.pk, status=BranchLink.Status.PENDING
        ).update(status=BranchLink.Status.ACTIVE)
        if not activated:
            # Swept meanwhile (it took longer than any fork could): nothing to run in.
            raise BranchVanished("The branch could not be created; nothing was changed. Try again.")
        locked.is_deleted = thread.is_deleted = False
    else:
        locked = Thread.objects.select_for_update().get(pk=thread.pk)
    now = timezone.now()
    if running_turn(locked, now) is not None:
        raise TurnAlreadyRunning("A turn is already running in this thread; wait for it to finish or stop it.")
    if Turn.objects.filter(thread=locked, index=locked.turn_index, status=Turn.Status.AWAITING).exists():
        raise ApprovalPending(APPROVAL_PENDING)
    _check_running_turns_of(locked.owner_id, now=now, limit=settings.HAICO_MAX_RUNNING_TURNS)
    if locked.running_turn_index is not None:
        _release(locked, locked.running_turn_index, notice=outcome.INTERRUPTED_LOST, now=now)
    locked.turn_index += 1
    locked.running_turn_index = locked.turn_index
    locked.running_since = now
    locked.cancel_requested = False
    locked.last_activity_at = now
    update_fields = ["turn_index", "running_turn_index", "running_since", "cancel_requested", "last_activity_at"]
    if activate_branch:
        update_fields.append("is_deleted")
    if locked.turn_index == 1 and locked.title == DEFAULT_THREAD_TITLE:
        locked.title = title_from_message(user_message) or DEFAULT_THREAD_TITLE
        update_fields.append("title")
        announce_thread(locked)
    locked.save(update_fields=update_fields)
    Turn.objects.create(
        thread=locked,
        index=locked.turn_index,
        user_message=user_message,
        model_name=model_name or "",
        retry_of=retry_of,
        mode=mode or locked.mode,
        selection=selection_json(selection),
        instance=process.instance(),
        boot=process.BOOT,
    )
    snapshot = snapshot_capture(thread=locked, turn_index=locked.turn_index, user_message=user_message)
    if BranchLink.objects.filter(
        thread=locked, status=BranchLink.Status.ACTIVE, branch_point_turn=locked.turn_index - 1
    ).exists():
        # A branch's first own turn is a new version of that turn: the family's tabs show its arrows.
        thread_id, turn_index = locked.pk, locked.turn_index
        transaction.on_commit(lambda: publish_turn_versions(thread_id=thread_id, turn_index=turn_index))
    for name in ("turn_index", "title", "running_turn_index", "running_since", "cancel_requested"):
        setattr(thread, name, getattr(locked, name))
    return locked.turn_index, snapshot


def _check_running_turns_of(owner_id, *, now, limit: int) -> None:
    """TooManyTurns when the person already has `limit` turns running (0: no
    limit), counted from the threads' claims, which every server process
    writes (docs/adr/0051). The person's row is locked first, so two turns
    started at once in two threads cannot both pass the count."""
    if not limit:
        return
    list(get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk", flat=True))
    running = Thread.objects.filter(
        owner_id=owner_id,
        running_turn_index__isnull=False,
        running_since__gt=now - STALE_TURN_AFTER,
    ).count()
    if running >= limit:
        raise TooManyTurns(
            f"You have {running} turns running in other threads, the most at once; wait for one to finish "
            "(or stop one), then send this again. Nothing was sent."
        )


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


@transaction.atomic
def turns_save_answers(*, answers: dict) -> None:
    """Store what running turns have streamed so far ({(thread id, turn
    index): text}), all in one transaction, so a server killed mid-answer
    leaves the answer the person was reading."""
    for (thread_id, turn_index), text in answers.items():
        Turn.objects.filter(thread_id=thread_id, index=turn_index, status=Turn.Status.RUNNING).update(answer=text)


def cancel_requested_among(thread_ids) -> set:
    """Which of these threads a Stop was requested for (from any process)."""
    if not thread_ids:
        return set()
    return set(Thread.objects.filter(pk__in=list(thread_ids), cancel_requested=True).values_list("pk", flat=True))


@transaction.atomic
def turn_finish(
    *,
    thread: Thread,
    turn_index: int,
    status: str = Turn.Status.COMPLETE,
    answer: str = "",
    cut_off: bool = False,
    notice: str = "",
) -> None:
    """Release the running-turn slot (only if it is still this turn's) and
    record how the turn ended (only if nobody recorded it for us: a turn
    another process took for dead keeps "interrupted")."""
    now = timezone.now()
    Thread.objects.filter(pk=thread.pk, running_turn_index=turn_index).update(
        running_turn_index=None, running_since=None, cancel_requested=False, last_activity_at=now
    )
    Turn.objects.filter(thread=thread, index=turn_index, status=Turn.Status.RUNNING).update(
        status=status, answer=answer, cut_off=cut_off, notice=notice, ended_at=now
    )


@transaction.atomic
def turn_request_cancel(*, thread: Thread) -> bool:
    """Ask the running turn to stop; True if a turn was running.

    A turn whose server is known dead (its claim went stale, or this is the
    same server started again) cannot hear the request: it is released here."""
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    if locked.running_turn_index is None:
        return False
    row = Turn.objects.filter(thread=locked, index=locked.running_turn_index).first()
    predecessor = row is not None and row.instance == process.instance() and row.boot != process.BOOT
    if running_turn(locked) is None or predecessor:
        _release(locked, locked.running_turn_index, notice=outcome.INTERRUPTED_STOP)
        return True
    Thread.objects.filter(pk=locked.pk).update(cancel_requested=True)
    return True


def awaiting_approval(thread_id) -> Turn | None:
    """The thread's latest turn if it waits for the person's approval (docs/adr/0017)."""
    row = Turn.objects.filter(thread_id=thread_id).order_by("-index").first()
    return row if row is not None and row.status == Turn.Status.AWAITING else None


@transaction.atomic
def turn_await_approval(
    *, thread: Thread, turn_index: int, interrupt_id: str, request: ApprovalRequest, answer: str = ""
) -> bool:
    """The running turn paused before a hard-to-undo change: its slot is
    released (no process runs it; nothing keeps its claim alive) and its row
    waits with the question. Recovery only releases running turns, so a
    waiting one is never taken for interrupted; turn_begin refuses the next
    message until it is answered. False if the turn was not running any
    more (another process took it for dead meanwhile)."""
    now = timezone.now()
    Thread.objects.filter(pk=thread.pk, running_turn_index=turn_index).update(
        running_turn_index=None, running_since=None, cancel_requested=False, last_activity_at=now
    )
    return bool(
        Turn.objects.filter(thread=thread, index=turn_index, status=Turn.Status.RUNNING).update(
            status=Turn.Status.AWAITING,
            answer=answer,
            approval=TurnApproval(interrupt_id=interrupt_id, request=request).to_json(),
        )
    )


@transaction.atomic
def turn_answer_claim(*, thread: Thread, turn, decision: str) -> Turn:
    """Claim the slot again for the turn awaiting approval, on this process,
    to go on with it with the person's `decision` (APPROVED, REJECTED or
    STOPPED), recorded on the row. Only the first answer counts: a second
    one (another tab) is refused with InvalidInput, as is an answer to a
    turn that does not wait."""
    turn = _turn_number(turn, action="answer")
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    row = Turn.objects.filter(thread=locked, index=turn).first()
    if row is None or row.status != Turn.Status.AWAITING or turn != locked.turn_index:
        raise InvalidInput("No approval is waiting for an answer in that turn; it was answered already.")
    if running_turn(locked) is not None:
        raise TurnAlreadyRunning("A turn is already running in this thread; wait for it to finish or stop it.")
    now = timezone.now()
    Thread.objects.filter(pk=locked.pk).update(
        running_turn_index=turn, running_since=now, cancel_requested=False, last_activity_at=now
    )
    row.status = Turn.Status.RUNNING
    row.instance, row.boot = process.instance(), process.BOOT
    approval = TurnApproval.from_json(row.approval)
    # A row with no readable approval keeps what it holds: the turn goes on
    # (or, stopped, ends) all the same, and the card had nothing to show.
    row.approval = replace(approval, decision=decision).to_json() if approval else {**(row.approval or {}), "decision": decision}
    row.save(update_fields=["status", "instance", "boot", "approval"])
    thread.running_turn_index, thread.running_since, thread.cancel_requested = turn, now, False
    return row


@transaction.atomic
def turn_approval_outcome(*, thread: Thread, turn_index: int, outcome: str) -> None:
    """The change the person approved could not be applied (in full): the
    turn row's approval records why (fragments.APPROVAL_OUTCOMES), so the
    card says so after a reload and in copies too."""
    row = Turn.objects.select_for_update().filter(thread=thread, index=turn_index).first()
    approval = TurnApproval.from_json(row.approval) if row is not None else None
    if approval is None:
        return
    row.approval = replace(approval, outcome=outcome).to_json()
    row.save(update_fields=["approval"])


def _turn_number(turn, *, action: str) -> int:
    if isinstance(turn, str) and turn.isascii() and turn.isdigit():
        turn = int(turn)
    if not isinstance(turn, int) or isinstance(turn, bool):
        raise InvalidInput(f"Choose a turn to {action}.")
    if not 0 <= turn <= 2**31 - 1:  # beyond any column's reach, on every database
        raise InvalidInput("That turn does not exist in this thread.")
    return turn


def turns_release_predecessor() -> int:
    """At start-up: the turns an earlier run of this server (same name,
    another boot) left running are released, interrupted. Returns how many."""
    rows = Turn.objects.filter(status=Turn.Status.RUNNING, instance=process.instance()).exclude(boot=process.BOOT)
    return _release_rows(rows.values_list("thread_id", "index"), notice=outcome.INTERRUPTED_RESTART)


def turns_release_stale() -> int:
    """Any process, now and then: turns whose server stopped refreshing their
    claims are released, interrupted. Returns how many."""
    cutoff = timezone.now() - STALE_TURN_AFTER
    running = Turn.objects.filter(status=Turn.Status.RUNNING)
    stale = running.filter(
        Q(thread__running_since__lt=cutoff) | Q(thread__running_since__isnull=True) | ~Q(thread__running_turn_index=F("index"))
    )
    return _release_rows(stale.values_list("thread_id", "index"), notice=outcome.INTERRUPTED_LOST, if_stale=True)


def _release_rows(pairs, *, notice: str, if_stale: bool = False) -> int:
    released = 0
    for thread_id, turn_index in list(pairs):
        with transaction.atomic():
            locked = Thread.objects.select_for_update().filter(pk=thread_id).first()
            if locked is None:
                continue
            row = Turn.objects.filter(thread=locked, index=turn_index, status=Turn.Status.RUNNING).first()
            if row is None:
                continue  # ended meanwhile
            if if_stale and locked.running_turn_index == turn_index and running_turn(locked) is not None:
                continue  # refreshed meanwhile: its server is alive
            _release(locked, turn_index, notice=notice)
            released += 1
    return released


def _release(locked: Thread, turn_index: int, *, notice: str, now=None) -> None:
    """Within the caller's transaction, on the row-locked thread: free the
    slot if this turn holds it, mark the turn interrupted (keeping what it
    streamed), and after commit tell every open tab the turn ended."""
    now = now or timezone.now()
    if locked.running_turn_index == turn_index:
        Thread.objects.filter(pk=locked.pk).update(running_turn_index=None, running_since=None, cancel_requested=False)
        locked.running_turn_index = locked.running_since = None
        locked.cancel_requested = False
    Turn.objects.filter(thread=locked, index=turn_index, status=Turn.Status.RUNNING).update(
        status=Turn.Status.INTERRUPTED, notice=notice, ended_at=now
    )
    row = Turn.objects.filter(thread=locked, index=turn_index).first()
    if row is not None:
        answer, end = fragments.ended_parts(row, latest=row.index == locked.turn_index)
        thread_id = locked.pk

        transaction.on_commit(lambda: publisher.publish_parts(thread_id, [(answer, RESYNC_CHAT), (end, RESYNC)]))


class Rerun(NamedTuple):
    """What a turn run again takes from it: its message, its model and the
    selection it asked about (as stored; checked again before it is sent)."""

    message: str
    model: str
    selection: dict | None = None


def retry_message(*, thread: Thread, turn) -> Rerun:
    """The message, model and selection of the turn to run again, or
    InvalidInput saying why it cannot be: only the thread's latest turn,
    once it has failed, been interrupted or been cut off
    (conversations.turns.outcome)."""
    turn = _turn_number(turn, action="retry")
    row = Turn.objects.filter(thread=thread, index=turn).first()
    if row is None:
        raise InvalidInput("That turn does not exist in this thread.")
    if turn != thread.turn_index:
        raise InvalidInput("Only the latest turn can be retried; send the message again instead.")
    ending = outcome.marker(status=row.status, cut_off=row.cut_off, notice=row.notice, answered=bool(row.answer.strip()))
    if not ending.retry:
        state = {Turn.Status.RUNNING: "is still running.", Turn.Status.AWAITING: "is waiting for your approval."}
        raise InvalidInput("That turn cannot be retried: it " + state.get(row.status, "ended normally."))
    return Rerun(row.user_message, row.model_name, row.selection)
