"""The approval card in Chromium (docs/adr/0017): the agent asks before
removing a preference; the card has "Approve" and "Reject" buttons, another
open tab shows it too, a reload shows it still pending, a new message is
refused meanwhile, and Reject / Approve go on with the turn."""

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import OpenAICompatibleServer

from .helpers import (
    AUTOSAVE_WAIT_MS,
    MODEL,
    TURN_WAIT_MS,
    approval_card,
    document_in_two_tabs,
    document_status,
    document_text,
    model_env,
    new_thread_for,
    open_second_tab,
    send_message,
    type_after,
    wait_for_socket,
)

ASKING = "Dropping the rule you no longer want."


@pytest.fixture
def model_server(model_server):
    model_server.script(
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "add_preferences",
                        "Noting your rules.",
                        items=[{"title": "Formal tone", "kind": "soft"}, {"title": "Short paragraphs", "kind": "soft"}],
                    )
                ]
            ),
            Reply(text="Noted both rules."),
            Reply(tool_calls=[tool_call("remove_preferences", ASKING, indices=[1])]),
            Reply(text="Kept it, as you said."),
            Reply(tool_calls=[tool_call("remove_preferences", ASKING, indices=[1])]),
            Reply(text="Removed it."),
        ]
    )
    return model_server


def _card(page: Page):
    return page.get_by_role("region", name="Approval for turn 2")


def test_the_approval_card_asks_in_every_tab_survives_a_reload_and_answers(new_page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    send_message(page, "remember: formal tone, short paragraphs")
    expect(page.locator("#chat-messages .answer").first).to_have_text("Noted both rules.", timeout=TURN_WAIT_MS)
    preferences = page.get_by_role("region", name="Preferences")
    expect(preferences.get_by_text("Formal tone")).to_be_visible()

    other = open_second_tab(page, url)
    send_message(page, "drop the formal tone rule")
    for tab in (page, other):
        card = _card(tab)
        expect(card).to_contain_text("Remove 1 preference.", timeout=TURN_WAIT_MS)
        expect(card).to_contain_text("“Formal tone” (soft)")
        expect(card.get_by_role("button", name="Approve", exact=True)).to_be_visible()
        expect(card.get_by_role("button", name="Reject", exact=True)).to_be_visible()
        expect(tab.get_by_role("status")).to_contain_text("Waiting for your approval.")

    # Another message waits too: it is refused and stays in the box.
    send_message(other, "something else")
    expect(other.locator("#chat-notice")).to_contain_text("Answer the pending approval first")
    expect(other.get_by_role("region", name="Chat").get_by_role("textbox", name="Message")).to_have_value("something else")

    page.reload()
    wait_for_socket(page)
    expect(_card(page).get_by_role("button", name="Reject", exact=True)).to_be_visible()
    _card(page).get_by_role("button", name="Reject", exact=True).click()
    for tab in (page, other):
        expect(tab.locator("#chat-messages .answer").nth(1)).to_have_text("Kept it, as you said.", timeout=TURN_WAIT_MS)
        expect(_card(tab)).to_contain_text("Rejected by ada")  # the same name in every tab
        expect(_card(tab).get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    expect(preferences.get_by_text("Formal tone")).to_be_visible()

    other.get_by_role("region", name="Chat").get_by_role("textbox", name="Message").fill("")
    send_message(page, "no, really drop it")
    card = page.get_by_role("region", name="Approval for turn 3")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator("#chat-messages .answer").nth(2)).to_have_text("Removed it.", timeout=TURN_WAIT_MS)
    expect(card).to_contain_text("Approved by ada")
    expect(preferences.get_by_text("Formal tone")).to_have_count(0)
    expect(other.get_by_role("region", name="Preferences").get_by_text("Formal tone")).to_have_count(0)


REPORT = "\n\n".join(f"Paragraph {n} says something worth keeping." for n in range(1, 9)) + "\n"
OVERLAP = "Approved by ada, but it could not be applied: the same passage was edited meanwhile. Nothing was overwritten."


def test_an_approved_rewrite_of_a_passage_the_person_edited_meanwhile_says_it_was_not_applied(new_page, start_haico_server):
    with OpenAICompatibleServer(models=[MODEL]) as model_server:
        model_server.script(
            [
                Reply(
                    tool_calls=[tool_call("update_document", "Rewriting it much shorter.", content="Paragraph 1 is short now.\n")]
                ),
                Reply(text="I could not apply it: you changed that passage meanwhile."),
            ]
        )
        server = start_haico_server(model_env(model_server))
        page = new_page()
        other = document_in_two_tabs(page, server.url, REPORT)

        send_message(page, "make it short")
        card = approval_card(page, 1)
        # While the question waits, the person rewrites the passage the agent's text replaces.
        type_after(page, "Paragraph 1 says something", " I wrote this myself, and")
        expect(document_status(page)).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
        card.get_by_role("button", name="Approve", exact=True).click()

        for tab in (page, other):
            expect(tab.locator("#chat-messages .answer").first).to_have_text(
                "I could not apply it: you changed that passage meanwhile.", timeout=TURN_WAIT_MS
            )
            expect(tab.get_by_role("region", name="Approval for turn 1").locator(".approval-title")).to_have_text(OVERLAP)
        mine = REPORT.replace("Paragraph 1 says something", "Paragraph 1 says something I wrote this myself, and")
        expect(document_text(other)).to_have_value(mine)

        other.reload()
        expect(other.get_by_role("region", name="Approval for turn 1").locator(".approval-title")).to_have_text(OVERLAP)
        assert server.query("SELECT content FROM workspace_document") == [(mine,)]
