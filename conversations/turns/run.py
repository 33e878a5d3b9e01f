"""One agent turn as a server-owned task: the agent's events (agent.events)
become chat fragments for every open tab of the thread.

It never touches a socket: everything goes out through the live layer's
publisher to the thread's group, so every tab (and a page reloaded
mid-turn, which joins the group on connect) sees the same turn, and the
person may close the tab that started it. What the agent's tools change in
the workspace reaches the tabs without the runner: the services announce
it after commit (conversations.live).

Order of a turn's fragments (ids in conversations/fragments/turn.html):

1. the turn shell appended to #chat-messages (user bubble, an open
   "Internal reasoning" container, an empty assistant bubble) and the
   running controls (#chat-status with Stop, #chat-send disabled);
2. per tool call, one reasoning step (its action_and_reasoning sentence
   only) appended to #turn-N-steps;
3. answer tokens appended to #turn-N-answer-content (text a model call
   wrote before deciding to call tools is taken back when they arrive);
4. closing: the answer as sanitised markdown, the reasoning collapsed, the
   marker (Stopped / the error), idle controls.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from dataclasses import dataclass, replace

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.template.loader import get_template
from django.utils import timezone
from django.utils.html import escape

from agent import catalogue
from agent import checkpointer as checkpointers
from agent.answer_cap import answer_max_chars, capped_answer
from agent.approval_request import ApprovalRequest
from agent.builder import AgentProvider
from agent.catalogue import ModelChoice
from agent.context import AgentContext, ResumedCall, Selection, TokenBudget
from agent.events import (
    Answer,
    ApprovalAsked,
    ArgumentsStreamed,
    CapReached,
    Diagnostic,
    DraftWithdrawn,
    ModelCallRetried,
    ModelCallStarted,
    ModelCallUsage,
    StepFinished,
    StepsStarted,
    Token,
)
from agent.history import turn_steps
from agent.steps import Step, StepStatus
from agent.tools.envelope import step_note
from agent.turn import (
    CANCELLED_TOOL_RESULT,
    FAILED_TOOL_RESULT,
    INTERRUPTED_TOOL_RESULT,
    complete_left_calls,
    resume_turn,
    stream_turn,
    turn_config,
    write_repair,
)
from workspace import people
from workspace.markdown import render_markdown
from workspace.models import Thread
from workspace.text import escape_html

from .. import activity, outages, services, trajectory
from ..live import RESYNC, RESYNC_CHAT, publisher
from ..models import ActivityLogEntry, Turn
from ..usage import usage_record
from . import approval_claims, fragments, outcome, slot
from .approval_record import TurnApproval
from .errors import database_unreachable, is_provider_failure, operator_detail, safe_error_message
from .logcontext import TurnIds, current_turn

logger = logging.getLogger("haico.conversations.turns")

# With nothing to send for this long, a harmless fragment keeps proxies and
# browsers from dropping an idle socket during one long generation.
HEARTBEAT_SECONDS = 10.0
# Streamed text goes out in pieces of at most this many characters, so even
# escaped (a quote is six characters) a piece fits one message
# (conversations.live.MESSAGE_MAX_BYTES).
TOKEN_PIECE_CHARS = 16_000
INTERRUPTED_SHUTDOWN = "Interrupted: the server was shutting down."
# A turn's end the database did not take (it was away as the turn ended) is
# kept in the process and tried again this often, for as long as it takes
# (docs/adr/0131); the watcher keeps the turn's claim fresh meanwhile.
KEEP_ENDING_RETRY_SECONDS = 1.0
# What the tabs say meanwhile, under the answer and in the chat's status.
ENDING_KEPT = (
    "Not saved yet: the server's database does not answer. This turn's end, answer and all, is kept "
    "and saved as soon as the database answers again."
)
# The same, for a turn that paused to ask for an approval as the database
# went away: its card is not stored, so nobody can answer it yet.
PAUSE_KEPT = (
    "Not saved yet: the server's database does not answer. The assistant asks for an approval of a change; "
    "the question is kept and shown here to answer as soon as the database answers again."
)
ENDING_LOST = (
    "Not saved: this server shut down before its database answered again. The turn keeps what was "
    "saved of it before the database went away."
)


# Stop on a pending approval rejects the change and ends the turn (docs/adr/0017).
APPROVAL_STOPPED_RESULT = "Not done: the person pressed Stop instead of approving this change; nothing was changed."
# A card whose turn ended with no run to answer it (its sender's account was
# closed, docs/adr/0129): the next turn completes its call with this.
CARD_LEFT_RESULT = (
    "Not done: the turn ended before this change was approved (the account of the person who asked was "
    "closed); nothing was changed."
)


def stored_selection(raw) -> Selection | None:
    """A turn row's selection (message_checks.selection_json) for the agent, or None.
    It was checked when the message was sent; the prompt places it in the
    document as the document reads at each model call (agent.prompt)."""
    if not isinstance(raw, dict):
        return None
    start, end, text = raw.get("start"), raw.get("end"), raw.get("text")
    if not (isinstance(start, int) and isinstance(end, int) and isinstance(text, str) and text):
        return None
    return Selection(start=start, end=end, text=text)


def _store_usage(rows: list[dict]) -> list[dict]:
    """The turn's last model calls' usage, in a transaction of its own: the
    turn's end is recorded whether or not this can be.

    Returns the rows left to store: all of them when the database does not
    answer (the caller keeps them and tries again: a call it drops is never
    counted), none when they were stored, or failed otherwise (logged; a
    bug must not be tried for ever). A row tried again is never counted
    twice: it names its call's key (docs/adr/0154), so the rows of a
    commit whose answer was lost (the server took them, the connection
    broke before it said so) are found there, not stored beside."""
    try:
        usage_record(rows=rows)
    except Exception as error:
        if outages.unreachable_service(error) == outages.DATABASE:
            outages.note(logger, error, "could not store the usage of %d model call(s); it is kept", len(rows))
            return rows
        logger.exception("could not store the usage of %d model call(s)", len(rows))
    return []


def _finish(*, usage: list[dict], **kwargs) -> tuple[dict, list[dict]]:
    """In one database hop: the turn's end, then its last model calls'
    usage; and, whether or not those could be stored, what every open map
    of the family needs now (trajectory.turn_ended_patches, by thread).
    Returns those patches and the usage rows the database did not take.

    Raises when the database cannot be reached for the turn's end: the
    caller keeps that end and stores it once the database answers
    (TurnRun._store_end); nothing of it is stored or sent before."""
    thread_id, turn_index = kwargs["thread"].pk, kwargs["turn_index"]
    left: list[dict] = []
    try:
        slot.turn_finish(**kwargs)
        left = _store_usage(usage)
    except Exception as error:
        if outages.unreachable_service(error) == outages.DATABASE:
            raise
        logger.exception("could not release the turn slot of thread %s", thread_id)
    try:
        # The ended turn is a new node on every open map of the family;
        # this thread's goes with the turn's end.
        return trajectory.turn_ended_patches(thread=kwargs["thread"], turn_index=turn_index), left
    except Exception:
        logger.exception("could not update the trajectory map of thread %s", thread_id)
        return {}, left


def _await_approval(*, usage: list[dict], **kwargs) -> tuple[str, list[dict]]:
    """The turn's pause for approval (approval_claims.turn_await_approval),
    then its model calls' usage; returns the turn's status and the usage
    rows the database did not take. Raises as the pause's write does."""
    waiting = approval_claims.turn_await_approval(**kwargs)
    return waiting, _store_usage(usage)


class OpenCallRow:
    """Where the usage of the model call streaming now is stored: the turn
    watcher stores its estimate (what it was sent, from its first round
    after the call starts; then what it streamed so far) twice a second, so
    a server killed mid-call leaves it counted (docs/adr/0063, 0154); the
    call's real figure, or its last estimate, then replaces that row (the
    same key) rather than adding one."""

    __slots__ = ("key", "saved", "saved_chars", "tried")

    def __init__(self) -> None:
        self.key = uuid.uuid4()  # the call's row's, made as the call is counted (docs/adr/0154)
        self.tried = False  # an estimate went to the database: it may be stored, answered or not
        self.saved = False  # the watcher stored an estimate, and heard so
        self.saved_chars = 0  # the streamed characters its stored estimate counts


@dataclass
class OpenCallEstimate:
    """One half-second save of the open call's estimate (TurnRun.open_call_estimate)."""

    row: dict
    chars: int
    holder: OpenCallRow


class TurnStopped(Exception):
    """The person asked the turn to stop (or the server is shutting down)."""


@dataclass(frozen=True)
class Resume:
    """The person's answer to the approval a turn waits for (turns.approval_claims):
    `decision` is approval_claims.APPROVED, REJECTED or STOPPED (Stop: rejected, and
    the turn ends); `approval` is the row's (the interrupt it answers and
    the request, for the card), None if the row holds none it can read."""

    decision: str
    approval: TurnApproval | None
    person: object = None  # who answered

    @property
    def interrupt_id(self) -> str:
        return self.approval.interrupt_id if self.approval else ""

    @property
    def request(self) -> ApprovalRequest | None:
        return self.approval.request if self.approval else None


def resumed_call(resume: Resume | None) -> ResumedCall | None:
    """What the agent is told of the call the person answered (agent.approvals):
    the row's call id and their decision. A row that names no call leaves
    it empty, and the agent then runs no call on that answer."""
    if resume is None:
        return None
    request = resume.request
    return ResumedCall(
        call_id=request.call_id if request else "",
        approved=resume.decision == approval_claims.APPROVED,
        document_version=request.document.version if request and request.document else None,
        shown_kind=request.kind if request else "",
        shown=request.shown if request else None,
        listed=request.listed if request else None,
        listed_as=request.listed_as if request else "",
    )


class TurnRun:
    def __init__(
        self,
        *,
        thread: Thread,
        turn_index: int,
        user_message: str,
        model: ModelChoice | None,
        agents: AgentProvider,
        mode: str = Thread.Mode.EXECUTE,
        resume: Resume | None = None,
        selection: Selection | None = None,
        selection_note: str = "",
        user_id: int | None = None,
        turn_id: int | None = None,
        budget: TokenBudget | None = None,
        person=None,
        card_left: slot.LeftCard | None = None,
    ):
        self.thread = thread
        # The turn before ended while its card waited, stopped, maybe with no
        # run to answer it (turns.slot.turn_claim).
        self.card_left = card_left
        # The mode travels with the turn (changing it meanwhile is for the
        # next one), and so does the passage the person asked about, shown
        # to every model call of the turn, and the person's token limits.
        self.context = AgentContext(
            thread=thread,
            turn_index=turn_index,
            mode=mode,
            selection=selection,
            budget=budget or TokenBudget(),
            resuming=resumed_call(resume),
            # Who sent the message: the prompt names them, and the agent's
            # writes are recorded on their behalf (docs/adr/0085).
            person=person,
            person_name=people.display_name(person),
        )
        # Whose tokens the model calls are, and the turn row they belong to (docs/adr/0063).
        self.user_id = user_id
        self.turn_id = turn_id
        self._usage: list[dict] = []  # rows not stored yet (turns.registry stores them)
        # The model call sent and not yet counted, and the characters it has
        # streamed: counted from those if it never reports its usage.
        self._open_call: ModelCallStarted | None = None
        self._open_call_chars = 0
        self._open_row = OpenCallRow()  # its estimate's row, if the watcher stored one
        # The watcher's save in flight with this turn's usage (turns.registry):
        # the turn's end waits for it, so the row it stores is replaced, not
        # stored again beside it.
        self.usage_saving: asyncio.Event | None = None
        self.limit_notice = ""  # set when the turn stopped at the person's token limit
        # Set by turns.registry when an approved turn goes on with another model
        # than it began with (its model was taken away meanwhile).
        self.model_notice = ""
        self.turn_index = turn_index
        self.user_message = user_message
        self.selection_note = selection_note  # said under the message: sent without its selection
        self.model = model  # None: no model for this person (agents.graph says so)
        self.agents = agents
        self.stop_event = asyncio.Event()
        self.shutting_down = False  # set with stop_event by a server shutdown
        self.graph = None
        self.steps: list[Step] = []  # in call order
        self._step_numbers: dict[str, int] = {}  # tool call id -> 1-based step number
        self.draft: list[str] = []  # text streamed by the current model call
        self._draft_chars = 0
        # The draft reached HAICO_ANSWER_MAX_CHARS: it ends with the cut note,
        # and the model is being stopped (agent.answer_cap).
        self._draft_cut = False
        self.answer_max_chars = answer_max_chars()
        self._held_whitespace = ""
        self.final_text = ""
        self.cut_off = False
        self.no_answer_notice = ""
        self._cut_off_logged = False  # the activity log told of a cut-off reply already
        self._saved_length = 0  # of the draft, as last stored (turns.registry)
        self._last_sent = time.monotonic()
        self.resume = resume
        self.approval: ApprovalAsked | None = None  # the approval the turn paused for
        # Set once the turn stops streaming: what follows is its end (or its
        # card), sent whole, and a page that joins from then on is given no
        # snapshot of it running (it would arrive after that end).
        self.ending = False
        # The history repair the checkpointer could not take (the database
        # away): write_repair's arguments, tried again before the turn's end
        # is stored, so the next turn's model sees what this one wrote.
        self._repair_left: dict | None = None
        # The turn has ended (or paused for an approval) and that waits for the
        # database (docs/adr/0131): what the tabs were told, for a page that
        # connects meanwhile.
        self.ending_kept: list[str] = []

    @staticmethod
    def prepare() -> None:
        """Load what a turn's first fragments would: the chat and live-patch
        templates and the markdown renderer."""
        turn = fragments.turn_context(turn_index=0, user_message="", steps=[Step(text="x")], answer="*x*", running=True)
        fragments.turn_shell(turn, title="x")
        fragments.steps(0, [Step(text="x")], first_number=1)
        fragments.closing({**turn, "running": False})
        render_markdown("*x*")
        for name in ("objective", "preferences", "plan", "centre"):
            get_template(f"workspace/panels/{name}.html")
        get_template("workspace/panels/live.html")

    # -- sending --

    def send(self, html: str, *, too_big: str = RESYNC) -> None:
        publisher.publish(self.thread.pk, html, too_big=too_big)
        self._last_sent = time.monotonic()

    def send_tokens(self, text: str) -> None:
        """The answer's next tokens, at the end of what the pages show of it:
        the tokens of one send reach a page as one fragment (conversations.live)."""
        publisher.publish_append(self.thread.pk, fragments.answer_content_id(self.turn_index), escape_html(text))
        self._last_sent = time.monotonic()

    def _turn(self, *, answer: str = "", running: bool = True, ending=None, approval=None) -> dict:
        return fragments.turn_context(
            turn_index=self.turn_index,
            user_message=self.user_message,
            steps=self.steps,
            answer=answer,
            running=running,
            ending=ending,
            thread_id=self.thread.pk,
            approval=approval,
            person_name=self.context.person_name,
            selection_note=self.selection_note,
        )

    def resync_fragments(self) -> list[str]:
        """The reasoning and the answer so far, for a page opened mid-turn:
        the start of the answer in place, the rest appended in pieces; once
        the turn has ended (or paused for an approval) and that waits for
        the database, what the tabs were told of it; [] while its end is on
        its way to every page.

        Exactly the text sent so far: whitespace held back for the next word
        (`_token`) goes out with that word, so it is not in the snapshot."""
        if self.ending_kept:
            return list(self.ending_kept)
        if self.ending:
            return []
        text = "".join(self.draft)
        if self._held_whitespace:
            text = text[: len(text) - len(self._held_whitespace)]
        first, rest = text[:TOKEN_PIECE_CHARS], text[TOKEN_PIECE_CHARS:]
        if not rest.strip():
            first, rest = text, ""
        turn = self._turn()
        turn["answer_html"] = escape(first)
        return [fragments.in_progress(turn)] + [fragments.tokens(self.turn_index, piece) for piece in _pieces(rest)]

    def unsaved_usage(self) -> list[dict]:
        """The model calls' usage rows not stored yet; they are the caller's to store now.

        A call whose estimate the watcher stored while it streamed replaces
        that row (the call's key): counted once. Taken when no save of the
        watcher's is in flight (`usage_settled`), so the estimate is not
        stored after its call's real figure."""
        rows, self._usage = self._usage, []
        return rows

    def open_call_estimate(self) -> OpenCallEstimate | None:
        """The streaming call's usage as estimated now (its request's
        estimate and what it streamed, / 4), for the watcher to store; None
        once stored while it has streamed nothing new since. Its request
        goes at the first round after the call starts, streamed or not
        (docs/adr/0154): a call that is quick, or slow to its first token,
        and a server killed before its end would leave its prompt counted
        nowhere; a call the provider refused takes it back (_end)."""
        started, chars, holder = self._open_call, self._open_call_chars, self._open_row
        if started is None or self.user_id is None or (holder.saved and chars <= holder.saved_chars):
            return None
        holder.tried = True
        row = self._usage_row(
            ModelCallUsage(started.input_tokens_estimate, math.ceil(chars / 4), estimated=True, model=started.model),
            key=holder.key,
        )
        return OpenCallEstimate(row=row, chars=chars, holder=holder)

    async def usage_settled(self) -> None:
        """Wait for the watcher's save in flight with this turn's usage, if any."""
        saving = self.usage_saving
        if saving is not None:
            await saving.wait()

    def keep_usage(self, rows: list[dict]) -> None:
        """Rows the caller could not store: they go with the next batch."""
        self._usage = rows + self._usage

    def _count_open_call(self) -> None:
        """Count the call that was sent and never reported its usage (the
        turn stopped, or its stream broke): its request as estimated when it
        was sent, and what it streamed, estimated and marked so (a provider
        bills what it read and wrote before the connection closed)."""
        started, self._open_call = self._open_call, None
        if started is not None and self.user_id is not None:
            streamed = math.ceil(self._open_call_chars / 4)  # agent.usage's estimate: characters / 4
            row = self._usage_row(
                ModelCallUsage(started.input_tokens_estimate, streamed, estimated=True, model=started.model),
                key=self._open_row.key,
            )
            self._usage.append(row)
        self._open_call_chars = 0
        self._open_row = OpenCallRow()

    def _usage_row(self, event: ModelCallUsage, *, key: uuid.UUID) -> dict:
        model = self.model
        return {
            "key": key,
            "user_id": self.user_id,
            "thread_id": self.thread.pk,
            "turn_id": self.turn_id,
            "turn_index": self.turn_index,
            "provider_id": model.provider_id if model else None,
            "provider_name": (model.provider_name if model else "")[:100],
            "model": (model.model if model else event.model)[:200],
            "model_key": (model.key if model else "")[:200],
            "input_tokens": max(0, event.input_tokens),
            "output_tokens": max(0, event.output_tokens),
            "estimated": event.estimated,
            "created_at": timezone.now(),
        }

    def unsaved_answer(self) -> str | None:
        """The answer streamed so far if it grew since it was last stored,
        else None; marks it stored (turns.registry stores it)."""
        if len(self.draft) == self._saved_length:
            return None
        self._saved_length = len(self.draft)
        return "".join(self.draft)

    # -- the task --

    async def run(self) -> str:
        """Run the turn to its end; returns the turn's status (conversations.models.Turn.Status).

        Every line logged meanwhile, here or in the agent, names the thread
        and the turn (conversations.turns.logcontext)."""
        ids = current_turn.set(TurnIds(thread_id=str(self.thread.pk), turn_index=self.turn_index))
        started = time.monotonic()
        logger.info("turn %s of thread %s %s", self.turn_index, self.thread.pk, "resumed" if self.resume else "started")
        status = Turn.Status.INTERRUPTED  # unless it gets to say otherwise
        try:
            status = await self._run()
        finally:
            logger.info(
                "turn %s of thread %s ended (%s) after %.1f s",
                self.turn_index,
                self.thread.pk,
                status,
                time.monotonic() - started,
            )
            current_turn.reset(ids)
        return status

    async def _run(self) -> str:
        status, notice = Turn.Status.COMPLETE, ""
        try:
            if self.resume is None:
                self.send(fragments.turn_shell(self._turn(), title=self.thread.title if self.turn_index == 1 else None))
            else:
                await self._answered()
            await self._stream()
            if self.approval is not None:
                status = Turn.Status.AWAITING
        except TurnStopped:
            if self.shutting_down:
                status, notice = Turn.Status.INTERRUPTED, INTERRUPTED_SHUTDOWN
            else:
                status = Turn.Status.STOPPED
            stopped_approval = self.resume is not None and self.resume.decision == approval_claims.STOPPED
            await self._repair(
                partial="".join(self.draft),
                tool_result=INTERRUPTED_TOOL_RESULT
                if self.shutting_down
                else APPROVAL_STOPPED_RESULT
                if stopped_approval
                else CANCELLED_TOOL_RESULT,
            )
        except asyncio.CancelledError:
            # Server shutdown after the grace period: still release the slot below.
            status, notice = Turn.Status.INTERRUPTED, INTERRUPTED_SHUTDOWN
            raise
        except Exception as exc:
            if database_unreachable(exc) and self.final_text and self.approval is None:
                # The model had finished its answer (the Answer event comes
                # before the step's checkpoint is written): only the
                # history's copy is missing. The turn is complete; its answer
                # goes into the history with its end (docs/adr/0131).
                logger.warning(
                    "the database did not answer as turn %s of thread %s ended; its answer is complete and is kept",
                    self.turn_index,
                    self.thread.pk,
                )
                await self._repair(partial=None, tool_result=FAILED_TOOL_RESULT, answer=self.final_text)
            else:
                status, notice = Turn.Status.FAILED, await self._failure_notice(exc)
                if is_provider_failure(exc):
                    logger.warning(
                        "turn %s of thread %s failed at the model provider (%s): %r",
                        self.turn_index,
                        self.thread.pk,
                        operator_detail(exc, self.model),
                        exc,
                    )
                else:
                    logger.exception("turn %s of thread %s failed", self.turn_index, self.thread.pk)
                await self._note(activity.turn_failed(exc, notice))
                await self._repair(partial=None, tool_result=FAILED_TOOL_RESULT)
        finally:
            self.ending = True
            if status == Turn.Status.AWAITING:
                await self._hold_for_approval()
            else:
                await self._end(status, notice)
        return status

    async def _failure_notice(self, exc: BaseException) -> str:
        """What the failed turn says: a provider's failure names its model
        and, when the person may choose another, suggests it."""
        others = False
        if self.model is not None and is_provider_failure(exc):
            try:
                offered = await database_sync_to_async(catalogue.choices_for)(self.context.person)
                others = any(choice.key != self.model.key for choice in offered)
            except Exception:
                logger.warning("could not read the models offered while turn %s failed", self.turn_index, exc_info=True)
        return safe_error_message(exc, model=self.model, others=others)

    async def _end(self, status: str, notice: str) -> None:
        """Release the slot, record how the turn ended and tell every open tab."""
        refused = status == Turn.Status.FAILED and not self._open_call_chars
        if refused:
            self._open_call = None  # the provider refused or failed the call: nothing was paid for
        await self.usage_settled()
        if refused and self._open_row.tried:
            # The watcher stored its request's estimate at its first round (docs/adr/0154).
            self._usage.append({"key": self._open_row.key, "withdrawn": True})
        self._count_open_call()
        answer = self.final_text if status == Turn.Status.COMPLETE else "".join(self.draft)
        cut_off = self.cut_off and status == Turn.Status.COMPLETE
        if status == Turn.Status.COMPLETE and not answer.strip():
            notice = self.no_answer_notice
        elif cut_off:
            notice = outcome.CUT_OFF
        elif status == Turn.Status.COMPLETE and self.limit_notice:
            notice = self.limit_notice
        elif status == Turn.Status.COMPLETE and self.model_notice:
            notice = self.model_notice
        ending = outcome.marker(status=status, cut_off=cut_off, notice=notice, answered=bool(answer.strip()))
        maps = await self._store_end(
            {"status": status, "answer": answer, "cut_off": cut_off, "notice": notice},
            usage=self.unsaved_usage(),
            ending=ending,
        )
        if maps is None:
            return  # never stored: the server shut down first

        def answer_content() -> str:
            return fragments.closing_content(self._turn(answer=answer, running=False, ending=ending))

        try:
            # The answer as stored (a long one is rendered off the event loop,
            # and fetched by the pages if too big to push: conversations.live).
            content = await _off_loop(answer_content)() if len(answer) > TOKEN_PIECE_CHARS else answer_content()
            self.send(content, too_big=RESYNC_CHAT)
        except Exception:
            logger.exception("could not send the answer of turn %s of thread %s", self.turn_index, self.thread.pk)
        try:
            # Apart and always small: no tab goes on showing the turn running.
            self.send(fragments.closing_end(self._turn(running=False, ending=ending)))
        except Exception:
            logger.exception("could not send the end of turn %s of thread %s", self.turn_index, self.thread.pk)
            self.send(RESYNC_CHAT)
        for member, html in maps.items():
            publisher.publish(member, html)

    async def _store_end(self, end: dict, *, usage: list[dict], ending) -> dict | None:
        """Store the turn's end (turns.slot.turn_finish, after the history
        repair left to do) and its usage, and return the maps' patches
        (_finish), however long the database is away (_keep_trying).

        None if the server shuts down first: the end is lost with the
        process, and the sweep of another (or the next) run releases the
        turn as it would any dead server's."""
        maps: dict | None = None
        first = True

        async def store() -> bool:
            nonlocal maps, first
            if self._repair_left is not None and not first:
                await self._repair(**self._repair_left)
            first = False
            if self._repair_left is not None:
                return False
            if maps is not None:
                return await self._store_kept_usage()  # the end is stored; its usage was not
            # _finish raises only for the database away (or the hop's own connection check).
            stored, maps = await self._store_once(
                lambda: _finish(thread=self.thread, turn_index=self.turn_index, usage=usage, **end),
                what="the end of turn %s of thread %s",
                given_up={},
            )
            return stored

        def lost() -> None:
            if maps is not None:
                self._usage_lost()  # the end is stored: the tabs get it below
                return
            logger.error(
                "the end of turn %s of thread %s (%s, %d characters of answer) could not be stored before the "
                "server shut down; the turn keeps what was stored before the database went away",
                self.turn_index,
                self.thread.pk,
                end["status"],
                len(end["answer"]),
            )
            self._send_quietly(fragments.marker_swap(self._turn(running=False, ending=_kept(ending, ENDING_LOST))))

        await self._keep_trying(store, tell=lambda: self._ending_kept_fragments(end["answer"], ending), lost=lost)
        return maps

    async def _keep_trying(self, store, *, tell, lost) -> bool:
        """Call `store` until it has stored what it keeps (it returns True
        then, False while the database does not answer); True once stored.

        It is tried again every KEEP_ENDING_RETRY_SECONDS, however long it
        takes: the task goes on, so the watcher keeps storing the answer and
        refreshing the claim, and no sweep takes the turn for a dead
        server's (docs/adr/0131). The tabs are told once what is true
        meanwhile (`tell` returns those fragments; a page that connects
        meanwhile gets them too). False if the server shuts down first, after
        `lost` has said so: nothing more can be done without the database."""
        while not await store():
            if not self.ending_kept:
                self.ending_kept = await tell()
                for html in self.ending_kept:
                    self._send_quietly(html, too_big=RESYNC_CHAT)
            if self.shutting_down:
                lost()
                return False
            try:
                # A server shutdown sets the event: one more try, at once.
                await asyncio.wait_for(self.stop_event.wait(), KEEP_ENDING_RETRY_SECONDS)
            except TimeoutError:
                pass
            if not self.shutting_down:
                # A Stop has nothing left to stop: the turn has ended (or paused), it only waits to be stored.
                self.stop_event.clear()
        return True

    async def _store_once(self, hop, *, what: str, given_up):
        """One try of `hop`, a database hop that stores the turn's end or
        pause and returns its result with the usage rows the database did
        not take (kept here for the next try). Returns whether all of it is
        stored, and the hop's result: None while the database does not
        answer; `given_up` after any other failure (logged: a bug must not
        be tried for ever). `what` names it in the log, with the turn's
        index and thread."""
        try:
            result, left = await database_sync_to_async(hop)()
        except Exception as error:
            if outages.unreachable_service(error) != outages.DATABASE:
                logger.exception("could not store " + what, self.turn_index, self.thread.pk)
                return True, given_up
            outages.note(
                logger,
                error,
                "could not store " + what + "; it is kept and stored once the database answers",
                self.turn_index,
                self.thread.pk,
            )
            return False, None
        self.keep_usage(left)
        return not left, result

    def _usage_lost(self) -> None:
        rows = self.unsaved_usage()
        logger.error(
            "the usage of %d model call(s) of turn %s of thread %s could not be stored before the server shut down",
            len(rows),
            self.turn_index,
            self.thread.pk,
        )

    async def _store_kept_usage(self) -> bool:
        """The usage rows kept because the database did not take them
        (keep_usage), stored; False while it does not answer."""
        rows = self.unsaved_usage()
        if not rows:
            return True
        try:
            left = await database_sync_to_async(_store_usage)(rows)
        except Exception as error:
            # The hop's own connection check: nothing was stored.
            if outages.unreachable_service(error) != outages.DATABASE:
                logger.exception("could not store the usage of %d model call(s)", len(rows))
                return True
            left = rows
        self.keep_usage(left)
        return not left

    async def _ending_kept_fragments(self, answer: str, ending) -> list[str]:
        """The tabs see the turn's end (its answer rendered, its marker with
        why it is not saved yet) and a status that takes no message until
        the end is stored: a message sent now would run on a history
        without this turn."""
        kept = _kept(ending, ENDING_KEPT)

        def content() -> str:
            # Rendering the answer's markdown (in _turn) is the long part.
            return fragments.closing_content(self._turn(answer=answer, running=False, ending=kept))

        return [
            await _off_loop(content)() if len(answer) > TOKEN_PIECE_CHARS else content(),
            fragments.marker_swap(self._turn(running=False, ending=kept))
            + fragments.controls(running=False, saving=True)
            + fragments.notice(""),
        ]

    async def _pause_kept_fragments(self) -> list[str]:
        """The tabs see the turn so far, paused (its marker says its
        question is not saved yet, so no card to answer), and a status that
        takes no message: the turn is not over, it waits for the person."""
        kept = outcome.Marker("saving", PAUSE_KEPT, False)
        return [
            fragments.in_progress(self._turn())
            + fragments.marker_swap(self._turn(ending=kept))
            + fragments.controls(running=False, saving=True)
            + fragments.notice("")
        ]

    def _send_quietly(self, html: str, *, too_big: str = RESYNC) -> None:
        try:
            self.send(html, too_big=too_big)
        except Exception:
            logger.exception("could not tell the tabs of turn %s of thread %s", self.turn_index, self.thread.pk)

    # -- approvals (docs/adr/0017) --

    async def _hold_for_approval(self) -> None:
        """The agent paused before a hard-to-undo change: the turn waits,
        with no process running it, until the person answers (registry.answer_approval).

        A pause the database does not take is kept here and tried again as
        a turn's end is (_keep_trying): given up, the row would stay
        running until a sweep called it a dead server's turn, and the
        question would be gone. The tabs are told meanwhile that it is not
        saved yet, and get the card once it is."""
        asked = self.approval
        await self.usage_settled()
        usage = self.unsaved_usage()
        waiting: str | None = None

        async def store() -> bool:
            nonlocal waiting
            if waiting is not None:
                return await self._store_kept_usage()  # the pause is stored; its usage was not
            stored, waiting = await self._store_once(
                lambda: _await_approval(
                    thread=self.thread,
                    turn_index=self.turn_index,
                    interrupt_id=asked.interrupt_id,
                    request=asked.request,
                    usage=usage,
                ),
                what="the approval turn %s of thread %s waits for",
                given_up="",
            )
            return stored

        def lost() -> None:
            if waiting is not None:
                self._usage_lost()  # the pause is stored: the tabs get its card below
                return
            logger.error(
                "the approval turn %s of thread %s waits for could not be stored before the server shut down",
                self.turn_index,
                self.thread.pk,
            )
            self._send_quietly(
                fragments.marker_swap(self._turn(running=False, ending=outcome.Marker("saving", ENDING_LOST, False)))
            )

        await self._keep_trying(store, tell=self._pause_kept_fragments, lost=lost)
        if waiting != Turn.Status.AWAITING:
            # None: never stored, the server shut down first (_keep_trying).
            # Released meanwhile by another process, or the card answered on
            # the spot (a Stop asked, the sender's account ended): the tabs
            # are told, and the next turn answers the call (docs/adr/0129).
            return
        await self._note(activity.approval_asked(asked.request))
        approval = fragments.approval_view(TurnApproval(interrupt_id=asked.interrupt_id, request=asked.request), pending=True)
        ending = outcome.marker(status=Turn.Status.AWAITING)
        try:
            self.send(fragments.in_progress(self._turn()) + fragments.approval_card(self._turn(ending=ending, approval=approval)))
        except Exception:
            logger.exception("could not send the approval card of turn %s of thread %s", self.turn_index, self.thread.pk)

    async def _answered(self) -> None:
        """Going on after the person's answer: the card says what they chose, in every tab."""
        decision = self.resume.decision
        words = {
            approval_claims.APPROVED: "Approved",
            approval_claims.REJECTED: "Rejected",
            approval_claims.STOPPED: "Rejected (Stop)",
        }[decision]
        request = self.resume.request
        await self._note(activity.approval_answered(words, request.summary if request else ""), person=self.resume.person)
        answered = replace(self.resume.approval, decision=decision) if self.resume.approval else None
        approval = fragments.approval_view(answered, pending=False)
        self.send(fragments.approval_card(self._turn(approval=approval)))

    def _approved_call_id(self) -> str:
        """The id of the tool call the person approved, if this run resumed with an approval."""
        if self.resume is None or self.resume.decision != approval_claims.APPROVED:
            return ""
        return self.resume.request.call_id if self.resume.request else ""

    async def _approved_call_ended(self, event: StepFinished) -> None:
        """The approved change ran: if it could not be applied (in full) the
        card says so instead of a plain "Approved by …", in every tab and on
        the row (a reload, a branch and an archive show the same)."""
        if event.status == StepStatus.FAILED:
            outcome = "overlap" if event.overlap else "failed"
        elif event.status == StepStatus.SKIPPED:
            outcome = "partial"
        else:
            return
        try:
            await database_sync_to_async(approval_claims.turn_approval_outcome)(
                thread=self.thread, turn_index=self.turn_index, outcome=outcome
            )
        except Exception:
            logger.exception("could not record the outcome of the approval of turn %s", self.turn_index)
        approval = fragments.approval_view(
            replace(self.resume.approval, decision=approval_claims.APPROVED, outcome=outcome), pending=False
        )
        self.send(fragments.approval_card(self._turn(approval=approval)))

    async def _stream(self) -> None:
        saver = await checkpointers.get_checkpointer()
        self.graph = self.agents.graph(model=self.model, checkpointer=saver)
        if self.resume is None:
            if self.card_left is not None:
                # Its call gets its result first (nothing to do when a Stop answered it): the history says why.
                await complete_left_calls(
                    self.graph,
                    thread_id=self.thread.pk,
                    turn_index=self.card_left.turn_index,
                    tool_result=APPROVAL_STOPPED_RESULT if self.card_left.by_stop else CARD_LEFT_RESULT,
                )
            events = stream_turn(self.graph, context=self.context, user_message=self.user_message)
        else:
            await self._load_steps()
            if self.resume.decision == approval_claims.STOPPED:
                raise TurnStopped
            document = self.resume.request.document if self.resume.request else None
            decision = {
                "approved": self.resume.decision == approval_claims.APPROVED,
                "document_version": document.version if document else None,
            }
            events = resume_turn(self.graph, context=self.context, interrupt_id=self.resume.interrupt_id, decision=decision)
        await self._drain(events)

    async def _load_steps(self) -> None:
        """A resumed turn's steps so far, from the checkpointer: the tabs
        show them already, and new ones are numbered on from them."""
        state = await self.graph.aget_state(turn_config(self.thread.pk))
        messages = list((state.values or {}).get("messages") or [])
        for call_id, step in turn_steps(messages, turn_index=self.turn_index):
            self.steps.append(step)
            if call_id:
                self._step_numbers[call_id] = len(self.steps)

    async def _drain(self, events) -> None:
        """Consume the agent's events until they end or a stop is asked for.

        The events are read in one task with a plain `async for` (per token,
        anything more, such as a task or a timed wait per event, is a
        measurable share of a turn's cost under load: docs/adr/0009); a stop
        cancels that task at the step it is waiting on, and a heartbeat goes
        out whenever nothing else did for a while."""
        consume = asyncio.ensure_future(self._consume(events))
        stop = asyncio.ensure_future(self.stop_event.wait())
        heartbeat = asyncio.ensure_future(self._heartbeats())
        try:
            done, _ = await asyncio.wait((consume, stop), return_when=asyncio.FIRST_COMPLETED)
            if consume in done:
                consume.result()  # the agent's own error, if it failed
                return
            raise TurnStopped
        finally:
            stop.cancel()
            heartbeat.cancel()
            if not consume.done():
                consume.cancel()
                await asyncio.wait((consume,))
            if not consume.cancelled():
                consume.exception()  # retrieved; a stop (or the error raised above) is what matters
            try:
                await events.aclose()
            except Exception:
                logger.debug("agent stream did not close cleanly", exc_info=True)

    async def _consume(self, events) -> None:
        async for event in events:
            await self._handle(event)

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, self._last_sent + HEARTBEAT_SECONDS - time.monotonic()))
            if time.monotonic() - self._last_sent >= HEARTBEAT_SECONDS:
                self.send(fragments.heartbeat())

    # -- agent events --

    async def _handle(self, event) -> None:
        if isinstance(event, Token):
            self._open_call_chars += len(event.text)
            self._token(event.text)
        elif isinstance(event, ArgumentsStreamed):
            self._open_call_chars += event.chars
        elif isinstance(event, DraftWithdrawn):
            self._withdraw_draft()
        elif isinstance(event, StepsStarted):
            self._steps_started(event)
        elif isinstance(event, Answer):
            self.final_text, self.cut_off = event.text, event.cut_off
            if event.cut_off and not self._cut_off_logged:
                await self._note(activity.answer_cut_off())
        elif isinstance(event, Diagnostic):
            if event.no_answer:
                self.no_answer_notice = event.message
            self._cut_off_logged = self._cut_off_logged or event.kind == ActivityLogEntry.Kind.TRUNCATION
            await self._note(activity.diagnostic(event))
        elif isinstance(event, ModelCallRetried):
            await self._note(activity.retried(event))
        elif isinstance(event, ModelCallStarted):
            # An attempt that broke mid-stream (the retry sends another)
            # was paid for what it streamed; one that failed before it wrote
            # anything (a refused request, a busy or failing server) was
            # not: the next attempt takes its row (its key), so an estimate
            # the watcher stored of it is the next one's, not a call of its own.
            if self._open_call is not None and self._open_call_chars:
                self._count_open_call()
            self._open_call, self._open_call_chars = event, 0
        elif isinstance(event, ModelCallUsage):
            self._open_call, self._open_call_chars = None, 0
            if self.user_id is not None:
                self._usage.append(self._usage_row(event, key=self._open_row.key))
            self._open_row = OpenCallRow()
        elif isinstance(event, CapReached):
            if event.cap == "tokens":
                self.limit_notice = outcome.TOKEN_LIMIT
            await self._note(activity.cap_reached(event))
        elif isinstance(event, ApprovalAsked):
            # Several calls of one step may ask: one card at a time; the
            # others ask again when the graph goes on.
            if self.approval is None:
                self.approval = event
        elif isinstance(event, StepFinished):
            # What the step changed is announced by the services themselves;
            # the trace only marks a step that did not work (or only in part).
            number = self._step_numbers.get(event.call_id)
            if number is not None:
                step = self.steps[number - 1]
                step.status = event.status
                note = step_note(event.error) if event.status == StepStatus.FAILED else ""
                if note:
                    step.note = note
                if event.status != StepStatus.DONE:
                    self.send(fragments.step_result(self.turn_index, number, step))
            sentence = self.steps[number - 1].text if number is not None else ""
            await self._note(activity.step_result(event, sentence))
            if event.call_id and event.call_id == self._approved_call_id():
                await self._approved_call_ended(event)

    def _steps_started(self, event: StepsStarted) -> None:
        first = len(self.steps) + 1
        new = [Step(text=sentence) for sentence in event.sentences]
        for offset, call_id in enumerate(event.call_ids):
            if call_id:
                self._step_numbers[call_id] = first + offset
        self.steps.extend(new)
        self.send(fragments.steps(self.turn_index, new, first_number=first))

    def _token(self, text: str) -> None:
        if self._draft_cut:
            return  # past HAICO_ANSWER_MAX_CHARS: the model is being stopped
        if self._draft_chars + len(text) > self.answer_max_chars:
            # The same cut the agent makes of the reply it stores (agent.answer_cap).
            text = capped_answer("".join(self.draft) + text, self.answer_max_chars)[self._draft_chars :]
            self._draft_cut = True
        self.draft.append(text)
        self._draft_chars += len(text)
        if not text.strip():
            # A bare whitespace fragment could be dropped by the HTML parser
            # on the client; it goes out with the next word instead.
            self._held_whitespace += text
            return
        text, self._held_whitespace = self._held_whitespace + text, ""
        for piece in _pieces(text):
            self.send_tokens(piece)

    def _withdraw_draft(self) -> None:
        if self.draft:
            self.draft.clear()
            self._draft_chars, self._draft_cut = 0, False
            self._saved_length = -1  # what was stored is no longer the answer
            self._held_whitespace = ""
            self.send(fragments.answer(self._turn()))

    async def _note(self, note: activity.Note | None, *, person=None) -> None:
        """Record an activity log entry of this turn (it reaches the open tabs
        on commit), as `person`'s (by default the turn's sender)."""
        if note is None:
            return
        try:
            await database_sync_to_async(services.activity_log)(
                thread=self.thread, turn_index=self.turn_index, person=person or self.context.person, **note.fields()
            )
        except Exception:
            logger.exception("could not record the %s of turn %s", note.kind, self.turn_index)

    async def _repair(self, *, partial: str | None, tool_result: str, answer: str | None = None) -> None:
        """Leave the history valid after the turn (agent.turn.write_repair). A
        repair the database was away for is kept and tried again before the
        turn's end is stored (_store_end)."""
        self._repair_left = None
        if self.graph is None:
            return
        try:
            await write_repair(
                self.graph,
                context=self.context,
                user_message=self.user_message,
                partial=partial,
                tool_result=tool_result,
                answer=answer,
            )
        except Exception as error:
            if database_unreachable(error):
                self._repair_left = {"partial": partial, "tool_result": tool_result, "answer": answer}
                outages.note(logger, error, "could not repair the history of turn %s; trying again", self.turn_index)
            else:
                logger.exception("could not repair the history of thread %s after turn %s", self.thread.pk, self.turn_index)


def _kept(ending: outcome.Marker, words: str) -> outcome.Marker:
    """The turn's marker while its end is not stored: what it will say, then why it is not saved yet."""
    return outcome.Marker("saving", f"{ending.text} {words}" if ending.text else words, False)


def _pieces(text: str, size: int = TOKEN_PIECE_CHARS) -> list[str]:
    """`text` in pieces of at most about `size` characters, none of them
    only whitespace (the HTML parser could drop it: it joins the next)."""
    if len(text) <= size:
        return [text] if text else []  # a token: the callers send none that is only whitespace
    pieces: list[str] = []
    carry = ""
    for start in range(0, len(text), size):
        piece = carry + text[start : start + size]
        if piece.strip():
            pieces.append(piece)
            carry = ""
        else:
            carry = piece
    if carry:
        if pieces:
            pieces[-1] += carry
        else:
            pieces.append(carry)
    return pieces


def _off_loop(function):
    """`function` run in a worker thread: rendering a long answer's markdown
    takes long enough to hold up every other turn of the process."""
    return sync_to_async(function, thread_sensitive=False)
