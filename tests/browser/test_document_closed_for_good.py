"""A tab closed for good within a second of typing: its last save goes as
a beacon carrying only the part typed since the last save, so a long
document's last words are saved too, whatever characters it is written in,
and an overlap with a change saved meanwhile keeps both (static/js/
document_editor.js `asChangedPart`; docs/adr/0040)."""

import time

import pytest
from playwright.sync_api import expect

from .conftest import OWNER
from .helpers import (
    document_status,
    document_text,
    log_in,
    long_document,
    new_thread_for,
    save_document_now,
    save_through_service,
    stored_document,
    thread_id_from,
    type_after,
    wait_for_socket,
)

pytestmark = pytest.mark.browser


def _stored_becomes(server, thread_id, condition, *, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition(stored_document(server, thread_id)):
            return True
        time.sleep(0.25)
    return False


def _open(new_page, server, text):
    page = new_page()
    url = new_thread_for(page, server.url, OWNER)
    thread_id = thread_id_from(url)
    save_through_service(server, thread_id, text)
    page.goto(url)
    wait_for_socket(page)
    expect(document_text(page)).to_have_value(text)
    expect(document_status(page)).to_have_text("Saved")
    return page, thread_id


def _close_for_good(page):
    page.on("dialog", lambda dialog: dialog.accept())  # "Leave site?": Leave
    page.close(run_before_unload=True)
    deadline = time.monotonic() + 10
    while not page.is_closed() and time.monotonic() < deadline:
        page.context.cookies()  # lets Playwright deliver the dialog
        time.sleep(0.05)
    assert page.is_closed()


def _written_in_many_scripts(chars):
    # Astral characters (two UTF-16 units in the page, one code point on the
    # server) before and after where the person types, CJK, a combining
    # accent, right-to-left text.
    return (
        long_document(chars)
        .replace("weighs it.", "weighs it 👩\u200d👩\u200d👧 in 🇫🇷, 报告.")
        .replace("as reports do.", "as reports do: café\u0301, שלום, 😀.")
    )


@pytest.mark.parametrize("written", ["in English", "in many scripts"])
def test_the_last_words_typed_in_a_long_document_are_saved_when_its_tab_is_closed_for_good(new_page, haico_server, written):
    text = long_document(150_000) if written == "in English" else _written_in_many_scripts(120_000)
    anchor = "Paragraph 30.2 weighs it" + ("." if written == "in English" else " 👩\u200d👩\u200d👧 in 🇫🇷,")
    page, thread_id = _open(new_page, haico_server, text)
    type_after(page, anchor, " Last words 🙂 before closing.")
    expect(document_status(page)).to_have_text("Unsaved changes")
    _close_for_good(page)
    expected = text.replace(anchor, anchor + " Last words 🙂 before closing.", 1)
    assert _stored_becomes(haico_server, thread_id, lambda stored: stored == expected), (
        "the words typed before the tab closed were not saved"
    )


def test_the_last_words_are_saved_when_a_slow_machine_closes_the_tab(new_page, haico_server):
    """Chromium ends a closing page whose pagehide handlers have not run
    within a short time; on a slow or busy machine the beacon goes at
    beforeunload, which it waits for (docs/adr/0167). The page's CPU is
    slowed a hundredfold: sent from pagehide, these words were lost."""
    text = _written_in_many_scripts(120_000)
    anchor = "Paragraph 30.2 weighs it 👩\u200d👩\u200d👧 in 🇫🇷,"
    page, thread_id = _open(new_page, haico_server, text)
    type_after(page, anchor, " Last words 🙂 on a slow machine.")
    expect(document_status(page)).to_have_text("Unsaved changes")
    page.context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": 100})
    _close_for_good(page)
    expected = text.replace(anchor, anchor + " Last words 🙂 on a slow machine.", 1)
    assert _stored_becomes(haico_server, thread_id, lambda stored: stored == expected), (
        "the words typed before the slow tab closed were not saved"
    )


def test_staying_after_the_leave_prompt_saves_the_words_once_and_what_is_typed_next(new_page, haico_server):
    """The beacon went as the prompt showed; the person stays and types on:
    the next save names the beacon, so its words are not doubled."""
    text = long_document(100_000)
    page, thread_id = _open(new_page, haico_server, text)
    type_after(page, "Paragraph 20.2 weighs it.", " Before the prompt.")
    expect(document_status(page)).to_have_text("Unsaved changes")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))  # "Leave site?": Stay
    page.close(run_before_unload=True)
    deadline = time.monotonic() + 10
    while not dialogs and time.monotonic() < deadline:
        page.context.cookies()  # lets Playwright deliver the dialog
        time.sleep(0.05)
    assert dialogs == ["beforeunload"] and not page.is_closed()
    first = text.replace("Paragraph 20.2 weighs it.", "Paragraph 20.2 weighs it. Before the prompt.", 1)
    assert _stored_becomes(haico_server, thread_id, lambda stored: stored == first), (
        "the words typed before the prompt were not saved"
    )
    type_after(page, "Paragraph 40.2 weighs it.", " After staying.")
    expect(document_status(page)).to_have_text("Saved", timeout=15_000)
    both = first.replace("Paragraph 40.2 weighs it.", "Paragraph 40.2 weighs it. After staying.", 1)
    if not _stored_becomes(haico_server, thread_id, lambda stored: stored == both):
        stored = stored_document(haico_server, thread_id)
        pytest.fail(
            "after staying, the text saved is not what the editor holds: 'Before the prompt.' "
            f"{stored.count('Before the prompt.')} times, 'After staying.' {stored.count('After staying.')} times"
        )
    expect(document_text(page)).to_have_value(both)


@pytest.mark.parametrize("chars", [5_000, 100_000])
def test_words_typed_as_the_tab_closes_over_a_change_saved_meanwhile_are_kept_beside_it(new_page, haico_server, chars):
    """The other change's push never reaches this page (saved in another
    process), so its beacon overlaps it on the server; nobody is left to
    choose in a conflict view, so both are kept."""
    text = long_document(chars)
    page, thread_id = _open(new_page, haico_server, text)
    # Saved first: the page's own autosave, due 1.5 s after its last key,
    # must not go before the tab closes.
    save_through_service(haico_server, thread_id, text.replace("Paragraph 3.2 weighs it.", "Paragraph 3.2 decides."))
    type_after(page, "Paragraph 3.2 weighs", " carefully")
    expect(document_status(page)).to_have_text("Unsaved changes")
    _close_for_good(page)
    both = text.replace("Paragraph 3.2 weighs it.", "Paragraph 3.2 weighs carefully it decides.")
    assert _stored_becomes(haico_server, thread_id, lambda stored: stored == both), (
        f"the closing tab's words or the change saved meanwhile were lost: {stored_document(haico_server, thread_id)[300:500]!r}"
    )


def test_words_typed_after_the_session_ended_come_back_after_a_reload_and_logging_in_again(new_page, haico_server):
    """The page knows its session ended (its socket was closed so): a beacon
    would be refused, so none goes, and the words are kept in the tab."""
    text = long_document(120_000)
    page, thread_id = _open(new_page, haico_server, text)
    elsewhere = page.context.new_page()
    elsewhere.goto(f"{haico_server.url}/threads/")
    elsewhere.get_by_role("button", name="Log out").click()
    expect(elsewhere.get_by_role("link", name="Log in")).to_be_visible()
    elsewhere.close()
    expect(page.locator("#flash")).to_contain_text("session has ended")
    page.on("dialog", lambda dialog: dialog.accept())
    type_after(page, "Paragraph 2.2 weighs it.", " Typed 👍🏽 as the session ended.")
    expect(document_status(page)).to_have_text("Unsaved changes")
    url = page.url
    page.reload()  # within the autosave delay
    log_in(page, haico_server.url, OWNER)
    page.goto(url)
    wait_for_socket(page)
    expected = text.replace("Paragraph 2.2 weighs it.", "Paragraph 2.2 weighs it. Typed 👍🏽 as the session ended.", 1)
    assert _stored_becomes(haico_server, thread_id, lambda stored: stored == expected), (
        "the words typed after the session ended were lost"
    )
    expect(document_text(page)).to_have_value(expected)


def test_an_editor_made_a_viewer_finds_what_they_typed_since_on_the_thread_list_after_a_reload(new_page, haico_server):
    """Their saves are refused and a reloaded page has no editor: the words
    are kept for the thread list, as for a thread that is gone."""
    from .test_sharing import _set_role, _share

    owner = new_page()
    url = new_thread_for(owner, haico_server.url, "ada")
    save_document_now(owner, "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n")
    haico_server.create_user("bea")
    _share(owner, "bea", "Editor")
    bea = new_page()
    log_in(bea, haico_server.url, "bea")
    bea.goto(url)
    wait_for_socket(bea)
    _set_role(owner, "bea", "Viewer")
    expect(bea.locator("#chat-notice")).to_contain_text("made you a viewer")
    type_after(bea, "Methods paragraph.", " Bea's words ✍🏽 typed as a viewer.")
    bea.on("dialog", lambda dialog: dialog.accept())
    bea.reload()
    bea.goto(f"{haico_server.url}/threads/")
    kept = bea.get_by_role("region", name="Words that could not be saved")
    expect(kept.locator("textarea")).to_have_value(
        "# Report\n\nIntro paragraph.\n\nMethods paragraph. Bea's words ✍🏽 typed as a viewer.\n"
    )
    assert "typed as a viewer" not in (stored_document(haico_server, thread_id_from(url)) or "")
