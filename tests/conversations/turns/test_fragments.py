"""conversations.turns.fragments: the feedback control a turn gets when it ends, and its reasoning steps."""

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


def test_reasoning_steps_show_their_status_and_escape_what_the_model_wrote():
    from agent.steps import Step, StepStatus

    steps = [
        Step(text="Adding <b>three</b> steps & a note."),
        Step(text="Rewriting the intro.", status=StepStatus.FAILED, note="The passage <was> edited meanwhile."),
        Step(text="Removing two steps.", status=StepStatus.FAILED),
        Step(text="Ticking off steps.", status=StepStatus.SKIPPED),
        Step(text="Deleting the draft.", status=StepStatus.REJECTED),
    ]
    page = fragments.turn_context(turn_index=4, user_message="hi", steps=steps)["steps_html"]
    assert page == (
        '<li id="turn-4-step-1" class="reasoning-step">Adding &lt;b&gt;three&lt;/b&gt; steps &amp; a note.</li>'
        '<li id="turn-4-step-2" class="reasoning-step is-failed">Rewriting the intro. '
        '<span class="step-status">The passage &lt;was&gt; edited meanwhile.</span></li>'
        '<li id="turn-4-step-3" class="reasoning-step is-failed">Removing two steps. <span class="step-status">Failed</span></li>'
        '<li id="turn-4-step-4" class="reasoning-step is-skipped">Ticking off steps. '
        '<span class="step-status">Skipped in part</span></li>'
        '<li id="turn-4-step-5" class="reasoning-step is-rejected">Deleting the draft. <span class="step-status">Rejected</span></li>'
    )
    # Pushed while the turn runs: appended to the list, or put in place when its result comes.
    assert fragments.steps(4, steps[:1], first_number=6) == (
        '<ol id="turn-4-steps" hx-swap-oob="beforeend"><li id="turn-4-step-6" class="reasoning-step">'
        "Adding &lt;b&gt;three&lt;/b&gt; steps &amp; a note.</li></ol>"
    )
    assert fragments.step_result(4, 2, steps[1]).startswith(
        '<li id="turn-4-step-2" class="reasoning-step is-failed" hx-swap-oob="true">'
    )
