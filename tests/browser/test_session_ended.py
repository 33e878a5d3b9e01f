"""A page whose session ended keeps what its person typed, in Chromium
(docs/adr/0108). The session ends in another tab (Log out there); the page
stays where it is, says at once what happened with a link to log in again
in a new tab, and once the person has, the document's text is saved by itself and a
form sent again goes through: the page picks up the CSRF token the login
renewed."""

import pytest
from playwright.sync_api import expect

from .conftest import OWNER
from .helpers import document_status, document_text, log_in, open_add_form, sign_up_quickly, thread_id_from

pytestmark = pytest.mark.browser


def _log_out_in_another_tab(page, base_url):
    other = page.context.new_page()
    other.goto(f"{base_url}/threads/")
    other.get_by_role("button", name="Log out").click()
    expect(other.get_by_role("link", name="Log in")).to_be_visible()
    other.close()


def _stored_document(server, thread_id):
    rows = server.query("SELECT content FROM workspace_document WHERE thread_id = ?", (thread_id.replace("-", ""),))
    return rows[0][0] if rows else None


def test_text_typed_after_the_session_ended_stays_and_is_saved_once_logged_in_again(owner_workspace, haico_server):
    page, url = owner_workspace
    thread_id = thread_id_from(url)
    _log_out_in_another_tab(page, haico_server.url)
    # Said at once, when the page's socket is closed for it, before anything is typed.
    notice = page.locator("#flash")
    expect(notice).to_contain_text("Your session has ended (you logged out elsewhere, or it expired).")
    expect(notice.get_by_role("link", name="Log in again")).to_be_visible()

    document_text(page).click()
    page.keyboard.type("Written after the session ended.", delay=5)
    region = page.get_by_role("region", name="Document")
    expect(region.get_by_role("alert")).to_contain_text("you are not logged in here any more", timeout=10_000)
    expect(document_status(page)).to_have_text("Not saved")
    expect(notice).to_contain_text("Your session has ended, so this was not done")
    link = notice.get_by_role("link", name="Log in again")
    expect(link).to_have_attribute("target", "_blank")
    # The page was not left for the login page, and the text is all there.
    assert page.url == url
    expect(document_text(page)).to_have_value("Written after the session ended.")
    assert _stored_document(haico_server, thread_id) is None

    with page.context.expect_page() as opened:
        link.click()
    login_tab = opened.value
    log_in(login_tab, haico_server.url, OWNER)
    login_tab.close()

    # No key pressed in the page since: its retry sends the text.
    expect(document_status(page)).to_have_text("Saved", timeout=15_000)
    assert _stored_document(haico_server, thread_id) == "Written after the session ended."
    expect(notice).to_be_hidden()


def test_a_step_sent_after_the_session_ended_stays_in_its_form_and_goes_once_logged_in_again(owner_workspace, haico_server):
    page, url = owner_workspace
    form = open_add_form(page, "Plan", "Add step")
    form.get_by_role("textbox").first.fill("Check the sources")
    _log_out_in_another_tab(page, haico_server.url)

    form.get_by_role("button", name="Add").click()
    expect(page.locator("#flash")).to_contain_text("Your session has ended")
    assert page.url == url
    expect(form.get_by_role("textbox").first).to_have_value("Check the sources")
    assert haico_server.query("SELECT count(*) FROM workspace_todo") == [(0,)]

    login_tab = page.context.new_page()
    log_in(login_tab, haico_server.url, OWNER)
    login_tab.close()
    form.get_by_role("button", name="Add").click()
    plan = page.get_by_role("region", name="Plan")
    expect(plan.get_by_text("Check the sources", exact=True)).to_be_visible()
    assert haico_server.query("SELECT text FROM workspace_todo") == [("Check the sources",)]


SOCKET_STATE = (
    "() => { const el = document.querySelector('[ws-connect]');"
    " const ws = el && el['htmx-internal-data'] && el['htmx-internal-data'].webSocket;"
    " return ws && ws.socket ? ws.socket.readyState : -1; }"
)


def _come_back_to(page):
    # What the browser fires when the person returns to the tab; headless
    # Chromium keeps every tab visible and focused, so it fires neither.
    page.evaluate("() => window.dispatchEvent(new Event('focus'))")


def test_the_page_is_live_again_once_its_person_logged_in_again_without_a_reload(owner_workspace, haico_server):
    page, url = owner_workspace
    _log_out_in_another_tab(page, haico_server.url)
    expect(page.locator("#flash")).to_contain_text("Your session has ended")
    expect(page.locator("#chat-notice")).to_contain_text("Your session has ended")
    # Back to the tab while still logged out: the page asks, and keeps saying what happened.
    _come_back_to(page)
    page.wait_for_timeout(500)
    expect(page.locator("#flash")).to_contain_text("Your session has ended (you logged out elsewhere, or it expired).")
    assert page.evaluate(f"({SOCKET_STATE})()") == 3

    other_tab = page.context.new_page()
    log_in(other_tab, haico_server.url, OWNER)
    _come_back_to(page)
    expect(page.locator("#flash")).to_be_hidden()
    expect(page.locator("#chat-notice")).to_be_hidden()
    page.wait_for_function(f"() => ({SOCKET_STATE})() === 1")

    # A step added in the other tab shows here as it is made: the page hears its thread again.
    other_tab.goto(url)
    form = open_add_form(other_tab, "Plan", "Add step")
    form.get_by_role("textbox").first.fill("Read chapter two")
    form.get_by_role("button", name="Add").click()
    expect(other_tab.get_by_role("region", name="Plan").get_by_text("Read chapter two", exact=True)).to_be_visible()
    expect(page.get_by_role("region", name="Plan").get_by_text("Read chapter two", exact=True)).to_be_visible()
    assert page.url == url


def test_the_page_stays_closed_to_someone_else_who_signed_in_in_its_browser(owner_workspace, haico_server):
    page, url = owner_workspace
    _log_out_in_another_tab(page, haico_server.url)
    expect(page.locator("#flash")).to_contain_text("Your session has ended")

    sign_up_quickly(page, haico_server.url, "grace")
    _come_back_to(page)
    notice = page.locator("#flash")
    expect(notice).to_contain_text("This browser is now signed in as someone else")
    expect(notice.get_by_role("link", name="Log in again")).to_be_visible()
    # The owner's page did not open its socket as grace.
    page.wait_for_timeout(500)
    assert page.evaluate(f"({SOCKET_STATE})()") == 3
    assert page.url == url
