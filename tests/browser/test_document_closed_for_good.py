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
    long_document,
    new_thread_for,
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
