"""Context for the chat panel: the thread's past turns and the model choices.

The page view calls `chat_context`; a streamed turn (conversations.turns.run)
and a reloaded one share one shape and one template
(conversations/fragments/turn.html).

Past turns come from the LangGraph checkpointer (the agent's own history).
Two database facts complete it: a turn whose message never reached the
checkpointer (it failed before the agent started) still has its snapshot, and
a failed turn's error message is in the activity log.
"""

from collections.abc import Callable

from django.conf import settings
from django.urls import reverse

from agent import catalogue
from agent.history import PastTurn, past_turns
from workspace.models import Thread
from workspace.selectors import snapshot_messages_for
from workspace.url_templates import TURN

from .models import Turn
from .selectors import family_turn_versions, feedback_counts, has_active_branch_link, turn_errors_for, turn_rows_for
from .trajectory.reads import LoneThreadRows
from .turns.approval_claims import awaiting_approval
from .turns.approval_record import TurnApproval
from .turns.fragments import approval_view, turn_context
from .turns.message_checks import SELECTION_NOTES
from .turns.outcome import INTERRUPTED_LOST, marker
from .turns.slot import running_turn

# The page renders the latest turns; older ones come a page at a time when
# asked for (docs/adr/0095). A thread of 500 short turns made a 1.6 MB page
# that took 420 ms, nearly all of it rendering the turns.
CHAT_TURNS_SHOWN = 40


def chat_turns(*, thread: Thread, user=None, keep: Callable[[int], bool] | None = None) -> list[dict]:
    """Every turn of the thread as the chat shows it, oldest first; only
    those whose index `keep` accepts, when given.

    The checkpointer gives each turn's message, steps and answer; its turn
    row (conversations.models.Turn) how it ended, and the answer when the
    checkpointer has none (a turn interrupted mid-answer). Older threads
    have no rows: their failures come from the activity log."""
    history = ChatHistory(thread=thread, user=user)
    return [history.shown(index) for index in history.indices if keep is None or keep(index)]


class ChatHistory:
    """What the chat shows of each turn, read once: the turns are told apart
    cheaply, and only those a page shows are made into its turns (an
    answer's markdown, its approval card), so a thread of hundreds of turns
    costs a page what its latest turns do."""

    def __init__(self, *, thread: Thread, user=None):
        self.thread = thread
        turns = {turn.turn_index: turn for turn in past_turns(thread.pk)}
        self.messages = snapshot_messages_for(thread=thread)
        for turn_index, user_message in self.messages:
            if turn_index not in turns:
                turns[turn_index] = PastTurn(turn_index=turn_index, user_message=user_message)
        self.rows = turn_rows_for(thread=thread)
        self.feedback = feedback_counts(thread=thread, user=user) if user is not None else {}
        for turn_index, row in self.rows.items():
            # A branch has its source's turn rows but none of its snapshots.
            if turn_index not in turns:
                turns[turn_index] = PastTurn(turn_index=turn_index, user_message=row.user_message)
        self.turns = turns
        self.indices = sorted(turns)
        self.running = running_turn(thread)
        self.errors = turn_errors_for(thread=thread) if len(self.rows) < len(turns) else {}
        self.latest = max(turns, default=None)
        self.linked = has_active_branch_link(thread.pk)
        self.versions = family_turn_versions(thread=thread) if self.linked else {}

    def lone_rows(self) -> LoneThreadRows | None:
        """What the thread's map needs of the rows read here, when no active
        branch link joins it to another thread; None when one does."""
        if self.linked:
            return None
        statuses = {index: row.status for index, row in self.rows.items()}
        return LoneThreadRows(messages=self.messages, statuses=statuses, running=self.running)

    def shown(self, index: int) -> dict:
        turn, row = self.turns[index], self.rows.get(index)
        is_running = index == self.running
        if is_running:
            # The page shows the running turn empty; what has streamed so far
            # arrives over the socket (conversations.turns.registry.resync_html).
            answer, ending = "", None
        elif row is not None:
            answer = turn.answer if turn.answer.strip() else row.answer
            status, notice = row.status, row.notice
            if status == Turn.Status.RUNNING:
                # Its server died and nobody has released it yet.
                status, notice = (Turn.Status.STOPPED, "") if turn.stopped else (Turn.Status.INTERRUPTED, INTERRUPTED_LOST)
            ending = marker(status=status, cut_off=row.cut_off, notice=notice, answered=bool(answer.strip()))
            if status == Turn.Status.AWAITING:
                answer = ""  # its answer is still to come, after the approval
        elif turn.stopped:
            answer, ending = turn.answer, marker(status=Turn.Status.STOPPED)
        elif not turn.answer and index in self.errors:
            answer, ending = "", marker(status=Turn.Status.FAILED, notice=self.errors[index])
        else:
            answer, ending = turn.answer, marker(status=Turn.Status.COMPLETE)
        return turn_context(
            turn_index=index,
            user_message=turn.user_message,
            steps=turn.steps,
            answer=answer,
            running=is_running,
            ending=ending,
            latest=index == self.latest,
            thread_id=self.thread.pk,
            feedback_count=self.feedback.get(index, 0),
            versions=self.versions.get(index),
            approval=approval_view(TurnApproval.from_json(row.approval), pending=row.status == Turn.Status.AWAITING)
            if row
            else None,
            mode=row.mode if row else "",
            person_name=row.person_name if row else "",
            selection_note=SELECTION_NOTES.get(row.selection_note, "") if row else "",
        )


def chosen_model(thread: Thread, models: list) -> str | None:
    """The key of the model the chat's selector shows: the one last chosen
    in this thread while it is still offered to the person, else their
    default (agent.catalogue)."""
    chosen = (catalogue.find(models, thread.chat_model) if thread.chat_model else None) or next(iter(models), None)
    return chosen.key if chosen else None


def latest_turns(indices: list[int], *, through: int | None = None) -> tuple[list[int], dict | None]:
    """The turns a chat shows of the turns `indices` (oldest first): the
    latest CHAT_TURNS_SHOWN, or every one from turn `through` on; and what
    the "Show earlier turns" control needs for the rest (None: nothing is left)."""
    if through is None:
        first = max(0, len(indices) - CHAT_TURNS_SHOWN)
    else:
        first = next((i for i, index in enumerate(indices) if index >= through), len(indices))
    shown = indices[first:]
    if first == 0 or not shown:
        return shown, None
    return shown, {"count": first, "page": min(first, CHAT_TURNS_SHOWN), "before": shown[0]}


def shown_turns(*, thread: Thread, user, before: int | None = None, through: int | None = None) -> tuple[list[dict], dict | None]:
    """The turns a chat shows (`latest_turns`) of the thread's turns before
    turn `before` (all of them when None), and the control for the rest."""
    return _shown(ChatHistory(thread=thread, user=user), before=before, through=through)


def _shown(history: ChatHistory, *, before: int | None = None, through: int | None = None) -> tuple[list[dict], dict | None]:
    indices = history.indices if before is None else [index for index in history.indices if index < before]
    shown, earlier = latest_turns(indices, through=through)
    return [history.shown(index) for index in shown], earlier


def turn_state(thread: Thread) -> tuple[int | None, bool]:
    """The running turn's index, if any, and whether the latest turn awaits an approval."""
    running = running_turn(thread)
    return running, running is None and awaiting_approval(thread.pk) is not None


def chat_context(*, thread: Thread, user, history: ChatHistory | None = None) -> dict:
    """`history`: the thread's, as the caller has read it for this person."""
    history = history or ChatHistory(thread=thread, user=user)
    # The running turn and the latest turn's row as the history read them,
    # rather than read again (turn_state): one reading of the slot for the
    # controls and the turns alike.
    running = history.running
    latest_row = history.rows.get(max(history.rows, default=0))
    awaiting = running is None and latest_row is not None and latest_row.status == Turn.Status.AWAITING
    models = catalogue.choices_for(user)
    turns, earlier = _shown(history)
    return {
        "thread": thread,
        "turns": turns,
        "earlier": earlier,
        "running": running is not None,
        "running_turn_index": running,
        "awaiting_approval": awaiting,
        "models": models,
        "default_model": chosen_model(thread, models),
        "message_max_chars": settings.HAICO_MESSAGE_MAX_CHARS,
        # The page fills in the latest turn it shows (static/js/live.js, docs/adr/0043, 0081).
        "chat_from_url": reverse("conversations:chat-from", kwargs={"thread_id": thread.pk, "turn_index": TURN}),
    }
