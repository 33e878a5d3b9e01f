"""The chat fragments of a turn (templates/conversations/fragments/turn.html).

The page renders past turns with the `turn` partial; a running turn is
pushed as the same partials with hx-swap-oob, so a live turn and a reloaded
one look the same. Ids are per turn index: turn-N, turn-N-steps,
turn-N-answer-content, turn-N-marker."""

from django.template.loader import render_to_string
from django.utils.html import escape

TEMPLATE = "conversations/fragments/turn.html"


def fragment(name: str, **context) -> str:
    return render_to_string(f"{TEMPLATE}#{name}", context)


def controls(*, running: bool) -> str:
    return fragment("controls", running=running, oob=True)


def notice(message: str) -> str:
    return fragment("notice", message=message, oob=True)


def turn_shell(turn: dict, *, title: str | None = None) -> str:
    """The new turn appended to the chat, the running controls and, for the
    thread's first turn, the title the message gave it."""
    return (
        fragment("turn_append", turn=turn, oob=False)
        + controls(running=True)
        + (fragment("thread_title", title=title) if title else "")
    )


def steps(turn_index: int, sentences) -> str:
    return "".join(fragment("step", turn_index=turn_index, sentence=sentence) for sentence in sentences)


def tokens(turn_index: int, text: str) -> str:
    return f'<div id="turn-{turn_index}-answer-content" hx-swap-oob="beforeend">{escape(text)}</div>'


def answer(turn: dict) -> str:
    return fragment("answer", turn=turn, oob=True)


def in_progress(turn: dict) -> str:
    """What a page opened mid-turn has missed: the reasoning and the answer so far."""
    return fragment("reasoning", turn=turn, oob=True) + fragment("answer", turn=turn, oob=True)


def closing(turn: dict) -> str:
    return (
        fragment("answer", turn=turn, oob=True)
        + fragment("reasoning", turn=turn, oob=True)
        + fragment("marker", turn=turn, oob=True)
        + controls(running=False)
    )


def heartbeat() -> str:
    return fragment("heartbeat", oob=True)


def unsent(message: str, notice_text: str) -> str:
    return fragment("unsent", user_message=message, notice=notice_text) + notice("")


def ack(turn_index: int) -> str:
    return notice("") + fragment("ack", turn_index=turn_index, oob=True)
