"""A save that cannot reach the server is tried again by itself, in
Chromium: when the browser is back online, when the page's socket
reconnects, and every few seconds meanwhile, with the state on screen. The
text never waits for the next key press (or the tab's closing) to be saved."""

import pytest
from playwright.sync_api import expect

from .helpers import document_status, document_text, stored_document, thread_id_from

pytestmark = pytest.mark.browser

SAVE_URL = "**/document/save/"


def _type(page, text):
    document_text(page).click()
    page.keyboard.type(text, delay=5)


def test_text_typed_offline_is_saved_when_the_browser_is_back_online(owner_workspace, haico_server):
    page, url = owner_workspace
    thread_id = thread_id_from(url)

    page.context.set_offline(True)
    _type(page, "Written on a train.")
    alert = page.get_by_role("region", name="Document").get_by_role("alert")
    expect(alert).to_contain_text("Not saved: the connection failed", timeout=10_000)
    expect(alert).to_contain_text("saved as soon as the connection is back")
    expect(document_status(page)).to_have_text("Not saved")
    assert stored_document(haico_server, thread_id) is None

    page.context.set_offline(False)  # no key pressed from here on
    expect(document_status(page)).to_have_text("Saved", timeout=10_000)
    expect(alert).to_have_count(0)
    assert stored_document(haico_server, thread_id) == "Written on a train."


def test_a_save_the_server_refused_to_take_is_tried_again_until_it_goes_through(owner_workspace, haico_server):
    page, url = owner_workspace
    thread_id = thread_id_from(url)
    answered = []

    def unavailable(route):
        answered.append(503)
        route.fulfill(status=503, body="restarting")

    page.route(SAVE_URL, unavailable)
    _type(page, "Written while the server restarts.")
    alert = page.get_by_role("region", name="Document").get_by_role("alert")
    expect(alert).to_contain_text("Not saved: the server answered 503", timeout=10_000)
    expect(alert).to_contain_text("trying again every few seconds")
    # Tried again by itself (the first retry comes two seconds after the failure).
    page.wait_for_timeout(2_500)
    assert len(answered) >= 2
    assert stored_document(haico_server, thread_id) is None

    page.unroute(SAVE_URL)  # the server is back; no key pressed from here on
    expect(document_status(page)).to_have_text("Saved", timeout=15_000)
    expect(alert).to_have_count(0)
    assert stored_document(haico_server, thread_id) == "Written while the server restarts."
    expect(document_text(page)).to_have_value("Written while the server restarts.")
