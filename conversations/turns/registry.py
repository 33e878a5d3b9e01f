"""The running turns of this server process.

`start_turn` claims the thread's turn slot in the database (turns.slot)
and runs the turn as a task of the server's event loop, not tied to the
socket that asked. One watcher task per process looks after every local
turn at once: twice a second it stores the answers streamed since (one
transaction for all of them), about once a second it reads which turns a
Stop was requested for (from any process: the flag is in the database),
and every 10 s it refreshes all their claims in one statement
(docs/adr/0003, 0011).

One recovery task per process releases the turns of dead servers: at
start-up those its own predecessor left running, then every 10 s those
whose claims went stale (turns.slot); the same for the open pages that
presence counts (conversations.presence).

From its first turn on, a process answers the pages of other processes that
join a thread while it runs the thread's turn: they ask it for the turn so
far (turns.elsewhere, docs/adr/0132).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from channels.db import database_sync_to_async
from django.db import IntegrityError
from django.utils import timezone

from agent import catalogue
from agent import checkpointer as checkpointers
from agent.builder import AgentProvider
from agent.catalogue import ModelChoice
from agent.context import Selection, TokenBudget
from workspace.errors import UserFacingError
from workspace.models import Thread
from workspace.selectors import workspace_reading_hold, workspace_reading_release

from .. import outages, presence, quotas, trajectory
from .. import usage as model_usage
from ..approval import WAITING_MESSAGE, account_waits
from ..archive import discard_abandoned_imports
from ..branch_cleanup import abandoned_after, discard_abandoned_branches, discard_orphaned_histories
from ..errors import ConversationError, MessageAlreadyStored
from ..live import publisher
from ..models import Account
from ..selectors import latest_turn_row, turn_of_sent_message
from . import approval_claims, elsewhere, fragments, outcome, process, slot
from .approval_record import TurnApproval
from .message_checks import SELECTION_NOTES
from .run import OpenCallEstimate, Resume, TurnRun, stored_selection

logger = logging.getLogger("haico.conversations.turns")

# How often the watcher stores what running turns streamed, and looks at
# the database stop flags (set by any process).
SAVE_ANSWERS_SECONDS = 0.5
CANCEL_POLL_SECONDS = 1.0
# How often the recovery task looks for turns left by dead servers.
RECOVERY_SECONDS = 10.0
# How often, at most, it looks for checkpointer histories no thread owns (a
# scan of every thread's newest checkpoint).
ORPHANED_HISTORY_SECONDS = 300.0
# On server shutdown, how long running turns get to wind down before being cancelled.
SHUTDOWN_GRACE_SECONDS = 5.0

# The compiled agent per model, shared by every turn of this process. Tests
# and the bench replace it with one built around a scripted model.
agents = AgentProvider()


@dataclass
class _Running:
    task: asyncio.Task
    turn: TurnRun


_running: dict[uuid.UUID, _Running] = {}
_watcher: asyncio.Task | None = None
_recovery: asyncio.Task | None = None
_answerer: asyncio.Task | None = None
_warmed_loop = None
_warm_task: asyncio.Task | None = None


def warm_up() -> None:
    """Before this process's first turn: open the checkpointer, compile the
    agent and load what its first model call would, so that turn is not
    slower than the rest. Called when a page connects (it always does before
    its person can send a message); once per event loop."""
    global _warmed_loop, _warm_task
    loop = asyncio.get_running_loop()
    if _warmed_loop is loop:
        return
    _warmed_loop = loop
    _warm_task = loop.create_task(_warm_up(), name="haico-warm-up")
    _ensure_recovery()
    checkpointers.on_shutdown(stop_all_turns)


def _ensure_recovery() -> None:
    global _recovery
    loop = asyncio.get_running_loop()
    if _recovery is None or _recovery.done() or _recovery.get_loop() is not loop:
        _recovery = loop.create_task(_recover(), name="haico-turn-recovery")


async def _recover() -> None:
    """Release the turns of dead servers: this one's predecessor's at once,
    then any whose claims went stale; and remove what a dead server left
    half made: branches, archive imports and histories no thread owns
    (docs/adr/0045, 0049)."""
    try:
        released = await database_sync_to_async(slot.turns_release_predecessor)()
        if released:
            logger.warning("released %d turn(s) left running by this server's previous run", released)
    except Exception:
        logger.exception("could not release the turns of this server's previous run")
    try:
        await database_sync_to_async(presence.presence_release_predecessor)()
    except Exception:
        logger.exception("could not remove the open pages of this server's previous run")
    loop = asyncio.get_running_loop()
    last_history_sweep = float("-inf")
    # When the database answered this task again after it was away (-inf: it
    # was not). No server could refresh its claims while it was away, so
    # every claim is stale when it comes back: stale turns are released only
    # once the living servers have had STALE_TURN_AFTER to refresh theirs
    # (a turn whose end waits for the database among them, docs/adr/0131).
    database_back_at: float | None = float("-inf")
    while True:
        await asyncio.sleep(RECOVERY_SECONDS)
        try:
            # Open pages (docs/adr/0087): ours are still open; a dead server's are not.
            await database_sync_to_async(presence.presence_keepalive)(channel_names=publisher.open_channels())
            if database_back_at is None:
                database_back_at = loop.time()
            await database_sync_to_async(presence.presence_sweep)()
            if loop.time() - database_back_at >= slot.STALE_TURN_AFTER.total_seconds():
                released = await database_sync_to_async(slot.turns_release_stale)()
                if released:
                    logger.warning("released %d turn(s) whose server stopped answering", released)
            removed = await database_sync_to_async(discard_abandoned_branches)()
            if removed:
                logger.warning("removed %d branch(es) a server died while making", removed)
            removed = await database_sync_to_async(discard_abandoned_imports)()
            if removed:
                logger.warning("removed %d archive import(s) a server died while writing", removed)
            if loop.time() - last_history_sweep >= min(ORPHANED_HISTORY_SECONDS, abandoned_after().total_seconds()):
                last_history_sweep = loop.time()
                await database_sync_to_async(discard_orphaned_histories)()
        except Exception as error:
            if outages.unreachable_service(error) == outages.DATABASE:
                database_back_at = None
            # The database away (a restart) is a line of its outage's, not a traceback a round.
            outages.note(logger, error, "the turn recovery could not run; trying again")


async def _warm_up() -> None:
    try:
        saver = await checkpointers.get_checkpointer()
        agents.warm(checkpointer=saver)
        # The database thread's connection, and the templates a turn renders.
        await database_sync_to_async(Thread.objects.exists)()
        await database_sync_to_async(TurnRun.prepare)()
    except Exception:
        # A failure the first turn will meet again and report properly.
        logger.debug("warm-up failed", exc_info=True)


@dataclass(frozen=True)
class _Start:
    """What a turn starts with, beyond its message (see `_begin`)."""

    turn_index: int
    turn_id: int | None
    user_id: int
    model: ModelChoice | None
    windows: tuple
    person: object
    card_left: slot.LeftCard | None = None


def person_may_start(person) -> tuple:
    """The person's token windows, after checking they may start a turn at
    all: their account does not wait for approval (conversations.approval)
    and no token limit is reached (conversations.quotas). One query for the
    account, and one for the usage when they have a limit."""
    account = Account.objects.filter(user_id=person.pk).first()
    if account_waits(person, account):
        raise ConversationError(WAITING_MESSAGE)
    windows = quotas.token_windows(user_id=person.pk, account=account)
    quotas.turn_start_check(windows)
    return windows


def _begin(
    *,
    thread: Thread,
    user,
    user_message: str,
    model_name: str | None,
    retry_of: int | None,
    mode: str,
    selection: Selection | None,
    selection_note: str,
    activate_branch: bool,
    client_message_id: str,
    models: list[ModelChoice] | None = None,
) -> _Start:
    """Everything a turn's start reads and writes, in one database hop: the
    person may start one, the model it runs with (the key sent while the
    person may use it, else their default: agent.catalogue), and the turn
    claimed (turns.slot). Refusals raise before anything is stored."""
    person = user if user is not None else thread.owner
    windows = person_may_start(person)
    if models is not None and user is not None:
        # The sender's models as read for this message (the consumer's hop).
        choice = catalogue.find(models, model_name) or (models[0] if models else None)
    else:
        choice = catalogue.choice_for(person, model_name)
    try:
        row, _snapshot = slot.turn_claim(
            thread=thread,
            user_message=user_message,
            model_name=choice.key if choice else None,
            retry_of=retry_of,
            mode=mode,
            selection=selection,
            selection_note=selection_note,
            activate_branch=activate_branch,
            person=person,
            client_message_id=client_message_id,
            windows=windows,
        )
    except IntegrityError:
        # The other copy of the same message was stored meanwhile, in another
        # thread (each "Continue from here" copy makes its own branch): the
        # database's constraint stores one (docs/adr/0126).
        stored = turn_of_sent_message(person=person, client_message_id=client_message_id) if client_message_id else None
        if stored is None:
            raise
        raise MessageAlreadyStored(stored[1]) from None
    return _Start(
        turn_index=row.index,
        turn_id=row.pk,
        user_id=person.pk,
        model=choice,
        windows=windows,
        person=person,
        card_left=row.card_left,
    )


async def start_turn(
    *,
    thread: Thread,
    user_message: str,
    model_name: str | None = None,
    retry_of: int | None = None,
    mode: str | None = None,
    selection: Selection | None = None,
    selection_note: str = "",
    user=None,
    activate_branch: bool = False,
    client_message_id: str = "",
    models: list[ModelChoice] | None = None,
) -> int:
    """Claim the thread's single turn slot, snapshot the workspace, and start
    the agent in a server-owned task. Returns the turn index.

    `model_name`: the key of the model chosen (agent.catalogue); one the
    person may not use (or None) runs with their default. `mode`: the
    agent's mode for this turn (the one shown when the message was sent);
    None: the thread's (docs/adr/0018). `selection_note`: why the message
    goes without the selection it was sent with (a text of
    message_checks.SELECTION_NOTES), said under it for good. `user`: who sent it (the thread's
    owner by default). `activate_branch`: the thread is a branch made for
    this turn, shown as the turn begins
    (conversations.branching.make_branch_for_turn). `client_message_id`:
    the id the sending page gave the message (docs/adr/0126). `models`: the
    models `user` may use as the caller read them for this message
    (agent.catalogue.choices_for), else read here.

    Raises conversations.errors.TurnAlreadyRunning (nothing stored) while
    another turn of this thread runs, in any process; MessageAlreadyStored
    for a message this thread stored before.
    """
    # The tasks this starts outlive the caller, so they start from an empty
    # context: a task inherits its creator's context variables, and an HTTP
    # request's (the chat's Regenerate and Edit) name the executor of the
    # thread serving it, gone once the response is sent.
    detached = contextvars.Context()
    detached.run(_prepare)
    mode = mode or thread.mode
    begun = timezone.now()
    start = await database_sync_to_async(_begin)(
        thread=thread,
        user=user,
        user_message=user_message,
        model_name=model_name,
        retry_of=retry_of,
        mode=mode,
        selection=selection,
        selection_note=selection_note,
        activate_branch=activate_branch,
        client_message_id=client_message_id,
        models=models,
    )
    turn_index = start.turn_index
    turn = TurnRun(
        thread=thread,
        turn_index=turn_index,
        user_message=user_message,
        model=start.model,
        agents=agents,
        user_id=start.user_id,
        turn_id=start.turn_id,
        budget=_budget(start.windows, user_id=start.user_id, turn_id=start.turn_id, begun=begun),
        mode=mode,
        selection=selection,
        selection_note=selection_note,
        person=start.person,
        card_left=start.card_left,
    )
    detached.run(_launch, thread, turn)
    return turn_index


async def answer_approval(*, thread: Thread, turn, decision: str, person=None) -> int:
    """Answer the approval the thread's latest turn waits for (docs/adr/0017)
    and go on with that turn here, from the checkpointer: on any process,
    also after the one that asked was restarted. `decision` is
    approval_claims.APPROVED, REJECTED or STOPPED (rejected, and the turn ends);
    `person`: who answered (recorded on the card and the activity log).
    Returns the turn index; raises InvalidInput when no approval waits (or
    another tab answered first)."""
    detached = contextvars.Context()
    detached.run(_prepare)
    begun = timezone.now()
    row, model, model_notice, windows, sender, decision = await database_sync_to_async(_claim_answer)(
        thread=thread, turn=turn, decision=decision, person=person
    )
    resume = Resume(decision=decision, approval=TurnApproval.from_json(row.approval), person=person)
    # The turn goes on with the model it began with (unless its person may
    # no longer use it: _claim_answer), in the mode it began in and about
    # the passage it asked about.
    run = TurnRun(
        thread=thread,
        turn_index=row.index,
        user_message=row.user_message,
        model=model,
        user_id=sender.pk,
        turn_id=row.pk,
        budget=_budget(windows, user_id=sender.pk, turn_id=row.pk, begun=begun),
        agents=agents,
        resume=resume,
        mode=row.mode,
        selection=stored_selection(row.selection),
        selection_note=SELECTION_NOTES.get(row.selection_note, ""),
        # The turn goes on for the person who sent it, whoever answered.
        person=sender,
    )
    run.model_notice = model_notice
    detached.run(_launch, thread, run)
    return row.index


def _claim_answer(*, thread: Thread, turn, decision: str, person=None) -> tuple:
    """The waiting turn claimed again, the model it goes on with (the one it
    began with, unless its person may no longer use it: agent.catalogue)
    and what its end says when that changed, the person's token windows: a turn paused at its limit ends at its
    next model call (agent.usage); and the decision as claimed (a turn whose
    sender can no longer edit the thread is stopped: approval_claims)."""
    row = approval_claims.turn_answer_claim(thread=thread, turn=turn, decision=decision, person=person)
    decision = (row.approval or {}).get("decision", decision)
    # The turn goes on as its sender's, whoever answered: their limits, their
    # model access, their usage (docs/adr/0084); the owner's when the sender's
    # account is gone. Read here, off the event loop.
    sender = row.person or thread.owner
    account = Account.objects.filter(user_id=sender.pk).first()
    windows = quotas.token_windows(user_id=sender.pk, account=account)
    model = catalogue.choice_for(sender, row.model_name)
    began_with = catalogue.normal_key(row.model_name)
    model_notice = ""
    if began_with is not None and model is not None and model.key != began_with:
        # Staff took its model away while the card waited: the rest runs on
        # the default (docs/adr/0062), and its end says so.
        model_notice = outcome.model_replaced(catalogue.once_offered_label(sender, began_with), model.label)
        approval_claims.turn_model_replaced(turn_id=row.pk, model_name=model.key)
        row.model_name = model.key
    return row, model, model_notice, windows, sender, decision


def _budget(windows: tuple, *, user_id: int, turn_id: int | None, begun: datetime) -> TokenBudget:
    """A run's token budget, read again as the run goes on, so the person's
    turns in other threads count too, and a limit staff set meanwhile
    applies at the run's next model call; without a limit a re-read is the
    account row alone, at most every few seconds (docs/adr/0064). With a
    limit it is read before every call while another of the person's
    turns runs, or near the limit (docs/adr/0155)."""
    if turn_id is None:
        return TokenBudget(windows=windows)
    run = quotas.RunMark(turn_id=turn_id, started_at=begun)
    return quotas.live_budget(windows, user_id=user_id, run=run, running=functools.partial(slot.running_turns_of, user_id))


def _prepare() -> None:
    publisher.attach()
    _ensure_recovery()


def _launch(thread: Thread, turn: TurnRun) -> None:
    task = asyncio.create_task(turn.run(), name=f"haico-turn-{thread.pk}-{turn.turn_index}")
    _running[thread.pk] = _Running(task=task, turn=turn)
    # The thread's kept reading stays while the turn runs, however many
    # others run here (docs/adr/0134).
    workspace_reading_hold(thread.pk)
    task.add_done_callback(lambda done, key=thread.pk: _forget(key, done))
    # The person's other runs here read what this one spends from its
    # budget while it runs (docs/adr/0155).
    quotas.run_began(turn.context.budget)
    task.add_done_callback(lambda _done, budget=turn.context.budget: quotas.run_ended(budget))
    _ensure_watcher()
    _ensure_answerer()
    checkpointers.on_shutdown(stop_all_turns)


def _forget(key, task: asyncio.Task) -> None:
    workspace_reading_release(key)
    current = _running.get(key)
    if current is not None and current.task is task:
        del _running[key]


def _ensure_watcher() -> None:
    global _watcher
    loop = asyncio.get_running_loop()
    if _watcher is None or _watcher.done() or _watcher.get_loop() is not loop:
        _watcher = loop.create_task(_watch(), name="haico-turn-watcher")


def _ensure_answerer() -> None:
    """This process answers other processes' pages that ask for its turns
    so far (turns.elsewhere), from its first turn on. Asks sent before wait
    in the channel layer."""
    global _answerer
    loop = asyncio.get_running_loop()
    if _answerer is None or _answerer.done() or _answerer.get_loop() is not loop:
        _answerer = loop.create_task(
            elsewhere.answer(process.BOOT, resync_fragments), name="haico-turn-answerer", context=contextvars.Context()
        )


async def _watch() -> None:
    """Answers so far, stop flags and claim refreshes for every local turn,
    in one statement or transaction each."""
    loop = asyncio.get_running_loop()
    last_poll = last_keepalive = loop.time()
    while _running:
        await asyncio.sleep(SAVE_ANSWERS_SECONDS)
        local = {key: running for key, running in _running.items() if not running.task.done()}
        if not local:
            continue
        # Three hops, each tried whatever became of the one before: a batch
        # that cannot be stored must not keep another person's turn from
        # hearing a Stop or refreshing its claim (the recovery would take
        # it for a dead server's), and a batch that failed is kept for the
        # next round: each row names its call's key (docs/adr/0154), so one
        # the database took without its answer reaching us counts once.
        usage: list[tuple[TurnRun, list]] = []
        # The streaming calls' estimates (docs/adr/0063): stored or not, each
        # is made again from what the call streamed by the next round, under
        # its call's key (docs/adr/0154): one the database took without
        # saying so (a failover) is replaced, not left beside it.
        estimates: list[OpenCallEstimate] = []
        saving = asyncio.Event()
        try:
            answers = {}
            for key, running in local.items():
                text = running.turn.unsaved_answer()
                if text is not None:
                    answers[(key, running.turn.turn_index)] = text
                # An ending turn stores its own usage with its end (or pause),
                # kept and tried again while the database is away: rows taken
                # here as its task ends would be kept on a turn nobody runs.
                if running.turn.ending:
                    continue
                rows = running.turn.unsaved_usage()
                if rows:
                    usage.append((running.turn, rows))
                estimate = running.turn.open_call_estimate()
                if estimate is not None:
                    estimates.append(estimate)
                if rows or estimate is not None:
                    running.turn.usage_saving = saving  # its end waits for this save
            if answers or usage or estimates:
                batch = [r for _, rows in usage for r in rows] + [estimate.row for estimate in estimates]
                await database_sync_to_async(_save_progress)(answers=answers, usage=batch)
                for estimate in estimates:
                    estimate.holder.saved, estimate.holder.saved_chars = True, estimate.chars
        except Exception as error:
            for turn, rows in usage:
                turn.keep_usage(rows)  # stored with the next batch, or at the turn's end
            # A database away is one line of its outage's, not a traceback every half second.
            outages.note(logger, error, "the turn watcher could not store what the turns streamed; trying again")
        finally:
            saving.set()
        try:
            if loop.time() - last_poll >= CANCEL_POLL_SECONDS:
                flagged = await database_sync_to_async(slot.cancel_requested_among)(list(local))
                last_poll = loop.time()
                for key in flagged:
                    local[key].turn.stop_event.set()
        except Exception as error:
            outages.note(logger, error, "the turn watcher could not read the stop requests; trying again")
        try:
            if loop.time() - last_keepalive >= slot.TURN_KEEPALIVE.total_seconds():
                await database_sync_to_async(slot.turns_keepalive)(
                    turns={key: running.turn.turn_index for key, running in local.items()}
                )
                last_keepalive = loop.time()  # not before: a refresh that failed is tried next round
        except Exception as error:
            outages.note(logger, error, "the turn watcher could not refresh the turns' claims; trying again")


def _save_progress(*, answers: dict, usage: list[dict]) -> None:
    """What running turns streamed, then their model calls' usage, in one
    database hop (two transactions: the answers are stored whatever happens
    to the usage)."""
    if answers:
        slot.turns_save_answers(answers=answers)
    model_usage.usage_record(rows=usage)


def stop_if_running_here(thread_id) -> bool:
    """Ask the thread's turn to stop if this process runs it; no database
    needed (a Stop while the database does not answer). True if it does."""
    local = _running.get(thread_id)
    if local is None or local.task.done() or local.turn.ending_kept:
        return False  # none runs here, or it has ended and only its end waits for the database
    local.turn.stop_event.set()
    return True


async def request_stop(*, thread: Thread, person=None) -> bool:
    """Ask the thread's running turn to stop, wherever it runs (a turn whose
    server is dead is released on the spot). True if one was running."""
    if stop_if_running_here(thread.pk):
        return True
    waiting = await database_sync_to_async(approval_claims.awaiting_approval)(thread.pk)
    if waiting is not None:
        # Stop on a pending approval: the change is rejected and the turn ends (docs/adr/0017).
        try:
            await answer_approval(thread=thread, turn=waiting.index, decision=approval_claims.STOPPED, person=person)
        except UserFacingError:
            pass  # answered meanwhile: that answer's turn is running, and stops below
        else:
            return True
    return await database_sync_to_async(slot.turn_request_cancel)(thread=thread)


def runs_here(thread_id) -> bool:
    """Whether a turn of the thread runs in this process (no database)."""
    local = _running.get(uuid.UUID(str(thread_id)))
    return local is not None and not local.task.done()


def resync_fragments(thread_id) -> list[str]:
    """What a page opened mid-turn has missed of the turn running in this
    process (the reasoning so far and the answer streamed so far), in
    fragments that each fit one message; [] when none runs here.

    The page itself renders the turn from the checkpointer, which holds
    neither the streamed draft nor steps sent since the page was built. The
    consumer has it sent behind the fragments already on their way, so the
    snapshot replaces whatever those added and later tokens append to it."""
    local = _running.get(uuid.UUID(str(thread_id)))
    if local is None or local.task.done():
        return []
    return local.turn.resync_fragments()


async def connect_fragments(thread_id, *, page_channel: str, latest: tuple[list[str], str] | None = None) -> list[str]:
    """What a page that just connected may have missed: the turn running in
    this process so far, or, when none runs anywhere, how the latest turn
    ended (a page that lost its socket to a server that died still shows
    that turn running). A turn running in another process is asked for
    here, for the page of channel `page_channel`: that process sends it the
    turn so far with the thread's fragments (turns.elsewhere). `latest`:
    `ended_or_running_on` as the caller read it after the page joined the
    thread's pages (in its own database hop), else read here."""
    fragments_so_far = resync_fragments(thread_id)
    if fragments_so_far:
        return fragments_so_far
    if latest is None:
        latest = await database_sync_to_async(_ended_or_running_on)(thread_id)
    ended, running_on = latest
    if running_on and running_on != process.BOOT:
        await elsewhere.ask(boot=running_on, thread_id=thread_id, page_channel=page_channel)
    return ended


def ended_html(thread_id) -> str:
    """How the thread's latest turn ended, for a page that may still show it
    running (or waiting), or "" while it runs; with the check of its map
    (it may have missed that turn's node too)."""
    ended = "".join(ended_fragments(thread_id))
    return ended + trajectory.map_check(thread_id=thread_id) if ended else ""


def ended_fragments(thread_id) -> list[str]:
    """ended_html in parts: the turn's answer (which can be large) apart
    from its marker and the controls, so a page always gets the latter."""
    return _ended_or_running_on(thread_id)[0]


def ended_or_running_on(thread_id) -> tuple[list[str], str]:
    """What `connect_fragments` reads when no turn runs in this process, for
    a caller that reads it in a database hop of its own."""
    return _ended_or_running_on(thread_id)


def _ended_or_running_on(thread_id) -> tuple[list[str], str]:
    """ended_fragments, and the boot id of the process running the latest
    turn ("" when none runs it), from one reading of its row."""
    row = latest_turn_row(thread_id=thread_id)
    if row is None:
        return [], ""
    if row.status == row.Status.RUNNING:
        return [], row.boot  # its fragments come through the layer, the turn so far when asked
    if row.status == row.Status.AWAITING:
        # The page may have been built before the turn paused: the card.
        turn = fragments.turn_context(
            turn_index=row.index,
            user_message=row.user_message,
            thread_id=thread_id,
            ending=outcome.marker(status=row.status),
            approval=fragments.approval_view(TurnApproval.from_json(row.approval), pending=True),
        )
        return [fragments.approval_card(turn)], ""
    # The page may have been built before that turn ended; its map is
    # checked by the page's catch-up (trajectory.map_check).
    answer, end = fragments.ended_parts(row, latest=True)
    return [answer, end], ""


async def wait_for_turn(thread_id, timeout: float = 30.0) -> None:
    """Wait until this process's turn on the thread (if any) has finished."""
    local = _running.get(uuid.UUID(str(thread_id)))
    if local is not None:
        await asyncio.wait_for(asyncio.shield(local.task), timeout)


async def stop_all_turns() -> None:
    """Server shutdown: stop every turn of this process (partial answers kept,
    turn slots released), cancelling any that do not wind down in time, and
    let a warm-up in progress finish (it may be opening the checkpointer)."""
    if _warm_task is not None and not _warm_task.done() and _warm_task.get_loop() is asyncio.get_running_loop():
        await asyncio.wait((_warm_task,), timeout=SHUTDOWN_GRACE_SECONDS)
    local = list(_running.values())
    for running in local:
        running.turn.shutting_down = True
        running.turn.stop_event.set()
    tasks = [running.task for running in local if not running.task.done()]
    if not tasks:
        return
    _done, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_SECONDS)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=SHUTDOWN_GRACE_SECONDS)
