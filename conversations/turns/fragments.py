"""The chat fragments of a turn (templates/conversations/fragments/turn.html).

The page renders past turns with the `turn` partial; a running turn is
pushed as the same partials with hx-swap-oob, so a live turn and a reloaded
one look the same. Ids are per turn index: turn-N, turn-N-steps,
turn-N-answer-content, turn-N-marker."""

from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from agent.steps import Step, StepStatus
from workspace import selectors as workspace_selectors
from workspace.diff import diff_text
from workspace.markdown import render_markdown
from workspace.models import Thread
from workspace.text import escape_html

from ..live import Append
from .approval_record import APPROVED, TurnApproval
from .outcome import Marker, marker

TEMPLATE = "conversations/fragments/turn.html"


def turn_context(
    *,
    turn_index: int,
    user_message: str,
    steps=(),
    answer: str = "",
    running: bool = False,
    ending: Marker | None = None,
    latest: bool = True,
    thread_id=None,
    feedback_count: int = 0,
    versions=None,
    approval: dict | None = None,
    mode: str = "",
    person_name: str = "",
    selection_note: str = "",
) -> dict:
    """The one shape every turn partial renders: a past turn on the page, a
    running one, and one ended by another process. Retry is offered on the
    thread's latest turn only (a retry runs as the next turn); feedback on
    every ended turn (`thread_id` names its URLs)."""
    ending = ending or marker(status="running" if running else "complete", answered=bool(answer.strip()))
    return {
        "turn_index": turn_index,
        "user_message": user_message,
        # Who sent the message (workspace.people): the same for every viewer,
        # since a push is rendered once for all tabs; "" for a script's turn.
        "person_name": person_name,
        # Why the message went without the selection it was sent with, if it did.
        "selection_note": selection_note,
        "steps": list(steps),
        "steps_html": step_items(turn_index, steps),
        "answer_html": render_markdown(answer) if answer.strip() else "",
        "running": running,
        "marker_kind": ending.kind,
        "marker_text": ending.text,
        "retry": ending.retry and latest and not running,
        "thread_id": thread_id,
        # Not on a turn waiting for an approval: it has not ended.
        "feedback": thread_id is not None and not running and ending.kind != "awaiting",
        "feedback_count": feedback_count,
        # conversations.selectors.TurnVersions, when the turn has several.
        "versions": versions,
        # approval_view(): the turn's approval card, pending or answered.
        "approval": approval,
        # The mode the turn ran in (its row's; "" when unknown), for the admin's review.
        "mode_label": Thread.Mode(mode).label if mode in Thread.Mode.values else "",
    }


# What the card says when the change the person approved was not applied
# in full (the row's approval "outcome", set by turns.run when the approved
# call's step ends).
APPROVAL_OUTCOMES = {
    "overlap": "but it could not be applied: the same passage was edited meanwhile. Nothing was overwritten.",
    "failed": "but it could not be applied; nothing was changed.",
    "partial": "but only part of it could be applied.",
    # The server stopped between the answer and the turn's end (turns.slot).
    "interrupted": "but the server stopped before the turn finished: check the workspace for whether it was made.",
}
APPROVAL_WORDS = {"approved": "Approved", "rejected": "Rejected", "stopped": "Stopped"}
# A card whose turn ended with no answer given: a copy (an archive, or a
# branch of such a copy) of a turn that was waiting when it was made. The
# call it asked about never ran (docs/adr/0017).
UNANSWERED = "unanswered"
UNANSWERED_TITLE = "Not answered: this change was not made"


def approval_title(approval: TurnApproval) -> str:
    """What the answered card says: the answer, who gave it (the same name
    for every viewer, docs/adr/0085), and an approved change that could not
    be applied in full. A card answered before names were kept says no name;
    one never answered says so."""
    if not approval.decision:
        return UNANSWERED_TITLE
    words = APPROVAL_WORDS.get(approval.decision, "Rejected")
    if approval.answered_by_name:
        words += f" by {approval.answered_by_name}"
    outcome = APPROVAL_OUTCOMES.get(approval.outcome) if approval.decision == APPROVED else None
    if outcome:
        return f"{words}, {outcome}"
    if approval.decision == "stopped":
        return f"{words}: this change was not made"
    return words


def approval_view(approval: TurnApproval | None, *, pending: bool) -> dict | None:
    """What the approval card shows of a turn's approval (turns.approval_record);
    None without one."""
    if approval is None:
        return None
    request = approval.request
    # Not waiting and never answered: the card says so, not nothing.
    decision = "" if pending else approval.decision or UNANSWERED
    view = {
        "pending": pending,
        "decision": decision,
        "outcome": decision == APPROVED and approval.outcome in APPROVAL_OUTCOMES,
        "title": "" if pending else approval_title(approval),
        "summary": request.summary,
        "reason": request.reason,
        "details": list(request.details),
        "diff": None,
    }
    document = request.document
    if document is not None:
        if pending:
            # Only a waiting card shows the preview, and only its first changes,
            # bounded as the History's comparisons are (docs/adr/0138): the whole
            # rewrite of a long document compared every line word by word, for a
            # card that showed its first 80 rows. The preview is only a view: the
            # request keeps both texts whole, and approving applies all of it.
            view["diff"] = diff_text(
                document.old,
                document.new,
                max_changes=workspace_selectors.DIFF_CHANGES_SHOWN,
                max_lines=workspace_selectors.DIFF_LINES_SHOWN,
                max_chars=workspace_selectors.DIFF_CHARS_SHOWN,
            )
        if document.new_title and document.new_title != document.old_title:
            view["new_title"], view["old_title"] = document.new_title, document.old_title
    return view


def approval_card(turn: dict) -> str:
    """The turn's approval card in place, its marker, and the controls it
    implies; once answered, a refusal said while it waited goes too."""
    waiting = bool(turn["approval"] and turn["approval"]["pending"])
    return (
        fragment("approval", turn=turn, oob=True)
        + fragment("marker", turn=turn, oob=True)
        + controls(running=not waiting, awaiting=waiting)
        + ("" if waiting else notice(""))
    )


def ended(row, *, latest: bool) -> str:
    """A turn another process ended for its dead server (turns.slot): its
    answer so far, its marker and idle controls. Its reasoning steps are
    left as the tab shows them (they live in the checkpointer)."""
    return "".join(ended_parts(row, latest=latest))


def ended_parts(row, *, latest: bool) -> tuple[str, str]:
    """`ended` as (the answer, the marker with feedback and idle controls):
    pushed apart, the small second part reaches the page whatever the
    size of the first (conversations.live)."""
    turn = turn_context(
        turn_index=row.index,
        user_message=row.user_message,
        answer=row.answer,
        ending=marker(status=row.status, cut_off=row.cut_off, notice=row.notice, answered=bool(row.answer.strip())),
        latest=latest,
        thread_id=row.thread_id,
    )
    return (
        fragment("answer", turn=turn, oob=True),
        fragment("marker", turn=turn, oob=True)
        + fragment("feedback", turn=turn, oob=True)
        + controls(running=False)
        + notice(""),
    )


def fragment(name: str, **context) -> str:
    return render_to_string(f"{TEMPLATE}#{name}", context)


# The chat's status while a turn's end waits for the database (docs/adr/0131).
SAVING_STATUS = "Saving the turn once the database answers…"


def controls(*, running: bool, awaiting: bool = False, saving: bool = False) -> str:
    """`awaiting`: the latest turn waits for an approval (Stop rejects it).
    `saving`: the latest turn has ended and its end waits for the database:
    nothing to stop, and no message is taken until it is stored."""
    return fragment("controls", running=running, awaiting=awaiting, saving=saving, saving_status=SAVING_STATUS, oob=True)


def marker_swap(turn: dict) -> str:
    """The turn's marker, in place."""
    return fragment("marker", turn=turn, oob=True)


def notice(message: str, *, again: bool = False, closing: bool = False) -> str:
    """`again`: the message it answers was not acted on and its page sends
    it again by itself shortly (static/js/chat.js, docs/adr/0126).
    `closing`: it says why the socket closes next, and answers no message."""
    return fragment("notice", message=message, oob=True, again=again, closing=closing)


def access_notice(message: str, *, access: str) -> str:
    """The notice that the page's person now has `access` ("viewer" or
    "editor"): a viewer's stays while turns end and their notices go
    (static/js/live.js), until the page is reloaded or they edit again."""
    return fragment("notice", message=message, oob=True, access=access)


def turn_shell(turn: dict, *, title: str | None = None) -> str:
    """The new turn appended to the chat, the running controls and, for the
    thread's first turn, the title the message gave it. (An earlier turn's
    Retry hides itself once a later turn follows: static/css/chat.css.)"""
    return (
        fragment("turn_append", turn=turn, oob=False)
        + controls(running=True)
        + (fragment("thread_title", title=title) if title else "")
    )


# A step's status as its row shows it: a class, and a word after its text
# (a failed step's own note when it has one).
_STEP_LOOKS = {
    StepStatus.FAILED: (" is-failed", "Failed"),
    StepStatus.SKIPPED: (" is-skipped", "Skipped in part"),
    StepStatus.REJECTED: (" is-rejected", "Rejected"),
}


def step_item(turn_index: int, number: int, step: Step, *, swap: bool = False) -> str:
    """One sentence of the turn's "Internal reasoning" (agent.steps.Step), its
    element id turn-N-step-M. Written in Python, like the plan's rows
    (workspace.rows): a long turn shows a hundred steps and more, and the
    template engine took most of a big page's render on them. The step's
    text and note come from the model: escaped."""
    looks = _STEP_LOOKS.get(step.status)
    css, status = ("", "") if looks is None else looks
    if step.status == StepStatus.FAILED and step.note:
        status = step.note
    oob = ' hx-swap-oob="true"' if swap else ""
    said = f' <span class="step-status">{escape_html(status)}</span>' if status else ""
    return (
        f'<li id="turn-{int(turn_index)}-step-{int(number)}" class="reasoning-step{css}"{oob}>{escape_html(step.text)}{said}</li>'
    )


def step_items(turn_index: int, steps) -> SafeString:
    """The turn's steps, numbered from 1, for its reasoning list."""
    return mark_safe("".join(step_item(turn_index, number, step) for number, step in enumerate(steps, start=1)))


def steps(turn_index: int, steps, *, first_number: int) -> str:
    """Steps appended to the turn's reasoning (agent.steps.Step), numbered
    on from `first_number` (their element ids)."""
    return "".join(
        f'<ol id="turn-{int(turn_index)}-steps" hx-swap-oob="beforeend">{step_item(turn_index, number, step)}</ol>'
        for number, step in enumerate(steps, start=first_number)
    )


def step_result(turn_index: int, number: int, step: Step) -> str:
    """A step that failed or was skipped in part, re-rendered in place."""
    return step_item(turn_index, number, step, swap=True)


def answer_content_id(turn_index: int) -> str:
    """The element a turn's answer streams into (tokens are appended to it)."""
    return f"turn-{turn_index}-answer-content"


def tokens(turn_index: int, text: str) -> str:
    return Append(answer_content_id(turn_index), escape_html(text)).fragment()


def answer(turn: dict) -> str:
    return fragment("answer", turn=turn, oob=True)


def in_progress(turn: dict) -> str:
    """What a page opened mid-turn has missed: the reasoning and the answer so far."""
    return fragment("reasoning", turn=turn, oob=True) + fragment("answer", turn=turn, oob=True)


def closing(turn: dict) -> str:
    return closing_content(turn) + closing_end(turn)


def closing_content(turn: dict) -> str:
    """The end of a turn, first part: its answer and reasoning as stored
    (the answer can be large: conversations.live sends a stand-in then)."""
    return fragment("answer", turn=turn, oob=True) + fragment("reasoning", turn=turn, oob=True)


def closing_end(turn: dict) -> str:
    """The end of a turn, second part, always small: its marker, feedback
    and idle controls, so no tab goes on showing the turn running; and, the
    turn being over, no refusal said while it ran ("a turn is already
    running") either."""
    return (
        fragment("marker", turn=turn, oob=True) + fragment("feedback", turn=turn, oob=True) + controls(running=False) + notice("")
    )


def heartbeat() -> str:
    return fragment("heartbeat", oob=True)


def unsent(message: str, notice_text: str) -> str:
    return fragment("unsent", user_message=message, notice=notice_text) + notice("")


def ack(turn_index: int) -> str:
    return notice("") + fragment("ack", turn_index=turn_index, oob=True)
