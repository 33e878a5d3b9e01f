"""A turn that waits for the person's approval (docs/adr/0017): its slot is
released while it waits, and the first answer claims the slot again to go
on with it; any later answer is refused."""

from __future__ import annotations

from dataclasses import replace

from django.db import transaction
from django.utils import timezone

from agent.approval_request import ApprovalRequest
from workspace import people
from workspace.errors import InvalidInput
from workspace.models import Thread
from workspace.selectors import Access, access_to

from ..errors import TooManyTurns
from ..live import RESYNC, RESYNC_CHAT, publisher
from ..models import ActivityLogEntry, Turn
from ..services import activity_log
from . import fragments, outcome, process

# The answers are named here too, where they are claimed (X as X: re-exported).
from .approval_record import APPROVED as APPROVED
from .approval_record import REJECTED as REJECTED
from .approval_record import STOPPED, TurnApproval
from .message_checks import turn_number
from .slot import claim_slot, free_slot, lock_owner_for_running_limit


def awaiting_approval(thread_id) -> Turn | None:
    """The thread's latest turn if it waits for the person's approval (docs/adr/0017)."""
    row = Turn.objects.filter(thread_id=thread_id).order_by("-index").first()
    return row if row is not None and row.status == Turn.Status.AWAITING else None


def _sender_account_ended(row: Turn) -> bool:
    """Whether the account that sent the turn was deactivated or deleted
    (a deleted one leaves the username with no account, docs/adr/0085).
    A turn recorded with no one (no username either) has no account to end."""
    if row.person is None:
        return bool(row.person_username)
    return not row.person.is_active


def _sender_may_not_edit(thread: Thread, row: Turn) -> bool:
    """Whether the person who sent the turn (not the owner) can no longer edit
    the thread: removed, made a viewer, or their account ended (deactivated,
    or deleted: the row keeps their username, not the account)."""
    if row.person_id is not None and row.person_id == thread.owner_id:
        return False
    if _sender_account_ended(row):
        return True  # an ended account (docs/adr/0122, 0129)
    if row.person is None:
        return False  # recorded with no one: nothing to check
    return (access_to(user=row.person, thread=thread) or 0) < Access.EDIT


@transaction.atomic
def turn_await_approval(*, thread: Thread, turn_index: int, interrupt_id: str, request: ApprovalRequest, answer: str = "") -> str:
    """The running turn paused before a hard-to-undo change: its slot is
    released (no process runs it; nothing keeps its claim alive) and its row
    waits with the question. Recovery only releases running turns, so a
    waiting one is never taken for interrupted; turn_begin refuses the next
    message until it is answered.

    Returns the turn's status now: AWAITING; STOPPED when the card was
    answered on the spot, under the thread's lock (docs/adr/0129): a Stop
    was asked for and not heard yet (its notice empty, as a Stop pressed on
    the card), or the sender's account ended meanwhile (deactivated or
    deleted: `turns_end_awaiting_of` had found the turn still running),
    each ended as `turns_end_awaiting_of` ends a waiting card, the call left
    for the run (or the next turn) to answer; "" when the turn was not
    running any more (another process took it for dead meanwhile)."""
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    row = (
        Turn.objects.filter(thread=locked, index=turn_index, status=Turn.Status.RUNNING)
        .select_related("person", "thread__turn_slot")
        .first()
    )
    now = timezone.now()
    free_slot(locked.pk, turn_index, now=now)
    if row is None:
        return ""
    approval = TurnApproval(interrupt_id=interrupt_id, request=request)
    turn_slot = getattr(row.thread, "turn_slot", None)
    stop_asked = turn_slot is not None and turn_slot.turn_index == turn_index and turn_slot.cancel_requested
    row.answer = answer
    if _sender_account_ended(row):
        _end_waiting(locked, row, approval, now=now, account_closed=True)
        return Turn.Status.STOPPED
    if stop_asked:
        _end_waiting(locked, row, approval, now=now, account_closed=False)
        return Turn.Status.STOPPED
    row.status, row.approval = Turn.Status.AWAITING, approval.to_json()
    row.save(update_fields=["status", "answer", "approval"])
    return Turn.Status.AWAITING


@transaction.atomic
def turn_answer_claim(*, thread: Thread, turn, decision: str, person=None) -> Turn:
    """Claim the slot again for the turn awaiting approval, on this process,
    to go on with it with the person's `decision` (APPROVED, REJECTED or
    STOPPED), recorded on the row with who answered (`person`); STOPPED
    whatever was answered when the turn's sender can no longer edit the
    thread. Only the first answer counts: a second
    one (another tab) is refused with InvalidInput, as is an answer to a
    turn that does not wait. At the owner's running-turns limit an Approve
    is refused with TooManyTurns (the card still waits, answerable later)
    and a Reject is taken as a Stop."""
    turn = turn_number(turn, action="answer")
    # The owner's row before the thread's, as turn_claim takes them.
    running_limit = lock_owner_for_running_limit(thread) if decision != STOPPED else 0
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    row = Turn.objects.filter(thread=locked, index=turn).select_related("person").first()
    if row is None or row.status != Turn.Status.AWAITING or turn != locked.turn_index:
        raise InvalidInput("No approval is waiting for an answer in that turn; it was answered already.")
    if decision != STOPPED and _sender_may_not_edit(locked, row):
        # Removed, or made a viewer, while the card waited: approved or
        # rejected, the turn would go on writing as them (docs/adr/0120).
        decision = STOPPED
    now = timezone.now()
    try:
        # Going on is a turn running: at the owner's running-turns limit an
        # Approve is refused, the card left waiting (docs/adr/0017).
        claim_slot(locked, turn, now=now, running_limit=running_limit if decision != STOPPED else 0, person=person)
    except TooManyTurns:
        if decision != REJECTED:
            raise
        # A Reject goes on to the model (the agent answers the refusal): at
        # the limit it ends the turn as a Stop does, no model call, the
        # change not made (docs/adr/0017).
        decision = STOPPED
        claim_slot(locked, turn, now=now)
    row.status = Turn.Status.RUNNING
    row.instance, row.boot = process.instance(), process.BOOT
    approval = TurnApproval.from_json(row.approval)
    # A row with no readable approval keeps what it holds: the turn goes on
    # (or, stopped, ends) all the same, and the card had nothing to show.
    who = people.by(person)["person_username"]
    if approval is not None:
        row.approval = replace(
            approval, decision=decision, answered_by=who, answered_by_name=people.display_name(person) if who else ""
        ).to_json()
    else:
        row.approval = {**(row.approval or {}), "decision": decision}
    row.save(update_fields=["status", "instance", "boot", "approval"])
    return row


@transaction.atomic
def turn_model_replaced(*, turn_id: int, model_name: str) -> None:
    """The answered turn goes on with `model_name` (its own was taken away
    while it waited, docs/adr/0062): the row names the model that writes
    its answer, so its Regenerate, archive and usage agree."""
    Turn.objects.filter(pk=turn_id).update(model_name=model_name)


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


def turns_end_awaiting_of(user_id) -> int:
    """The turns the account `user_id` started that wait for an approval
    end now, stopped, their change not made, as a Stop pressed on the card
    would (docs/adr/0129): the account is being deleted or deactivated,
    and an Approve would go on writing in the name of someone who can no
    longer sign in. Each is ended in the caller's transaction, under its
    thread's lock (so an answer given at the same moment is either before
    it, and the turn is running, or refused after it); after the commit
    every open tab of the thread is told: the card answered, the turn ended.

    The paused graph is not resumed (no process runs the turn, and a
    server may have no event loop here): the next turn's message starts
    the graph afresh, and the call the card asked about reaches the model
    as a step that did not finish (agent.model_input). Returns how many."""
    ended = 0
    now = timezone.now()
    pairs = list(Turn.objects.filter(person_id=user_id, status=Turn.Status.AWAITING).values_list("thread_id", "index"))
    for thread_id, index in pairs:
        with transaction.atomic():
            locked = Thread.objects.select_for_update().filter(pk=thread_id).first()
            row = Turn.objects.filter(thread_id=thread_id, index=index, status=Turn.Status.AWAITING).select_related("person")
            row = row.first() if locked is not None else None
            if row is None:
                continue  # answered meanwhile: a running turn, stopped by the caller
            _end_waiting(locked, row, TurnApproval.from_json(row.approval), now=now, account_closed=True)
            ended += 1
    return ended


def _end_waiting(locked: Thread, row: Turn, approval: TurnApproval | None, *, now, account_closed: bool) -> None:
    """Within the caller's transaction, on the row-locked thread: the turn's
    card is answered "stopped", its change not made, and the turn ends
    stopped, noted in the activity log, every open tab told after commit.
    `account_closed`: its sender's account ended (the notice says so);
    else a Stop was pressed, as on the card (docs/adr/0017)."""
    if approval is not None:
        row.approval = replace(approval, decision=STOPPED).to_json()
    else:
        row.approval = {**(row.approval or {}), "decision": STOPPED}
    row.status, row.ended_at = Turn.Status.STOPPED, now
    summary = approval.request.summary if approval is not None and approval.request else ""
    if account_closed:
        name = people.recorded_name(row.person, row.person_username)
        row.notice = f"Stopped: {name}'s account was closed while this change waited for approval; it was not made."
        message = f"Not made ({name}'s account was closed): {summary}" if summary else row.notice
    else:
        message = f"Rejected (Stop): {summary}" if summary else "Rejected (Stop)"
    row.save(update_fields=["approval", "status", "answer", "ended_at", "notice"])
    activity_log(thread=locked, message=message, kind=ActivityLogEntry.Kind.APPROVAL_ANSWERED, turn_index=row.index)
    _tell_tabs_ended(locked, row, approval)


def _tell_tabs_ended(locked: Thread, row: Turn, approval: TurnApproval | None) -> None:
    """After commit: the card as answered, then the turn's end, in every open tab."""
    latest = row.index == locked.turn_index
    ending = outcome.marker(status=row.status, notice=row.notice, answered=bool(row.answer.strip()))
    answered = replace(approval, decision=STOPPED) if approval is not None else None
    card = fragments.approval_card(
        fragments.turn_context(
            turn_index=row.index,
            user_message=row.user_message,
            thread_id=row.thread_id,
            ending=ending,
            latest=latest,
            approval=fragments.approval_view(answered, pending=False),
        )
    )
    answer, end = fragments.ended_parts(row, latest=latest)
    thread_id = row.thread_id
    transaction.on_commit(lambda: publisher.publish_parts(thread_id, [(card, RESYNC_CHAT), (answer, RESYNC_CHAT), (end, RESYNC)]))
