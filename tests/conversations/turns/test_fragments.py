"""conversations.turns.fragments: the feedback control a turn gets when it ends, and its reasoning steps."""

import re
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


def _report(paragraphs: int, sentences: int, verb: str, *, between: str = "\n\n") -> str:
    """A long report: `paragraphs` paragraphs of `sentences` sentences (about 75 characters each), each saying `verb`."""
    return between.join(
        " ".join(f"Sentence {k} of paragraph {n} {verb} what the study found about part {n}." for k in range(1, sentences + 1))
        for n in range(1, paragraphs + 1)
    )


def _waiting_card(old: str, new: str) -> str:
    from agent.approval_request import ApprovalRequest, DocumentChange
    from conversations.turns.approval_record import TurnApproval

    change = DocumentChange(old=old, new=new, old_title="Report", new_title="Report")
    approval = TurnApproval(interrupt_id="i", request=ApprovalRequest(kind="document", summary="Replace", document=change))
    view = fragments.approval_view(approval, pending=True)
    return fragments.approval_card(fragments.turn_context(turn_index=1, user_message="hi", running=True, approval=view))


def test_the_preview_of_a_rewrite_of_long_paragraphs_shows_their_first_lines_and_says_approving_makes_all_of_it():
    """The card showed the first 80 rows of the comparison whatever their
    length: the rewrite of a 199 000-character report of long paragraphs
    was a card of about 400 KB (docs/adr/0138 bounds it as the History's)."""
    old = _report(23, 128, "says", between="\n")
    new = _report(23, 128, "claims, in other words,", between="\n")
    assert len(old) > 198_000

    card = _waiting_card(old, new)

    assert "Preview of the document change: 2 lines added, 2 removed, 21 changed</summary>" in card
    assert "Sentence 1 of paragraph 1 says" in card and "Sentence 1 of paragraph 23 " not in card
    assert "more lines of this change, not shown" in card
    assert "Only part of the change is shown here: approving makes all of it." in card
    assert len(card.encode()) < 60_000


def test_the_preview_of_a_rewrite_of_every_paragraph_shows_the_first_changes_and_counts_the_rest():
    old, new = _report(358, 8, "says"), _report(358, 8, "claims")
    assert len(old) > 198_000

    card = _waiting_card(old, new)

    assert "Preview of the document change: the first 30 of 358 changes, 0 lines added, 0 removed, 358 changed</summary>" in card
    assert "Sentence 1 of paragraph 30 <del>says</del><ins>claims</ins> what" in card
    assert "Sentence 1 of paragraph 31 " not in card
    assert "328 more changes after these (328 lines), not shown." in card and "approving makes all of it." in card


def test_the_preview_of_rewritten_long_paragraphs_shows_the_new_text_of_each_old_line_it_shows():
    """Lines too long to compare word by word read as removed and added: the
    card showed every removed line first and ran out of room before the
    first added one, so the person approved text they were never shown,
    under a summary of "0 lines added, 23 removed"."""
    old = _report(23, 128, "says", between="\n")
    new = _report(23, 128, "claims, in other words,", between="\n")

    card = _waiting_card(old, new)

    removed, added = card.index("Removed line: "), card.index("Added line: ")
    assert removed < added < card.index("Removed line: ", removed + 1)  # each old line, then what replaces it
    assert "Sentence 1 of paragraph 1 claims, in other words, what" in card
    assert "Sentence 128 of paragraph 2 claims, in other words, what" in card
    assert "0 lines added" not in card and "21 more lines of this change, not shown" in card


def test_the_preview_of_one_rewritten_paragraph_longer_than_the_card_shows_the_start_of_both_and_says_they_are_cut():
    intro = "Intro line.\n\n"
    old_paragraph = " ".join(f"Old sentence {k} says what the study found." for k in range(1, 480))
    new_paragraph = " ".join(f"New sentence {k} claims the opposite of the study." for k in range(1, 480))
    assert 20_000 < len(old_paragraph) < len(new_paragraph) < 30_000

    card = _waiting_card(intro + old_paragraph + "\n\nOutro.", intro + new_paragraph + "\n\nOutro.")

    assert "Preview of the document change: 1 line added, 1 removed, 0 changed</summary>" in card
    assert "<del>Old sentence 1 says what" in card and "<ins>New sentence 1 claims the opposite" in card
    assert "New sentence 300 " in card and "New sentence 479 " not in card
    assert re.search(r"… and \d+ more characters of this line, not shown …", card)
    assert "Only part of the change is shown here: approving makes all of it." in card


def test_a_small_change_is_previewed_whole_and_an_answered_card_compares_nothing():
    from agent.approval_request import ApprovalRequest, DocumentChange
    from conversations.turns.approval_record import TurnApproval

    old = _report(358, 8, "says")
    new = old.replace("Sentence 3 of paragraph 50 says", "Sentence 3 of paragraph 50 claims")
    card = _waiting_card(old, new)
    assert "Preview of the document change: 0 lines added, 0 removed, 1 changed</summary>" in card
    assert "Sentence 3 of paragraph 50 <del>says</del><ins>claims</ins>" in card
    assert "approving makes all of it" not in card
    # An answered card shows no preview: the comparison is not made for it.
    change = DocumentChange(old=old, new=new)
    answered = TurnApproval(
        interrupt_id="i", request=ApprovalRequest(kind="document", summary="Replace", document=change), decision="approved"
    )
    assert fragments.approval_view(answered, pending=False)["diff"] is None
