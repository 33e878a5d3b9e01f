"""The activity log in Chromium against the real server: an entry written
during a turn (a 429 the OpenAI SDK retried) appears in a tab whose log is
open, with its operator detail one click away, and is counted as unread on
the summary of a tab whose log is closed."""

import pytest
from playwright.sync_api import expect

from tests.support.openai_server import HTTPFailure, Reply

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, open_second_tab

pytestmark = pytest.mark.browser


@pytest.fixture
def model_server(model_server):
    model_server.script([HTTPFailure(429, "slow down", retry_after=0), Reply(text="Here is the outline.")])
    return model_server


def test_an_entry_appears_live_with_its_details_one_click_away(new_page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    closed_tab = open_second_tab(page, new_thread_for(page, server.url, "lovelace"))

    log = page.locator("#activity-log")
    log.locator("summary").first.click()
    expect(log.get_by_text("Nothing to report")).to_be_visible()

    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("Outline the essay")
    chat.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-messages .answer").first).to_have_text("Here is the outline.", timeout=TURN_WAIT_MS)

    entry = log.locator(".activity-entry").first
    expect(entry.locator(".activity-message")).to_have_text("The model was busy; retried once.")
    expect(log.get_by_text("Nothing to report")).to_be_hidden()
    detail = entry.locator(".activity-detail-text")
    expect(detail).to_be_hidden()
    entry.get_by_text("Details", exact=True).click()
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("HTTP 429")
    expect(detail).to_contain_text("slow down")
    # Opening the details left the log open.
    expect(log).to_have_attribute("open", "")

    # The other tab's log is closed: the summary counts the new entry.
    badge = closed_tab.locator("#activity-unread")
    expect(badge).to_be_visible()
    expect(badge).to_contain_text("1")
    closed_tab.locator("#activity-log summary").first.click()
    expect(badge).to_be_hidden()
    expect(closed_tab.locator("#activity-log .activity-message").first).to_have_text("The model was busy; retried once.")
