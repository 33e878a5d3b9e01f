"""conversations.turns.fragments: the feedback control a turn gets when it ends."""

import uuid

from conversations.turns import fragments

THREAD_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def test_a_running_turn_holds_a_placeholder_for_feedback():
    turn = fragments.turn_context(turn_index=3, user_message="hi", running=True, thread_id=THREAD_ID)
    html = fragments.turn_shell(turn)
    assert '<div id="turn-3-feedback-pending" hidden></div>' in html
    assert "/feedback/" not in html


def test_the_end_of_a_turn_fills_only_its_placeholder_with_the_feedback_control():
    turn = fragments.turn_context(turn_index=3, user_message="hi", answer="done", thread_id=THREAD_ID)
    html = fragments.closing(turn)
    assert 'hx-swap-oob="outerHTML:#turn-3-feedback-pending"' in html
    assert f'hx-get="/threads/{THREAD_ID}/turns/3/feedback/"' in html
    # Without a thread (the runner's warm-up render) there is nothing to link to.
    assert "/feedback/" not in fragments.closing(fragments.turn_context(turn_index=3, user_message="hi", answer="x"))
