"""A long document's autosave, whose push is too big for the socket
(docs/adr/0043): the saving tab has the version its save's answer brought
and reads nothing again, while another tab of the thread is told to and
gets the change. Before, the saving tab re-read the whole workspace
(~500 KB for a 199 000-character document) and the chat after every
autosave of its own: about once a second while the person typed."""

import pytest
from playwright.sync_api import expect

from .helpers import (
    document_status,
    document_text,
    long_document,
    save_through_service,
    thread_id_from,
    type_after,
    wait_for_socket,
)

pytestmark = pytest.mark.browser

# Saving and pushing 200 000 characters on a busy test machine.
LONG_WAIT_MS = 30_000


def _reads(page) -> list[str]:
    """The URLs of the page's re-reads of the workspace and of the chat, as they go out."""
    reads: list[str] = []
    page.on(
        "request", lambda request: reads.append(request.url) if "/live/" in request.url or "/chat/from/" in request.url else None
    )
    return reads


def test_the_saving_tab_of_a_long_document_reads_nothing_again_after_its_own_autosave_another_tab_gets_it(
    owner_workspace, haico_server
):
    first, url = owner_workspace
    text = long_document(199_000)
    save_through_service(haico_server, thread_id_from(url), text)
    second = first.context.new_page()
    for tab in (first, second):
        tab.goto(url)
        wait_for_socket(tab)
        expect(document_text(tab)).to_have_value(text)
        expect(tab.locator("#doc-preview")).to_contain_text("Paragraph 1.1 of the report says", timeout=LONG_WAIT_MS)
        expect(document_status(tab)).to_have_text("Saved")
    saver_reads, other_reads = _reads(first), _reads(second)

    typed = text
    for n in (1, 2):
        type_after(first, "Paragraph 1.2 weighs it.", f" Typed {n}.")
        typed = typed.replace("Paragraph 1.2 weighs it.", f"Paragraph 1.2 weighs it. Typed {n}.", 1)
        expect(document_status(first)).to_have_text("Saved", timeout=LONG_WAIT_MS)
        # The other tab was told to read the document again, and did.
        expect(document_text(second)).to_have_value(typed, timeout=LONG_WAIT_MS)
        expect(second.locator("#doc-preview")).to_contain_text(f"Typed {n}.", timeout=LONG_WAIT_MS)

    # Both saves' stand-ins have reached the saving tab by now (the other
    # tab's came after them on the same server); give a re-read time to start.
    first.wait_for_timeout(500)
    assert saver_reads == [], saver_reads
    assert any("/live/" in read for read in other_reads), other_reads
    expect(document_text(first)).to_have_value(typed)
    expect(first.locator("#doc-preview")).to_contain_text("Typed 2.")
    expect(document_status(first)).to_have_text("Saved")
