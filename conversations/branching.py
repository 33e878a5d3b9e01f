"""Forking a thread at a completed turn into a new thread ("fork, never
destroy"; docs/adr/0014).

A branch at turn k is a new thread of the same owner that starts from the
workspace as it stood after turn k, holds turns 1..k as they happened in
the source (the chat shows them; the turn counter starts at k, so its next
turn is k+1 and numbers stay aligned across sibling branches) and whose
checkpointer history is the source's messages before turn k+1. The source
thread is only read.

Three phases, because the checkpointer is not in the database transaction:
1. rows, in one transaction: the thread (hidden: `is_deleted` until
   active, so every owner-scoped lookup already refuses it with a 404),
   its BranchLink with status pending, the workspace, the turn rows;
2. the checkpointer thread, seeded in one state update;
3. the BranchLink marked active and the thread shown. A branch made to run
   a turn (Regenerate, Edit, "Continue from here") becomes active in the
   transaction that begins that turn and stores its message
   (turns.slot.turn_begin), so no branch is ever shown without the turn
   it was made for (docs/adr/0045).
A failure in any phase removes the new thread's rows and its checkpointer
thread before the error reaches the caller; a fork its server died in the
middle of is removed by any server a few minutes later
(conversations.branch_cleanup).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from functools import partial

from asgiref.sync import async_to_sync
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from agent import catalogue
from agent.history import read_messages
from agent.model import ModelNotConfigured
from agent.seeding import (
    HistoryNotSplittable,
    history_prefix,
    seed_history,
)
from workspace.models import Thread
from workspace.selectors import Access, access_to, snapshot_for
from workspace.services.branching import workspace_copy
from workspace.text import clean_text

from .branch_cleanup import discard, discard_branch, discard_half_made_branches  # noqa: F401  (discard_branch: the consumer's)
from .errors import ConversationError
from .faults import BRANCH_MADE, crash_point
from .forms import checked_selection
from .models import BranchLink, Turn
from .selectors import workspace_after_turn_in_history
from .services import THREAD_TITLE_MAX_CHARS, title_from_message
from .sharing import lock_family, members_copy
from .turns import registry
from .turns.approval_record import portable_json
from .turns.message_checks import clean_user_message
from .turns.slot import running_turn

logger = logging.getLogger("haico.conversations.branching")

BRANCH_REASON_MAX_CHARS = 500
NOT_YOURS = "This thread does not exist or is not yours."
BRANCH_FAILED = "The branch could not be created; nothing was changed. Try again."


class BranchRefused(ConversationError):
    """The fork was refused before anything was written."""


class BranchFailed(ConversationError):
    """The fork failed part-way; what it had written was removed."""


# What a branch's title says of where it came from; a branch of a branch
# replaces its parent's ending rather than piling a second one on.
BRANCH_ENDING = re.compile(r" \((?:branch(?: \d+)? from (?:turn \d+|the start)|turn \d+ regenerated(?:, take \d+)?)\)$")


def branch_title(
    parent_title: str, *, turn_index: int, regenerated: bool = False, message: str | None = None, number: int = 1
) -> str:
    """The title a branch starts with, so it is told apart from its parent on
    the thread list: an Edit's edited message; otherwise the parent's title
    and where the branch starts ("… (branch from turn 3)", "… (turn 4
    regenerated)"). `number` (2, 3, …) tells it apart from its siblings
    made at the same turn before it: "… (branch 2 from turn 3)", "… (turn
    4 regenerated, take 2)", "<edited message> (2)" (docs/adr/0156). The
    person can rename it like any thread."""
    if message is not None and message.strip():
        title = title_from_message(message)
        if number < 2:
            return title
        base, ending = title, f" ({number})"
    else:
        which = "" if number < 2 else f" {number}"
        take = "" if number < 2 else f", take {number}"
        ending = (
            f" (turn {turn_index + 1} regenerated{take})"
            if regenerated
            else f" (branch{which} from turn {turn_index})"
            if turn_index
            else f" (branch{which} from the start)"
        )
        base = BRANCH_ENDING.sub("", parent_title)
    room = THREAD_TITLE_MAX_CHARS - len(ending)
    if len(base) > room:
        base = base[: room - 1].rstrip() + "…"
    return base + ending


# How a branch is titled, given its parent's title and its number among the
# branches made at the same turn (branch_title with the kind of branch bound).
BranchTitle = Callable[..., str]


def _unique_branch_title(locked: Thread, *, turn_index: int, title: BranchTitle | None) -> str:
    """The first of the branch's titles (number 1, 2, …) that no other branch
    of `locked` at `turn_index` has: two forks of one turn, even made at the
    same moment on two servers, never share a title (docs/adr/0156). Read
    under the family's and the parent's locks (write_pending_rows), so a
    fork made meanwhile has committed its row, pending or not, before this
    one counts them."""
    make = title or partial(branch_title, turn_index=turn_index)
    taken = set(BranchLink.objects.filter(parent=locked, branch_point_turn=turn_index).values_list("thread__title", flat=True))
    number = 1
    while (candidate := make(locked.title, number=number)) in taken:
        number += 1
    return candidate


def fork_thread(
    *,
    source: Thread,
    turn_index: int,
    user: AbstractBaseUser,
    reason: str = "",
    title: BranchTitle | None = None,
    activate_now: bool = True,
) -> Thread:
    """A new active thread of `user` branched from `source` after turn
    `turn_index` (0: before turn 1), titled by `title` (branch_title with
    the kind of branch bound; by default where it branched), numbered apart
    from its siblings at that turn. Raises BranchRefused (nothing
    written) or BranchFailed (what was written removed).

    `activate_now=False`: the branch stays pending (hidden) for its first
    turn to activate (`start_in_branch`)."""
    if transaction.get_connection().in_atomic_block:
        # Phase 1 must be committed before another connection seeds the
        # checkpointer (on SQLite it would wait on this transaction's lock).
        raise RuntimeError("fork_thread commits in phases; call it outside a transaction")
    if not isinstance(turn_index, int) or isinstance(turn_index, bool):
        raise BranchRefused("Choose a turn to branch from.")
    reason = clean_text(reason, label="Reason", max_chars=BRANCH_REASON_MAX_CHARS, allow_empty=True)
    new_id = uuid.uuid4()
    try:
        write_pending_rows(new_id=new_id, source=source, turn_index=turn_index, user=user, reason=reason, title=title)
        seed_checkpointer(new_id=new_id, source=source, turn_index=turn_index)
        if activate_now:
            activate(new_id=new_id)
    except BranchRefused:
        discard(new_id)
        raise
    except BaseException as exc:
        discard(new_id)
        if isinstance(exc, Exception) and not isinstance(exc, BranchFailed):
            logger.exception("branching thread %s at turn %s failed", source.pk, turn_index)
            raise BranchFailed(BRANCH_FAILED) from exc
        raise
    return Thread.objects.get(pk=new_id)


# -- phase 1 --


@transaction.atomic
def write_pending_rows(
    *, new_id, source: Thread, turn_index: int, user: AbstractBaseUser, reason: str, title: BranchTitle | None = None
) -> Thread:
    # The family's people first (as sharing locks them), then the source,
    # so a turn cannot begin on it while its workspace is read: a person
    # removed or re-roled meanwhile is either not copied or changed on the
    # branch too.
    lock_family(source.owner_id)
    locked = Thread.objects.select_for_update().filter(pk=source.pk, is_deleted=False).first()
    # An editor branches too; the branch is the owner's and has the same people (docs/adr/0084).
    if locked is None or (access_to(user=user, thread=locked) or 0) < Access.EDIT:
        raise BranchRefused(NOT_YOURS)
    _check_turn(locked, turn_index)
    workspace = workspace_after_turn_in_history(thread=locked, turn_index=turn_index)
    if workspace is None:
        raise BranchRefused(f"The workspace after turn {turn_index} was not recorded, so it cannot be branched from.")
    now = timezone.now()
    thread = Thread.objects.create(
        pk=new_id,
        owner=locked.owner,
        title=_unique_branch_title(locked, turn_index=turn_index, title=title),
        turn_index=turn_index,
        mode=locked.mode,
        chat_model=locked.chat_model,
        # Hidden until phase 3: owner-scoped lookups skip deleted threads.
        is_deleted=True,
        created_at=now,
        last_activity_at=now,
    )
    BranchLink.objects.create(
        thread=thread, parent=locked, branch_point_turn=turn_index, status=BranchLink.Status.PENDING, reason=reason
    )
    next_turn_began = Turn.objects.filter(thread=locked, index=turn_index + 1).values_list("started_at", flat=True).first()
    workspace_copy(thread=thread, workspace=workspace, source=locked, through_turn=turn_index, next_turn_began=next_turn_began)
    # The same people, the link's viewers too: sharing is the family's (conversations.sharing).
    members_copy(source=locked, to=thread)
    Turn.objects.bulk_create(
        _copied_turn(row, thread) for row in Turn.objects.filter(thread=locked, index__lte=turn_index).order_by("index")
    )
    return thread


def _check_turn(thread: Thread, turn_index: int) -> None:
    if turn_index < 0 or turn_index > thread.turn_index:
        raise BranchRefused(f"Turn {turn_index} does not exist in this thread.")
    if thread.turn_index == 0:
        raise BranchRefused("This thread has no turns yet; there is nothing to branch from.")
    row = Turn.objects.filter(thread=thread, index=turn_index).only("status").first() if turn_index else None
    if running_turn(thread) == turn_index or (row is not None and row.status == Turn.Status.RUNNING):
        raise BranchRefused(f"Turn {turn_index} is still running; branch from it once it has finished.")
    if row is not None and row.status == Turn.Status.AWAITING:
        # Its paused graph is in the checkpointer; a copy would carry a question nobody answers there.
        raise BranchRefused(f"Turn {turn_index} is waiting for your approval; answer it before branching from it.")


def _copied_turn(row: Turn, thread: Thread) -> Turn:
    status, notice = row.status, row.notice
    if status == Turn.Status.RUNNING:
        # An earlier turn left running by a dead server: in the copy it ended.
        status, notice = Turn.Status.INTERRUPTED, notice or "Interrupted."
    # The approval card goes too (what was asked and answered): without it
    # the copied transcript would read as if a rejected change had been made.
    return Turn(
        thread=thread,
        index=row.index,
        user_message=row.user_message,
        model_name=row.model_name,
        status=status,
        answer=row.answer,
        cut_off=row.cut_off,
        notice=notice,
        retry_of=row.retry_of,
        mode=row.mode,
        selection=row.selection,
        selection_note=row.selection_note,
        approval=portable_json(row.approval),
        started_at=row.started_at,
        ended_at=row.ended_at,
        person_id=row.person_id,
        person_username=row.person_username,
    )


# -- phase 2 --


def seed_checkpointer(*, new_id, source: Thread, turn_index: int) -> None:
    try:
        # The turns through `turn_index` have ended (_check_turn refused one
        # running or waiting): a call one of them left without a result was cut off.
        prefix = history_prefix(read_messages(source.pk), through_turn=turn_index, ended=True)
    except HistoryNotSplittable as exc:
        raise BranchRefused(f"The history of turn {turn_index} is incomplete, so it cannot be branched from.") from exc
    seed_history(new_id, prefix)


# -- phase 3 --


@transaction.atomic
def activate(*, new_id) -> None:
    activated = BranchLink.objects.filter(thread_id=new_id, status=BranchLink.Status.PENDING).update(
        status=BranchLink.Status.ACTIVE
    )
    if activated != 1:
        raise BranchFailed(BRANCH_FAILED)
    Thread.objects.filter(pk=new_id).update(is_deleted=False, last_activity_at=timezone.now())


# -- a turn run again in a branch (the chat's Regenerate and Edit) --


def rerun_plan(
    *, source: Thread, turn_index: int, user: AbstractBaseUser, message: str | None = None
) -> tuple[str, str | None, dict | None]:
    """What Regenerate (`message` None: the turn's own message) or Edit
    (`message`: the new text) of turn N would run as turn N of a branch at
    N-1: (the message, the model to use or None for the default, the
    selection turn N asked about as stored). Raises BranchRefused, or
    InvalidInput for a message that cannot be stored; nothing is written."""
    if source.is_deleted or (access_to(user=user, thread=source) or 0) < Access.EDIT:
        raise BranchRefused(NOT_YOURS)
    if not isinstance(turn_index, int) or isinstance(turn_index, bool) or not 1 <= turn_index <= source.turn_index:
        raise BranchRefused(f"Turn {turn_index} does not exist in this thread.")
    row = Turn.objects.filter(thread=source, index=turn_index).first()
    if message is None:
        snapshot = None if row is not None else snapshot_for(thread=source, turn_index=turn_index)
        original = row.user_message if row is not None else (snapshot.user_message if snapshot is not None else None)
        if original is None:
            raise BranchRefused(f"The message of turn {turn_index} was not recorded, so it cannot be run again.")
        message = original
    message = clean_user_message(message)
    models = catalogue.choices_for(user)
    if not models:
        # Refused before forking: a branch whose turn cannot run would be empty.
        raise BranchRefused(ModelNotConfigured().message)
    registry.person_may_start(user)  # the same: the person's token limit is reached
    # The turn's own model while the person may still use it, else their default.
    chosen = catalogue.find(models, row.model_name) if row is not None and row.model_name else None
    return message, chosen.key if chosen else None, row.selection if row is not None else None


def rerun_in_branch(*, source: Thread, turn_index: int, user: AbstractBaseUser, message: str | None = None) -> tuple[Thread, str]:
    """Fork `source` at turn N-1 and start turn N there with the turn's own
    message (Regenerate) or `message` (Edit), about the passage turn N asked
    about. Nothing of `source` changes. Returns the branch, its turn N
    running (a server-owned task), and a note for the person when the
    selection had to be left out ("" otherwise)."""
    text, model, selection = rerun_plan(source=source, turn_index=turn_index, user=user, message=message)
    return start_in_branch(
        source=source,
        after_turn=turn_index - 1,
        user=user,
        message=text,
        model_name=model,
        selection=selection,
        reason=f"{'Regenerated' if message is None else 'Edited'} turn {turn_index}",
        title=partial(branch_title, turn_index=turn_index - 1, regenerated=message is None, message=message),
    )


def start_in_branch(
    *,
    source: Thread,
    after_turn: int,
    user: AbstractBaseUser,
    message: str,
    model_name: str | None = None,
    selection: dict | None = None,
    reason: str = "",
    title: BranchTitle | None = None,
) -> tuple[Thread, str]:
    """Fork `source` after turn `after_turn` and start the branch's next turn
    with `message` (already validated: message_checks.clean_user_message) and
    `selection` (as sent or stored; checked against the branch's document,
    and left out with a note when that no longer has it there): what
    Regenerate, Edit and "Continue from here" do. Returns the branch, its
    turn running, and the note ("" when none); if the turn cannot start,
    the branch is removed again.

    Synchronous, for a view (or `database_sync_to_async` from the socket):
    the turn is started on the server's event loop, which the request's
    thread reaches through async_to_sync; the turn registry starts its tasks
    detached from the request (docs/adr/0014)."""
    branch = make_branch_for_turn(source=source, after_turn=after_turn, user=user, reason=reason, title=title)
    try:
        checked, note = checked_selection(thread=branch, raw=selection)
        async_to_sync(registry.start_turn)(
            thread=branch,
            user_message=message,
            model_name=model_name,
            selection=checked,
            selection_note=note,
            user=user,
            activate_branch=True,
        )
    except BaseException:
        # A branch without the turn it was made for would be an empty copy.
        discard_branch(branch.pk)
        raise
    return branch, note


def make_branch_for_turn(
    *, source: Thread, after_turn: int, user: AbstractBaseUser, reason: str, title: BranchTitle | None = None
) -> Thread:
    """The branch a turn is about to run in, still hidden: its turn's start
    shows it (turns.slot.turn_begin), so a server that dies before the turn
    begins leaves nothing a person sees, and the cleanup removes what it
    made. A half-made branch an earlier try of the same request left is
    removed first: trying again never leaves two (docs/adr/0045)."""
    discard_half_made_branches(parent=source, after_turn=after_turn, owner=source.owner)
    branch = fork_thread(source=source, turn_index=after_turn, user=user, reason=reason, title=title, activate_now=False)
    crash_point(BRANCH_MADE)
    return branch
