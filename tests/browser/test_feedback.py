"""Feedback on a turn in Chromium: after a real turn (the scripted model
draws a chart), the person opens "Feedback" on the turn with the keyboard,
rates the chart, sees what they left, changes it, and after a reload finds
it as they changed it; the database holds one entry."""

import pytest
from playwright.sync_api import expect

from .helpers import (
    ANSWER,
    REQUEST,
    TURN_WAIT_MS,
    chart_turn_script,
    model_env,
    new_thread_for,
    thread_id_from,
    wait_for_socket,
)


@pytest.fixture
def model_server(model_server):
    model_server.script(chart_turn_script())
    return model_server


def test_the_person_leaves_feedback_on_a_turn_and_then_changes_it(page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    thread_id = thread_id_from(new_thread_for(page, server.url, "ada")).replace("-", "")
    chat = page.get_by_role("region", name="Chat")
    wait_for_socket(page)
    chat.get_by_role("textbox", name="Message").fill(REQUEST)
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator("#chat-messages .answer").first).to_have_text(ANSWER, timeout=TURN_WAIT_MS)

    # The control arrives with the turn's end (pushed, no reload) and opens from the keyboard.
    open_button = chat.get_by_role("button", name="Feedback on turn 1")
    expect(open_button).to_be_visible(timeout=TURN_WAIT_MS)
    open_button.focus()
    page.keyboard.press("Space")
    region = chat.get_by_role("region", name="Your feedback on turn 1")
    expect(region).to_be_visible()
    expect(region.get_by_role("heading", name="Your feedback on turn 1")).to_be_focused()

    # A choice the form refuses says why and keeps the form.
    form = region.get_by_role("group", name="Leave feedback")
    form.get_by_label("About").select_option(label="An artifact")
    form.get_by_label("Aspect").select_option(label="Correctness")
    form.get_by_role("radio", name="2 (weak)").check()
    form.get_by_role("button", name="Save feedback").click()
    expect(region.get_by_role("alert")).to_have_text("Choose which artifact the feedback is about.")
    assert server.query("SELECT COUNT(*) FROM conversations_feedback") == [(0,)]

    form = region.get_by_role("group", name="Leave feedback")
    form.get_by_label("About").select_option(label="An artifact")
    form.get_by_label("Which artifact").select_option(label="#1 bar_chart: Q1 vs Q2 Revenue")
    form.get_by_label("Aspect").select_option(label="Correctness")
    form.get_by_role("radio", name="2 (weak)").check()
    form.get_by_label("Comment (optional)").fill("Q2 bar looks short")
    form.get_by_role("button", name="Save feedback").click()
    expect(region.get_by_role("status")).to_have_text("Thank you: your feedback is saved.")
    entries = region.get_by_role("list", name="Feedback you left on turn 1")
    expect(entries.get_by_role("listitem")).to_have_count(1)
    expect(entries).to_contain_text("Artifact “Q1 vs Q2 Revenue” · Correctness · 2 of 5")
    expect(entries).to_contain_text("Q2 bar looks short")

    # Edit: the form starts from what was left; the change replaces it.
    entries.get_by_role("button", name="Edit feedback: Artifact “Q1 vs Q2 Revenue”, Correctness").click()
    edit = region.get_by_role("group", name="Change this feedback")
    expect(edit.get_by_label("Comment (optional)")).to_have_value("Q2 bar looks short")
    expect(edit.get_by_role("radio", name="2 (weak)")).to_be_checked()
    edit.get_by_role("radio", name="5 (excellent)").check()
    edit.get_by_label("Comment (optional)").fill("My mistake: the chart is right")
    edit.get_by_role("button", name="Save changes").click()
    expect(region.get_by_role("status")).to_have_text("Your feedback is changed.")
    expect(entries).to_contain_text("Correctness · 5 of 5")
    expect(entries).not_to_contain_text("Q2 bar looks short")

    region.get_by_role("button", name="Close feedback on turn 1").click()
    expect(chat.get_by_role("button", name="Feedback on turn 1 (1 left)")).to_be_focused()

    page.reload()
    wait_for_socket(page)
    chat.get_by_role("button", name="Feedback on turn 1 (1 left)").click()
    expect(chat.get_by_role("region", name="Your feedback on turn 1")).to_contain_text("My mistake: the chart is right")
    assert server.query(
        "SELECT turn_index, scope, aspect, rating, comment, artifact_title FROM conversations_feedback WHERE thread_id = ?",
        (thread_id,),
    ) == [(1, "artifact", "correctness", 5, "My mistake: the chart is right", "Q1 vs Q2 Revenue")]
