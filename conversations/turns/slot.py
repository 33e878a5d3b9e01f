"""The thread's running-turn slot, in the database (docs/adr/0003, 0011).

One turn at a time per thread: claiming a turn bumps the counter, records
the turn row and snapshots the workspace in one transaction, before the
agent runs. A thread's running-turn columns are written only here.

A claim names the server process that holds it (turns.process). It is
released by its turn's end, by that process's successor at start-up
(`turns_release_predecessor`), by any process once the claim has gone
unrefreshed for STALE_TURN_AFTER (`turns_release_stale`, and the next
message or a Stop on that thread), and every open tab is told."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import cast

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from agent.context import Selection
from workspace import people
from workspace.models import Thread, WorkspaceSnapshot
from workspace.services.snapshots import snapshot_capture

from .. import quotas
from ..errors import ApprovalPending, BranchVanished, MessageAlreadyStored, TooManyTurns, TurnAlreadyRunning
from ..live import RESYNC, RESYNC_CHAT, publish_turn_versions, publisher
from ..models import BranchLink, Turn, TurnSlot
from ..services import DEFAULT_THREAD_TITLE, announce_thread, title_from_message
from . import fragments, outcome, process
from .approval_record import APPROVED, STOPPED, TurnApproval
from .message_checks import clean_user_message, selection_json, selection_note_key

# How often a running turn refreshes its claim (turns.registry), and how
# long a claim may go unrefreshed before it counts as left by a server that
# died mid-turn. Three refreshes fit in it, so a server busy enough to be
# late with one is not taken for dead.
TURN_KEEPALIVE = timedelta(seconds=10)


STALE_TURN_AFTER = timedelta(seconds=30)


def turn_running_refusal(thread_id, turn_index: int) -> TurnAlreadyRunning:
    """The refusal of a message sent while `turn_index` runs, naming who
    started it: with several people on a thread, the one refused knows whom
    to wait for (docs/adr/0085)."""
    row = Turn.objects.filter(thread_id=thread_id, index=turn_index).select_related("person").first()
    name = row.person_name if row is not None else ""
    if not name:
        return TurnAlreadyRunning("A turn is running; wait for it to finish or stop it.")
    return TurnAlreadyRunning(f"A turn is running (started by {name}); wait for it to finish or stop it.")


APPROVAL_PENDING = "Answer the pending approval first: approve or reject the change the assistant asked about."


def live_turn(slot: TurnSlot | None, now=None) -> int | None:
    """The slot's turn, unless its claim went stale (its server died); for
    a slot read with its thread (select_related("turn_slot"))."""
    if slot is None or slot.turn_index is None or slot.since is None:
        return None
    if (now or timezone.now()) - slot.since >= STALE_TURN_AFTER:
        return None
    return slot.turn_index


def running_turns_of(person_id: int, now=None):
    """The turns `person_id` sent that are running now, on any server (their
    thread's slot holds them, and its claim is fresh)."""
    now = now or timezone.now()
    return Turn.objects.filter(
        person_id=person_id,
        status=Turn.Status.RUNNING,
        thread__turn_slot__turn_index=F("index"),
        thread__turn_slot__since__gt=now - STALE_TURN_AFTER,
    )


def running_turn(thread: Thread, now=None) -> int | None:
    """The thread's turn in progress, unless its claim went stale (its server died)."""
    return live_turn(TurnSlot.objects.filter(thread_id=thread.pk).first(), now)


def _slot_of_locked(locked: Thread) -> TurnSlot | None:
    """The slot of a thread whose row the caller has locked, None before its
    first turn. Every write of a slot but the keepalive's takes the thread's
    lock first, so the slot needs no lock of its own."""
    return TurnSlot.objects.filter(thread_id=locked.pk).first()


def _occupy(locked: Thread, slot: TurnSlot | None, turn_index: int, *, now) -> None:
    """`turn_index` holds the (locked) thread's slot from `now`, on this process."""
    if slot is None:
        TurnSlot.objects.create(thread_id=locked.pk, turn_index=turn_index, since=now)
    else:
        TurnSlot.objects.filter(thread_id=locked.pk).update(turn_index=turn_index, since=now, cancel_requested=False)


def turn_begin(
    *,
    thread: Thread,
    user_message: str,
    model_name: str | None = None,
    retry_of: int | None = None,
    mode: str | None = None,
    selection: Selection | None = None,
    selection_note: str = "",
    activate_branch: bool = False,
    person=None,
) -> tuple[int, WorkspaceSnapshot]:
    """`turn_claim`, returning the new turn's index and its snapshot."""
    row, snapshot = turn_claim(
        thread=thread,
        user_message=user_message,
        model_name=model_name,
        retry_of=retry_of,
        mode=mode,
        selection=selection,
        selection_note=selection_note,
        activate_branch=activate_branch,
        person=person,
    )
    return row.index, snapshot


def refuse_if_stored(*, thread_id, person, client_message_id: str) -> None:
    """MessageAlreadyStored when the thread stored this person's message
    with this id (their page's, docs/adr/0126); nothing for a message
    without one. Another person's page's ids are theirs."""
    if not client_message_id:
        return
    stored = Turn.objects.filter(thread_id=thread_id, person=person, client_message_id=client_message_id).values_list(
        "index", flat=True
    )
    for index in stored[:1]:
        raise MessageAlreadyStored(index)


@transaction.atomic
def turn_claim(
    *,
    thread: Thread,
    user_message: str,
    model_name: str | None = None,
    retry_of: int | None = None,
    mode: str | None = None,
    selection: Selection | None = None,
    selection_note: str = "",
    activate_branch: bool = False,
    person=None,
    client_message_id: str = "",
    windows: tuple = (),
) -> tuple[Turn, WorkspaceSnapshot]:
    """Claim the thread's single running-turn slot, bump the turn counter,
    record the turn row and snapshot the workspace, all before the agent runs.
    The row records who sent it (`person`), the turn's `mode` (None: the
    thread's), the checked `selection` its message asks about and, when
    the one sent was left out, why (`selection_note`, a text of
    message_checks.SELECTION_NOTES).

    The claim is a row update in the database, so it holds across server
    processes. Raises TurnAlreadyRunning while another turn is in progress,
    and InvalidInput for a message that cannot be stored. A claim left by a
    dead server is taken over, its turn marked interrupted.

    `activate_branch`: the thread is a pending branch made for this turn
    (conversations.branching.make_branch_for_turn); it becomes active and
    shown in this same transaction, so it is never shown without its turn
    (docs/adr/0045). BranchVanished if it is no longer pending.

    `client_message_id`: the id the sending page gave the message; one this
    thread already stored from this person raises MessageAlreadyStored with its turn, before
    any refusal (docs/adr/0126). Checked under the thread's lock, so the same
    message arriving twice at once is stored once.

    `windows`: the sender's token windows as read before the claim
    (quotas.token_windows); with a limit, the sender's running turns that
    stored no usage yet count against it too, under a lock on the sender's
    row, so turns sent at once in several threads with the last tokens left
    do not all start (docs/adr/0064).
    """
    user_message = clean_user_message(user_message)
    running_limit = settings.HAICO_MAX_RUNNING_TURNS
    sender_id = person.pk if person is not None and windows else None
    # The people's rows before the thread's, as every write that takes both
    # does (sharing.lock_family: a branch locks its owner, then the thread),
    # and both in one statement in key order: no two claims or branches of
    # the same people wait for each other in a circle.
    _lock_people({pk for pk in (thread.owner_id if running_limit else None, sender_id) if pk is not None})
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
    refuse_if_stored(thread_id=locked.pk, person=person, client_message_id=client_message_id)
    now = timezone.now()
    slot = _slot_of_locked(locked)
    running = live_turn(slot, now)
    if running is not None:
        raise turn_running_refusal(locked.pk, running)
    # The latest turn's ending (its card's answer read in the database: a card holds a document's texts).
    latest = (
        Turn.objects.filter(thread=locked, index=locked.turn_index)
        .values_list("index", "status", "approval__decision", "notice")
        .first()
    )
    if latest is not None and latest[1] == Turn.Status.AWAITING:
        raise ApprovalPending(APPROVAL_PENDING)
    _check_running_turns_of(locked.owner_id, now=now, limit=running_limit, person=person)
    if sender_id is not None:
        mine = running_turns_of(sender_id, now)
        quotas.in_flight_check(windows, quotas.in_flight_tokens(user_id=sender_id, running=mine), now)
    if slot is not None and slot.turn_index is not None:
        _release(locked, slot.turn_index, notice=outcome.INTERRUPTED_LOST, now=now)
    locked.turn_index += 1
    _occupy(locked, slot, locked.turn_index, now=now)
    locked.last_activity_at = now
    update_fields = ["turn_index", "last_activity_at"]
    if activate_branch:
        update_fields.append("is_deleted")
    if locked.turn_index == 1 and locked.title == DEFAULT_THREAD_TITLE:
        locked.title = title_from_message(user_message) or DEFAULT_THREAD_TITLE
        update_fields.append("title")
        announce_thread(locked)
    locked.save(update_fields=update_fields)
    row = Turn.objects.create(
        thread=locked,
        index=locked.turn_index,
        user_message=user_message,
        model_name=model_name or "",
        retry_of=retry_of,
        mode=mode or locked.mode,
        selection=selection_json(selection),
        selection_note=selection_note_key(selection_note),
        instance=process.instance(),
        boot=process.BOOT,
        client_message_id=client_message_id,
        **people.by(person),
    )
    snapshot = snapshot_capture(thread=locked, turn_index=locked.turn_index, user_message=user_message)
    if BranchLink.objects.filter(
        thread=locked, status=BranchLink.Status.ACTIVE, branch_point_turn=locked.turn_index - 1
    ).exists():
        # A branch's first own turn is a new version of that turn: the family's tabs show its arrows.
        thread_id, turn_index = locked.pk, locked.turn_index
        transaction.on_commit(lambda: publish_turn_versions(thread_id=thread_id, turn_index=turn_index))
    for name in ("turn_index", "title"):
        setattr(thread, name, getattr(locked, name))
    # A card the turn before ended with, stopped, may have been left with no
    # run to answer its call (an ended account's, docs/adr/0129): the new
    # turn's run completes it first (turns.run.TurnRun `card_left`).
    stopped_card = latest is not None and latest[1] == Turn.Status.STOPPED and latest[2] == STOPPED
    # Ended by a Stop asked for as the card was reached (approval_claims.turn_await_approval), its notice empty.
    row.card_left = LeftCard(turn_index=latest[0], by_stop=not latest[3]) if stopped_card else None
    return row, snapshot


@dataclass(frozen=True)
class LeftCard:
    """The turn before the claimed one ended, stopped, on its card."""

    turn_index: int
    by_stop: bool  # a Stop, not its sender's account ending


# How a running-turns refusal ends: what was refused, and what to do again.
SEND_AGAIN = "then send this again. Nothing was sent."
ANSWER_AGAIN = "then answer again; the card still waits, and nothing was changed."


def _check_running_turns_of(owner_id, *, now, limit: int, person=None, then: str = SEND_AGAIN) -> None:
    """TooManyTurns when the thread's owner already has `limit` turns running
    in their threads (0: no limit), counted from the threads' claims, which
    every server process writes (docs/adr/0051). The limit is the owner's,
    whoever started those turns (docs/adr/0084). The caller locked the
    owner's row first (`_lock_people`), so two turns started at once in two
    threads cannot both pass the count. `then`: the refusal's last words."""
    if not limit:
        return
    running = TurnSlot.objects.filter(
        thread__owner_id=owner_id,
        turn_index__isnull=False,
        since__gt=now - STALE_TURN_AFTER,
    )
    count = running.count()
    if count >= limit:
        raise TooManyTurns(_too_many_turns_message(owner_id, running, count=count, person=person, then=then))


def lock_owner_for_running_limit(thread: Thread) -> int:
    """Before the thread's row is locked: the owner's row locked when a
    running-turns limit is set (the people's rows before the thread's, as
    `turn_claim` and sharing.lock_family take them, so no two writes wait
    for each other in a circle). Returns the limit (0: none)."""
    limit = settings.HAICO_MAX_RUNNING_TURNS
    if limit:
        _lock_people({thread.owner_id})
    return limit


def _lock_people(ids: set) -> None:
    """Lock these people's rows until the caller's transaction ends, in key order."""
    if ids:
        list(get_user_model().objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))


def _too_many_turns_message(owner_id, running, *, count: int, person, then: str = SEND_AGAIN) -> str:
    """Whose limit it is and who can free a place, truthfully: the person
    refused is told how many of the running turns they started (those they
    can stop), never which threads the others run in (they may not see
    them, docs/adr/0084); an editor is not told how many turns the owner
    has running either, only that the owner's limit is reached."""
    person_id = person.pk if person is not None else owner_id
    turns = Q()
    for thread_id, turn_index in running.values_list("thread_id", "turn_index"):
        turns |= Q(thread_id=thread_id, index=turn_index)
    started = list(Turn.objects.filter(turns).values_list("person_id", flat=True))
    # A turn recorded without its sender (sent before turns named theirs, or
    # an account gone) is the owner's (docs/adr/0085).
    theirs = sum(1 for sender in started if (sender or owner_id) == person_id)
    if person_id == owner_id:
        if theirs == count:
            return (
                f"You have {count} turns running in other threads, the most at once; wait for one to finish (or stop one), {then}"
            )
        others = count - theirs
        return (
            f"Your threads have {count} turns running, the most at once, {others} of them started by people you share "
            f"them with; wait for one to finish (or stop one), {then}"
        )
    owner = get_user_model().objects.filter(pk=owner_id).first()
    name = people.display_name(owner)
    # Not the owner's count: how many turns they run in their other threads
    # is not the editor's to see (docs/adr/0084); only the editor's own.
    limit = f"The owner of this thread ({name}) has reached their limit of turns running at once"
    if not theirs:
        return f"{limit}; wait for one of them to finish, or ask the owner to stop one, {then}"
    started = "1 of the running turns was" if theirs == 1 else f"{theirs} of the running turns were"
    stop = "yours" if theirs == 1 else "one of yours"
    return f"{limit}, and {started} started by you; wait for one to finish (or stop {stop}), {then}"


@transaction.atomic
def turns_keepalive(*, turns: dict) -> int:
    """Refresh the claims of running turns ({thread id: turn index}) in one
    statement, a sign of life for the stale-claim rule. Returns how many
    claims were still theirs."""
    if not turns:
        return 0
    mine = Q()
    for thread_id, turn_index in turns.items():
        mine |= Q(thread_id=thread_id, turn_index=turn_index)
    return TurnSlot.objects.filter(mine).update(since=timezone.now())


def turns_save_answers(*, answers: dict) -> None:
    """Store what running turns have streamed so far ({(thread id, turn
    index): text}), all in one transaction, so a server killed mid-answer
    leaves the answer the person was reading.

    One plain UPDATE run for every turn at once (`executemany`): through
    the ORM, building a statement per turn cost about 0.2 ms of CPU a turn
    every half second (docs/adr/0135)."""
    if not answers:
        return
    thread_key = Turn._meta.get_field("thread").target_field
    running = Turn.Status.RUNNING.value
    rows = [
        [text, thread_key.get_db_prep_value(thread_id, connection), turn_index, running]
        for (thread_id, turn_index), text in answers.items()
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(_answers_update(connection.vendor), rows)


@functools.cache
def _answers_update(vendor: str) -> str:
    """The answers' UPDATE, built from the model's metadata (as
    workspace.write_counts builds its statements), so a renamed column or
    table follows; one per database vendor."""

    def column(name: str) -> str:
        return connection.ops.quote_name(cast(str, Turn._meta.get_field(name).column))

    table = connection.ops.quote_name(Turn._meta.db_table)
    return (
        f"UPDATE {table} SET {column('answer')} = %s "
        f"WHERE {column('thread')} = %s AND {column('index')} = %s AND {column('status')} = %s"
    )


def cancel_requested_among(thread_ids) -> set:
    """Which of these threads a Stop was requested for (from any process)."""
    if not thread_ids:
        return set()
    return set(TurnSlot.objects.filter(thread_id__in=list(thread_ids), cancel_requested=True).values_list("thread_id", flat=True))


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
    free_slot(thread.pk, turn_index, now=now)
    Turn.objects.filter(thread=thread, index=turn_index, status=Turn.Status.RUNNING).update(
        status=status, answer=answer, cut_off=cut_off, notice=notice, ended_at=now
    )


@transaction.atomic
def turn_request_cancel(*, thread: Thread) -> bool:
    """Ask the running turn to stop; True if a turn was running.

    A turn whose server is known dead (its claim went stale, or this is the
    same server started again) cannot hear the request: it is released here."""
    locked = Thread.objects.select_for_update().get(pk=thread.pk)
    slot = TurnSlot.objects.select_for_update().filter(thread_id=locked.pk).first()
    if slot is None or slot.turn_index is None:
        return False
    row = Turn.objects.filter(thread=locked, index=slot.turn_index).first()
    predecessor = row is not None and row.instance == process.instance() and row.boot != process.BOOT
    if live_turn(slot) is None or predecessor:
        _release(locked, slot.turn_index, notice=outcome.INTERRUPTED_STOP)
        return True
    TurnSlot.objects.filter(thread_id=locked.pk).update(cancel_requested=True)
    return True


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
        Q(thread__turn_slot__since__lt=cutoff)
        | Q(thread__turn_slot__since__isnull=True)
        | Q(thread__turn_slot__turn_index__isnull=True)
        | ~Q(thread__turn_slot__turn_index=F("index"))
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
            slot = TurnSlot.objects.filter(thread_id=locked.pk).first()
            if if_stale and slot is not None and slot.turn_index == turn_index and live_turn(slot) is not None:
                continue  # refreshed meanwhile: its server is alive
            _release(locked, turn_index, notice=notice)
            released += 1
    return released


def free_slot(thread_id, turn_index: int, *, now=None) -> int:
    """Empty the thread's slot if `turn_index` holds it (and note the
    thread's activity when `now` is given). Returns 1 if it did, else 0."""
    freed = TurnSlot.objects.filter(thread_id=thread_id, turn_index=turn_index).update(
        turn_index=None, since=None, cancel_requested=False
    )
    if freed and now is not None:
        Thread.objects.filter(pk=thread_id).update(last_activity_at=now)
    return freed


def claim_slot(locked: Thread, turn_index: int, *, now, running_limit: int = 0, person=None) -> None:
    """Within the caller's transaction, on the row-locked thread: `turn_index`
    runs now, on this process (a turn going on after its approval).
    `running_limit` (the caller locked the owner's row first:
    `lock_owner_for_running_limit`): TooManyTurns, saying whose limit to
    `person`, when the owner's threads already run that many turns: going
    on is a turn running like any other (docs/adr/0017)."""
    slot = _slot_of_locked(locked)
    running = live_turn(slot, now)
    if running is not None:
        raise turn_running_refusal(locked.pk, running)
    _check_running_turns_of(locked.owner_id, now=now, limit=running_limit, person=person, then=ANSWER_AGAIN)
    _occupy(locked, slot, turn_index, now=now)
    Thread.objects.filter(pk=locked.pk).update(last_activity_at=now)


def _approval_left_unfinished(row: Turn) -> None:
    """A turn released after its card was approved, with no outcome of the
    approved call recorded: its server stopped after the answer was claimed,
    before or after the change ran, and the card must not say "Approved" as
    if it was made (fragments.APPROVAL_OUTCOMES["interrupted"])."""
    approval = TurnApproval.from_json(row.approval)
    if approval is None or approval.decision != APPROVED or approval.outcome:
        return
    row.approval = replace(approval, outcome="interrupted").to_json()
    row.save(update_fields=["approval"])


def _release(locked: Thread, turn_index: int, *, notice: str, now=None) -> None:
    """Within the caller's transaction, on the row-locked thread: free the
    slot if this turn holds it, mark the turn interrupted (keeping what it
    streamed), and after commit tell every open tab the turn ended."""
    now = now or timezone.now()
    free_slot(locked.pk, turn_index)
    Turn.objects.filter(thread=locked, index=turn_index, status=Turn.Status.RUNNING).update(
        status=Turn.Status.INTERRUPTED, notice=notice, ended_at=now
    )
    row = Turn.objects.filter(thread=locked, index=turn_index).first()
    if row is not None:
        _approval_left_unfinished(row)
        answer, end = fragments.ended_parts(row, latest=row.index == locked.turn_index)
        thread_id = locked.pk

        transaction.on_commit(lambda: publisher.publish_parts(thread_id, [(answer, RESYNC_CHAT), (end, RESYNC)]))
