"""conversations.turns.fragments: the feedback control a turn gets when it ends."""

import uuid

from conversations.turns import fragments

THREAD_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def test_a_running_turn_holds_a_placeholder_for_feedback():
    turn = fragments.turn_context(turn_index=3, user_message="hi", running=True, thread_id=THREAD_ID)
    html = fragments.turn_shell(turn)
    # By the control's own id, so the push at the turn's end always finds its target.
    assert '<div id="turn-3-feedback" class="turn-feedback" data-feedback-pending hidden></div>' in html
    assert "/feedback/" not in html
    # No out-of-band swap aimed at something the page may not have (the previous turn's Retry).
    assert "-retry" not in html


def test_the_end_of_a_turn_fills_only_its_placeholder_with_the_feedback_control():
    turn = fragments.turn_context(turn_index=3, user_message="hi", answer="done", thread_id=THREAD_ID)
    html = fragments.closing(turn)
    assert '<div id="turn-3-feedback" class="turn-feedback" hx-swap-oob="true">' in html
    assert f'hx-get="/threads/{THREAD_ID}/turns/3/feedback/"' in html
    # Without a thread (the runner's warm-up render) there is nothing to link to.
    assert "/feedback/" not in fragments.closing(fragments.turn_context(turn_index=3, user_message="hi", answer="x"))


def test_the_end_of_a_turn_and_an_answered_approval_clear_a_refusal_left_in_the_chat():
    """ "Answer the pending approval first" and the like were about that turn."""
    cleared = '<div id="chat-notice" class="chat-notice" role="alert" hidden hx-swap-oob="true"></div>'
    turn = fragments.turn_context(turn_index=3, user_message="hi", answer="done", thread_id=THREAD_ID)
    assert cleared in fragments.closing(turn)
    answered = {**turn, "approval": {"pending": False, "decision": "rejected", "summary": "Remove 1 preference."}}
    assert cleared in fragments.approval_card(answered)
    waiting = {**turn, "approval": {"pending": True, "decision": "", "summary": "Remove 1 preference."}}
    assert cleared not in fragments.approval_card(waiting)
