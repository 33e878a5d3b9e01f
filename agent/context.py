"""What one run of the agent is about: the thread, the turn and its mode.

The compiled agent is shared by every thread (agent.builder builds it once
per model per process); LangGraph hands this context to the middleware
(`request.runtime.context`) and to every tool (`runtime.context`) of the
run it was passed to. It is never checkpointed."""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from workspace.models import DocumentRevision, Thread

logger = logging.getLogger("haico.agent")


@dataclass
class Seen:
    """What the latest model call of the run was shown, recorded by the
    prompt middleware before every call (agent.builder). A tool's write is
    based on it: the document version is update_document's base version, so
    what the person changed since is merged, not overwritten (docs/adr/0013).
    None until a model call has been shown the workspace."""

    document_version: int | None = None
    # That version's length, and how much of it the prompt showed: all of
    # it, or its first characters when it is longer than the prompt holds.
    document_length: int = 0
    document_shown_chars: int = 0
    # The parts read since with read_document: (version, start, end).
    document_read: list[tuple[int, int, int]] = field(default_factory=list)
    # Versions the run wrote itself, from a version it had seen whole and
    # with nothing of anyone else's merged in: it knows every character.
    document_written_whole: set[int] = field(default_factory=set)
    # The ids of the plan's steps and of the preferences, in the order the
    # block numbered them (#1, #2, ...): an index the model sends names the
    # row it was shown, wherever that row is now (docs/adr/0113).
    plan_shown: tuple[int, ...] | None = None
    preferences_shown: tuple[int, ...] | None = None
    # What those rows said then: a step's text and done mark, a
    # preference's title, subtitle and kind. A row someone changed since
    # keeps their change (docs/adr/0115).
    plan_steps_shown: dict[int, tuple[str, bool]] | None = None
    preference_values_shown: dict[int, tuple[str, str, str]] | None = None
    # The objective the latest call was shown ("" for none), and what the
    # run wrote since: another value found there was written by someone
    # else meanwhile, and set_objective keeps it (docs/adr/0114).
    objective_shown: str | None = None
    objective_written: set[str] = field(default_factory=set)

    def plan_steps_added(self, steps: dict[int, tuple[str, bool]]) -> None:
        """Steps the run added since its latest model call, in order: an
        index past the rows that call was shown names them, as the model
        counts when one reply adds a step and ticks it, whatever anyone
        else added meanwhile (docs/adr/0113)."""
        if self.plan_shown is None:
            return
        self.plan_shown += tuple(steps)
        if self.plan_steps_shown is not None:
            self.plan_steps_shown.update(steps)

    def preferences_added(self, preferences: dict[int, tuple[str, str, str]]) -> None:
        """Preferences the run added since its latest model call, as
        `plan_steps_added`."""
        if self.preferences_shown is None:
            return
        self.preferences_shown += tuple(preferences)
        if self.preference_values_shown is not None:
            self.preference_values_shown.update(preferences)

    def plan_steps_written(self, steps: dict[int, tuple[str, bool]]) -> None:
        """Steps the run rewrote or ticked since its latest model call, with
        the field the run wrote as it is now and the other as the model was
        shown it (workspace.services.plan): the run's own edit is not
        someone else's, so a later call of the same reply (a rename, then a
        tick or a removal of the same step) is not refused as "changed after
        you were shown it", while the person's rename or tick of that step
        meanwhile still is."""
        if self.plan_steps_shown is not None:
            self.plan_steps_shown.update(steps)

    def preferences_written(self, preferences: dict[int, tuple[str, str, str]]) -> None:
        """Preferences the run edited since its latest model call, as
        `plan_steps_written`."""
        if self.preference_values_shown is not None:
            self.preference_values_shown.update(preferences)

    def objective_known(self) -> set[str] | None:
        """The objective's values this run knows of; None: not recorded."""
        if self.objective_shown is None:
            return None
        return {self.objective_shown, *self.objective_written}

    def saw_the_whole_document(self) -> bool:
        """Whether the model was shown every character of the version its
        edits are based on: in the prompt, and in the parts it read of that
        version, or because the run wrote that version itself from one it
        had seen whole. Unknown (nothing recorded it: a script's call) counts
        as seen; an MCP call's is built from its token's reads
        (conversations.client_reads)."""
        if self.document_version is None or self.document_shown_chars >= self.document_length:
            return True
        if self.document_version in self.document_written_whole:
            return True
        covered = self.document_shown_chars
        for start, end in sorted((start, end) for version, start, end in self.document_read if version == self.document_version):
            if start > covered:
                break
            covered = max(covered, end)
        return covered >= self.document_length

    def wrote(self, version: int, *, from_whole: bool, merged: bool) -> None:
        """The run saved `version` of the document. Written from a version it
        had seen whole, with no one else's edits merged in, it is known whole
        too: a targeted edit of a long document that was read through does
        not make the model read it again before rewriting it."""
        if from_whole and not merged:
            self.document_written_whole.add(version)


@dataclass(frozen=True)
class Author:
    """Whom a tool call's writes are recorded as, on the document's and the
    objective's history: the in-app agent (during its turn), or the person
    through an MCP client, with the name of the token it used (docs/adr/0026)."""

    kind: str = DocumentRevision.Author.AGENT
    token_name: str = ""
    # The person it is done for: whose turn it is, or whose token
    # (docs/adr/0085). None outside a person's turn (scripts, tests).
    person: Any = None


AGENT_AUTHOR = Author()


@dataclass(frozen=True)
class Selection:
    """The passage of the document the person selected when they asked:
    character offsets [start, end) into the text and the text itself, as
    checked against the document when the message arrived. The prompt shows
    it in a <selection> element and the agent keeps its edits within it."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class TokenWindow:
    """One of a person's token limits as it stood when the run started (or
    last read it again: TokenBudget): the limit, the tokens used in its
    window outside the run, and when it resets."""

    period: str  # "day" or "month" (UTC)
    limit: int
    used: int
    resets_at: datetime


# How often a run with a token limit reads again what its person used
# elsewhere (their turns in other threads, on any server) before a model call,
# while it is alone and far from the limit (TokenBudget.reread_if_due).
USAGE_REREAD_SECONDS = 5.0
# "Near" a limit: what is left of it is at most this many of the run's
# largest calls; from there every model call reads the usage again first.
NEAR_LIMIT_CALLS = 3


@dataclass(eq=False)
class TokenBudget:
    """Per run: the person's token limits (agent.usage) and the tokens this
    run's model calls used so far.

    `reread`, given by whoever starts the run, reads the windows again
    (the limits as they are now, and what the person used outside this run:
    their other turns, running or not). The run calls it before a model
    call every USAGE_REREAD_SECONDS while it is alone and far from its
    limit, and before every model call while `others_running` says another
    run of its person is going on, or what is left is within
    NEAR_LIMIT_CALLS of its largest call: several turns of one person pass
    the limit together by at most the calls in flight when it was reached,
    one per running turn (docs/adr/0064, 0155). Compared by identity: the
    conversation layer keeps the runs going on per person."""

    windows: tuple[TokenWindow, ...] = ()
    spent: int = 0
    reread: Callable[[], Awaitable[tuple[TokenWindow, ...]]] | None = None
    read_at: float = field(default_factory=time.monotonic)
    # No I/O: whether another run of the person is going on, in this
    # process or (as last read) on another server.
    others_running: Callable[[], bool] | None = None
    largest_call: int = 0

    def count(self, tokens: int) -> None:
        """A model call of this run used `tokens` (agent.usage)."""
        self.spent += tokens
        self.largest_call = max(self.largest_call, tokens)

    def exhausted(self) -> TokenWindow | None:
        """The first limit the run has reached, if any."""
        return next((w for w in self.windows if w.used + self.spent >= w.limit), None)

    def _near(self) -> bool:
        margin = NEAR_LIMIT_CALLS * self.largest_call
        return any(w.limit - w.used - self.spent <= margin for w in self.windows)

    def _due(self) -> bool:
        if time.monotonic() - self.read_at >= USAGE_REREAD_SECONDS:
            return True
        # Only with a limit: a run without one keeps the cadence alone.
        return bool(self.windows) and ((self.others_running is not None and self.others_running()) or self._near())

    async def reread_if_due(self) -> None:
        if self.reread is None or not self._due():
            return
        self.read_at = time.monotonic()
        try:
            self.windows = await self.reread()
        except Exception as exc:
            # The database away for a moment: the turn goes on with the
            # limits it last read, and reads them again at a later call.
            logger.warning("could not read the person's token usage again (%r); going on with what was read before", exc)


@dataclass(frozen=True)
class ResumedCall:
    """The tool call a run resumed after an approval answers (agent.approvals),
    and the person's answer as the turn recorded it: built by the code that
    resumes the turn from the turn row, never read back from LangGraph's
    internals. `document_version`: the document version the card showed;
    `shown`: the rows its indices named."""

    call_id: str
    approved: bool
    document_version: int | None = None
    # The steps or preferences the card's indices named, as the model was
    # shown them (ApprovalRequest.shown), and which of the two.
    shown_kind: str = ""
    shown: tuple[int, ...] | None = None
    # The rows the card listed as removed (ApprovalRequest.listed), and
    # what they said on it (ApprovalRequest.listed_as).
    listed: tuple[int, ...] | None = None
    listed_as: str = ""


@dataclass(frozen=True)
class PausedCall:
    """A call of the run's reply that paused for the person's answer
    (agent.approvals), as its card was made: its place in the reply
    (1-based; None when unknown), its tool, the card's kind (document, plan
    or preferences) and the rows the card lists (None for the document: the
    card is about all of it)."""

    position: int | None
    name: str
    kind: str
    listed: tuple[int, ...] | None


@dataclass(frozen=True)
class AgentContext:
    thread: Thread
    turn_index: int = 0
    # The mode the turn runs in, as chosen when its message was sent: a
    # change of the thread's mode during the turn applies to the next one
    # (agent.modes, docs/adr/0018).
    mode: str = Thread.Mode.EXECUTE
    selection: Selection | None = None
    # Set when the run goes on after the person answered an approval.
    resuming: ResumedCall | None = None
    # Mutable, one per run: the context itself stays frozen.
    seen: Seen = field(default_factory=Seen)
    # Held by the tool call running: the calls of one reply run one at a
    # time, in the model's order (agent.middleware.call_order).
    calls: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The calls of the reply that paused for the person's answer in this
    # run: a later call of the reply that would change what one of their
    # cards lists is held back until the answer (agent.approvals).
    paused: list[PausedCall] = field(default_factory=list)
    budget: TokenBudget = field(default_factory=TokenBudget)
    # Who sent the turn's message, and the name the prompt gives them
    # (workspace.people), read once when the turn starts (docs/adr/0085).
    person: Any = None
    person_name: str = ""

    @property
    def author(self) -> Author:
        """The agent, on this turn's person's behalf."""
        return Author(person=self.person) if self.person is not None else AGENT_AUTHOR
