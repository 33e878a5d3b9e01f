"""Long documents, up to the limit (HAICO_DOCUMENT_MAX_CHARS, 200 000), in
Chromium against the real server: written through the document service (as
the agent's update_document writes them), reloaded, typed in, saved, and a
change made in another tab shows up.

Over 8 000 characters the preview comes by its own request after the page
(workspace.panels.PREVIEW_INLINE_MAX_CHARS). That request once inherited the
editor form's target: its answer replaced the save state and the version the
next save is based on, so after a reload no save went through ("The editor
did not say which version it was editing") and nothing from elsewhere came
in."""

import re

import pytest
from playwright.sync_api import expect

from .helpers import (
    document_status,
    document_text,
    long_document,
    save_document_now,
    save_through_service,
    thread_id_from,
    type_after,
    wait_for_socket,
)

pytestmark = pytest.mark.browser

SIZES = [2_000, 7_900, 8_100, 20_000, 100_000, 199_000]
# Saving and pushing 200 000 characters on a busy test machine.
LONG_WAIT_MS = 30_000


def _stored(server, thread_id: str) -> str:
    return server.query("SELECT content FROM workspace_document WHERE thread_id = ?", (thread_id.replace("-", ""),))[0][0]


def _last_paragraph(text: str) -> str:
    return re.findall(r"Paragraph (\d+)\.1 of the report says what was found in part \1\.", text)[-1]


def test_a_long_document_written_by_the_service_saves_after_a_reload_and_takes_other_tabs_edits(owner_workspace, haico_server):
    first, url = owner_workspace
    thread_id = thread_id_from(url)
    second = first.context.new_page()

    for size in SIZES:
        text = long_document(size)
        save_through_service(haico_server, thread_id, text)
        for tab in (first, second):
            tab.goto(url)
            wait_for_socket(tab)
            expect(document_text(tab)).to_have_value(text)
            # The preview shows the document, and the save state still carries the version.
            expect(tab.locator("#doc-preview")).to_contain_text("Paragraph 1.1 of the report says", timeout=LONG_WAIT_MS)
            expect(tab.locator("#doc-preview")).not_to_contain_text("Loading the preview")
            expect(tab.locator("#doc-save-state input[name=base_version]")).to_have_count(1)
            expect(document_status(tab)).to_have_text("Saved")

        type_after(first, "Paragraph 1.2 weighs it.", f" Typed at {size}.")
        expect(document_status(first)).to_have_text("Saved", timeout=LONG_WAIT_MS)
        typed = text.replace("Paragraph 1.2 weighs it.", f"Paragraph 1.2 weighs it. Typed at {size}.", 1)
        assert _stored(haico_server, thread_id) == typed, f"{size} characters: the typing was not saved"
        expect(document_text(second)).to_have_value(typed, timeout=LONG_WAIT_MS)

        last = _last_paragraph(text)
        anchor = f"Paragraph {last}.1 of the report says what was found in part {last}."
        type_after(second, anchor, f" The other tab at {size}.")
        expect(document_status(second)).to_have_text("Saved", timeout=LONG_WAIT_MS)
        both = typed.replace(anchor, f"{anchor} The other tab at {size}.", 1)
        expect(document_text(first)).to_have_value(both, timeout=LONG_WAIT_MS)
        expect(first.locator("#doc-preview")).to_contain_text(f"The other tab at {size}.", timeout=LONG_WAIT_MS)
        expect(document_status(first)).to_have_text("Saved")
        assert _stored(haico_server, thread_id) == both


def test_a_long_document_of_text_as_people_write_it_reads_back_and_saves_exactly_through_the_editor(
    owner_workspace, haico_server
):
    from tests.support.unicode_text import big_document

    page, url = owner_workspace
    thread_id = thread_id_from(url)
    text = big_document(120_000)
    save_document_now(page, text)
    assert _stored(haico_server, thread_id) == text
    page.reload()
    wait_for_socket(page)
    assert document_text(page).evaluate("el => el.value") == text
    # Type at the very end, after a long line, emoji and odd line breaks.
    document_text(page).evaluate("el => { el.focus(); el.setSelectionRange(el.value.length, el.value.length); }")
    page.keyboard.type("Fin 🇯🇵", delay=5)
    expect(document_status(page)).to_have_text("Saved", timeout=LONG_WAIT_MS)
    assert _stored(haico_server, thread_id) == text + "Fin 🇯🇵"
