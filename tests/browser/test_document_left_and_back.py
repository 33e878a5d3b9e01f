"""A person leaves the document's page and comes back (Back, Forward, a
reload), or a save's connection dies without an answer: what they typed
is saved, and nothing another window saved meanwhile is undone
(static/js/document_editor.js; docs/adr/0040)."""

import re

import pytest
from playwright.sync_api import expect

from .conftest import OWNER
from .helpers import (
    LATE_SOCKET_SCRIPT,
    document_status,
    document_text,
    log_in,
    long_document,
    new_thread_for,
    paste,
    save_document_now,
    save_through_service,
    stored_document,
    thread_id_from,
    type_after,
    wait_for_socket,
)

pytestmark = pytest.mark.browser


def _stored_becomes(page, server, thread_id, expected, *, seconds=10):
    for _ in range(seconds * 4):
        if stored_document(server, thread_id) == expected:
            return True
        page.wait_for_timeout(250)
    return False


def _open(new_page, server, size, *, script=None):
    page = new_page()
    if script:
        page.context.add_init_script(script)
    url = new_thread_for(page, server.url, OWNER)
    thread_id = thread_id_from(url)
    text = long_document(size)
    save_through_service(server, thread_id, text)
    page.goto(url)
    wait_for_socket(page)
    expect(document_text(page)).to_have_value(text)
    expect(document_status(page)).to_have_text("Saved")
    return page, url, thread_id, text


def _with(text, after, words):
    return text.replace(after, after + words, 1)


@pytest.mark.parametrize(
    ("size", "how", "pasted"), [(100_000, "reload", 0), (150_000, "back and forward", 0), (60_000, "reload", 70_000)]
)
def test_the_last_words_typed_before_leaving_a_long_document_are_saved_on_coming_back(new_page, haico_server, size, how, pasted):
    """The page's last save goes as a beacon carrying what was typed since
    the last save; a paste over the 64 KB a beacon takes is kept in the tab
    and saved when it shows the document again. Either way, the page that
    comes back shows it, even when the beacon lands while it loads."""
    page, _url, thread_id, text = _open(new_page, haico_server, size)
    page.on("dialog", lambda dialog: dialog.accept())  # "Leave site?": Leave
    type_after(page, "Paragraph 2.2 weighs it.", " Last words before leaving.")
    pasted_text = "".join(f"Pasted line {n}.\n" for n in range(pasted // 16 + 1))[:pasted]
    if pasted_text:
        paste(page, pasted_text)
    expect(document_status(page)).to_have_text("Unsaved changes")
    if how == "reload":
        page.reload()
    else:
        page.go_back()
        page.wait_for_load_state("load")
        page.go_forward()
    wait_for_socket(page)
    expected = _with(text, "Paragraph 2.2 weighs it.", " Last words before leaving." + pasted_text)
    assert _stored_becomes(page, haico_server, thread_id, expected), "the words typed before leaving were not saved"
    expect(document_text(page)).to_have_value(expected)
    expect(document_status(page)).to_have_text("Saved")


def test_back_to_the_editor_shows_and_keeps_what_another_window_saved_meanwhile(new_page, haico_server):
    page, url, thread_id, text = _open(new_page, haico_server, 30_000)
    type_after(page, "Paragraph 2.2 weighs it.", " A's words.")
    expect(document_status(page)).to_have_text("Saved", timeout=8_000)
    page.goto(f"{haico_server.url}/threads/")
    # The same person's other window edits elsewhere, and it is saved.
    other = new_page()
    other.context.add_cookies(page.context.cookies())
    other.goto(url)
    wait_for_socket(other)
    type_after(other, "Paragraph 9.2 weighs it.", " B's words.")
    expect(document_status(other)).to_have_text("Saved", timeout=8_000)

    page.go_back()
    wait_for_socket(page)
    # The browser put the earlier page's text back in the editor; the page shows the server's.
    both = _with(_with(text, "Paragraph 2.2 weighs it.", " A's words."), "Paragraph 9.2 weighs it.", " B's words.")
    expect(document_text(page)).to_have_value(both)
    type_after(page, "Paragraph 3.2 weighs it.", " A again.")
    expected = _with(both, "Paragraph 3.2 weighs it.", " A again.")
    assert _stored_becomes(page, haico_server, thread_id, expected), "A's next save undid B's saved words"


def test_a_save_a_dead_connection_never_answers_does_not_hold_back_the_saves_after_it(new_page, haico_server):
    page, _url, thread_id, text = _open(
        new_page, haico_server, 30_000, script="window.__socketDelayMs = 0;\n" + LATE_SOCKET_SCRIPT
    )
    page.evaluate("HAICO.saveTimeoutMs = 3000")  # the page waits 30 s; the test has less to spare
    swallowed = []
    network = {"dead": True}

    def save_request(route):
        if network["dead"]:
            swallowed.append(route)  # never answered, never failed
        else:
            route.continue_()

    page.route("**/document/save/", save_request)
    type_after(page, "Paragraph 2.2 weighs it.", " Typed just before the Wi-Fi died.")
    page.wait_for_timeout(2_000)
    assert swallowed, "the save should be on its way"
    page.evaluate("window.__dropSocket()")
    network["dead"] = False
    wait_for_socket(page)
    type_after(page, "Paragraph 3.2 weighs it.", " More after it came back.")
    expected = _with(
        _with(text, "Paragraph 2.2 weighs it.", " Typed just before the Wi-Fi died."),
        "Paragraph 3.2 weighs it.",
        " More after it came back.",
    )
    assert _stored_becomes(page, haico_server, thread_id, expected, seconds=15), (
        f"the text typed since the dead save is not saved; the editor says {document_status(page).inner_text()!r}"
    )
    expect(document_status(page)).to_have_text("Saved")


@pytest.mark.parametrize("how", ["a link", "Back"])
def test_words_the_last_save_took_and_another_window_then_deleted_do_not_come_back(new_page, haico_server, how):
    """Typed and left at once: the page's last save goes as a beacon and is
    stored; what the tab keeps for coming back is only what did not go."""
    page, url, thread_id, text = _open(new_page, haico_server, 20_000)
    page.on("dialog", lambda dialog: dialog.accept())
    type_after(page, "Paragraph 2.2 weighs it.", " DRAFT IDEA.")
    page.goto(f"{haico_server.url}/threads/")
    drafted = _with(text, "Paragraph 2.2 weighs it.", " DRAFT IDEA.")
    assert _stored_becomes(page, haico_server, thread_id, drafted), "the last save on leaving did not arrive"

    other = new_page()
    other.context.add_cookies(page.context.cookies())
    other.goto(url)
    wait_for_socket(other)
    expect(document_text(other)).to_have_value(drafted)
    save_document_now(other, text)  # the same person deletes the idea again in another window
    assert _stored_becomes(page, haico_server, thread_id, text)
    other.close()

    if how == "Back":
        page.go_back()
    else:
        page.goto(url)
    wait_for_socket(page)
    expect(document_text(page)).to_have_value(text)
    page.wait_for_timeout(2_000)
    assert stored_document(haico_server, thread_id) == text, "words saved and then deleted came back"


def test_words_typed_just_before_log_out_are_saved_before_the_session_ends(new_page, haico_server):
    """A beacon sent as the page goes would arrive after the logout."""
    page, url, thread_id, text = _open(new_page, haico_server, 5_000)
    type_after(page, "Paragraph 2.2 weighs it.", " Typed just before logging out.")
    page.get_by_role("button", name="Log out").click()  # within the autosave delay
    expect(page.get_by_role("link", name="Log in")).to_be_visible()
    expected = _with(text, "Paragraph 2.2 weighs it.", " Typed just before logging out.")
    assert _stored_becomes(page, haico_server, thread_id, expected), "the words typed before logging out were lost"


def test_words_the_page_could_not_save_once_the_session_ended_are_saved_after_a_reload_and_logging_in(new_page, haico_server):
    """The page said "Your text is still here"; the browser takes a beacon as
    the page goes, but the server refuses it: the tab keeps the words too."""
    page, url, thread_id, text = _open(new_page, haico_server, 5_000)
    elsewhere = page.context.new_page()  # the same person logs out in another tab
    elsewhere.goto(f"{haico_server.url}/threads/")
    elsewhere.get_by_role("button", name="Log out").click()
    expect(elsewhere.get_by_role("link", name="Log in")).to_be_visible()
    elsewhere.close()

    page.on("dialog", lambda dialog: dialog.accept())
    type_after(page, "Paragraph 2.2 weighs it.", " Typed as the session ended.")
    expect(document_status(page)).to_have_text("Not saved", timeout=8_000)
    page.reload()
    log_in(page, haico_server.url, OWNER)
    page.goto(url)
    wait_for_socket(page)
    expected = _with(text, "Paragraph 2.2 weighs it.", " Typed as the session ended.")
    assert _stored_becomes(page, haico_server, thread_id, expected), "the words the page kept were lost"


# Chrome hides a background tab (visibilitychange to hidden), then freezes it
# (freeze): the Page Lifecycle's last words before it discards the tab.
# CDP's Page.setWebLifecycleState does nothing in the headless shell, so the
# events are given here as Chrome gives them.
HIDE_AND_FREEZE = """() => {
    Object.defineProperty(document, "visibilityState", { value: "hidden", configurable: true });
    Object.defineProperty(document, "hidden", { value: true, configurable: true });
    document.dispatchEvent(new Event("visibilitychange"));
    document.dispatchEvent(new Event("freeze"));
}"""

# A discarded tab's renderer simply goes: no pagehide reaches the page.
NO_PAGEHIDE = "() => window.addEventListener('pagehide', (event) => event.stopImmediatePropagation(), true)"

LEFT_IN_THE_TAB = "() => Object.keys(sessionStorage).filter((key) => key.startsWith('haico:document-left:'))"


def test_words_the_owner_typed_offline_come_back_after_the_browser_discards_the_hidden_tab(new_page, haico_server):
    """Offline (a plane), she types in a 100 000-character document ("Not
    saved"), switches to another tab; Chrome freezes the hidden tab, later
    discards it (no pagehide) and reloads it when she comes back online:
    her words come back and are saved, merged with what another window of
    hers (or the agent) saved meanwhile."""
    page, url, thread_id, text = _open(new_page, haico_server, 100_000)
    page.context.set_offline(True)
    anchor, words = "Paragraph 6.2 weighs it.", " Typed on the plane before switching tabs."
    type_after(page, anchor, words)
    expect(document_status(page)).to_have_text("Not saved", timeout=10_000)
    page.evaluate(HIDE_AND_FREEZE)
    assert len(page.evaluate(LEFT_IN_THE_TAB)) == 1, "nothing of the unsaved words kept for a discarded tab's reload"

    theirs = _with(text, "Paragraph 50.2 weighs it.", " (other window)")
    save_through_service(haico_server, thread_id, theirs)
    page.evaluate(NO_PAGEHIDE)
    page.on("dialog", lambda dialog: dialog.accept())
    page.context.set_offline(False)
    page.reload()
    wait_for_socket(page)
    expected = _with(theirs, anchor, words)
    assert _stored_becomes(page, haico_server, thread_id, expected, seconds=20), "the words typed offline were lost"
    expect(document_text(page)).to_have_value(expected)
    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=10_000)


def test_words_saved_while_the_tab_was_hidden_do_not_come_back_after_the_browser_discards_it(new_page, haico_server):
    """Her words typed offline are kept when the tab hides, then saved while
    it is still hidden (the network is back); the agent or another window
    then takes them out. The discarded tab's reload must not bring them back."""
    page, url, thread_id, text = _open(new_page, haico_server, 30_000)
    page.context.set_offline(True)
    anchor, words = "Paragraph 4.2 weighs it.", " Words saved while hidden."
    type_after(page, anchor, words)
    expect(document_status(page)).to_have_text("Not saved", timeout=10_000)
    page.evaluate(HIDE_AND_FREEZE)
    assert len(page.evaluate(LEFT_IN_THE_TAB)) == 1
    page.context.set_offline(False)  # the page's `online`: the save goes again at once
    assert _stored_becomes(page, haico_server, thread_id, _with(text, anchor, words), seconds=20)
    expect(document_status(page)).to_have_text("Saved", timeout=10_000)
    assert page.evaluate(LEFT_IN_THE_TAB) == [], "what is saved is still kept for a reload"

    save_through_service(haico_server, thread_id, text)  # taken out again meanwhile
    page.evaluate(NO_PAGEHIDE)
    page.reload()
    wait_for_socket(page)
    expect(document_text(page)).to_have_value(text)
    page.wait_for_timeout(2_000)
    assert stored_document(haico_server, thread_id) == text, "the discarded tab's reload brought back deleted words"
