"""A save that reached the server and was written, but whose answer never
reached the page (its timeout passed first, the connection dropped after the
write, the server died after its commit), in Chromium: what the person then
rewrote or deleted of the words she had just typed never comes back, on her
page or in the database (docs/adr/0139).

Before, the page's next save still named the version from before that
write as its base, and the server merged her own earlier words in as if
someone else had written them: the paragraph she rewrote came back beside
the new one (docs/adr/0116 keeps both), the one she deleted came back, and
the page said "Saved, merged"."""

import re
import time

import psycopg
import pytest
from playwright.sync_api import expect

from .helpers import (
    document_status,
    document_text,
    long_document,
    new_thread_for,
    save_through_service,
    stored_document,
    thread_id_from,
    wait_for_socket,
)

pytestmark = pytest.mark.browser

SAVE_URL = "**/document/save/"
FIRST_TRY = "\nOwner's paragraph, first try.\n"
REPLACEMENTS = pytest.mark.parametrize(
    "replacement", ["\nA better paragraph by the owner.\n", ""], ids=["rewrites-her-paragraph", "deletes-her-paragraph"]
)
# A 20 000-character save and its push on a busy two-core machine.
WAIT_MS = 30_000


def _editor_state(page, name: str):
    return page.evaluate(f"() => document.getElementById('doc-form').__haico.{name}")


def _type_at_the_end(page, text: str) -> None:
    editor = document_text(page)
    editor.click()
    editor.evaluate("el => el.setSelectionRange(el.value.length, el.value.length)")
    page.keyboard.type(text, delay=5)


def _change_what_she_typed(page, typed: str, replacement: str) -> None:
    document_text(page).evaluate(
        "(el, typed) => { const at = el.value.lastIndexOf(typed); el.setSelectionRange(at, at + typed.length); }", typed
    )
    if replacement:
        page.keyboard.insert_text(replacement)
    else:
        page.keyboard.press("Backspace")


def _stored_in_postgres(database_url: str, thread_id: str) -> str:
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        return conn.execute("SELECT content FROM workspace_document WHERE thread_id = %s", (thread_id,)).fetchone()[0]


@pytest.mark.postgres
@REPLACEMENTS
def test_a_save_the_page_gave_up_and_the_server_wrote_later_never_brings_back_what_she_changed(
    replacement, new_page, start_haico_server, migrated_postgres_database_url
):
    """The save waits on the document's lock (held by another connection)
    past the page's timeout (1.5 s here, HAICO.saveTimeoutMs, 30 s in
    production); the page says "Not saved"; she rewrites or deletes the
    paragraph; then the server, let through, writes the save given up."""
    server = start_haico_server({}, database_url=migrated_postgres_database_url)
    page = new_page()
    url = new_thread_for(page, server.url, "owner")
    thread_id = thread_id_from(url)
    row_id = thread_id.replace("-", "")
    text = long_document(20_000)
    save_through_service(server, thread_id, text)
    page.reload()
    expect(document_text(page)).to_have_value(text)
    wait_for_socket(page)
    expected = text + replacement

    page.evaluate("() => { HAICO.saveTimeoutMs = 1500; }")
    locker = psycopg.connect(migrated_postgres_database_url, connect_timeout=5)
    try:
        locker.execute("SELECT id FROM workspace_document WHERE thread_id = %s FOR UPDATE", (row_id,))
        _type_at_the_end(page, FIRST_TRY)
        page.wait_for_function("() => document.getElementById('doc-form').__haico.inFlight", timeout=WAIT_MS)
        page.wait_for_function("() => document.getElementById('doc-form').__haico.failures >= 1", timeout=WAIT_MS)
        expect(document_status(page)).to_have_text("Not saved")
        # Its retry is kept for after her change (a retry now would be the same race, sooner).
        page.evaluate("() => { const s = document.getElementById('doc-form').__haico; clearTimeout(s.retry); s.retry = null; }")
        _change_what_she_typed(page, FIRST_TRY, replacement)
        assert document_text(page).input_value() == expected
    finally:
        locker.rollback()  # the server writes the save the page gave up
        locker.close()
    deadline = time.monotonic() + 20
    while FIRST_TRY not in _stored_in_postgres(migrated_postgres_database_url, row_id):
        assert time.monotonic() < deadline, "the save given up was never written"
        time.sleep(0.02)

    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=WAIT_MS)
    expect(document_text(page)).to_have_value(expected)
    assert _stored_in_postgres(migrated_postgres_database_url, row_id) == expected
    page.reload()
    expect(document_text(page)).to_have_value(expected)


def _answer_lost_while_she_changes(page, change) -> list:
    """The next save reaches the server and is written; while its answer is
    on its way she makes `change`; then the connection drops, and the answer
    never reaches the page (as when the server dies after its commit). Every
    later save goes through."""
    dropped = []

    def written_then_dropped(route):
        if dropped:
            route.continue_()
            return
        route.fetch()  # the server writes it ...
        change()
        dropped.append(True)
        route.abort("connectionreset")  # ... and its answer never reaches the page

    page.route(SAVE_URL, written_then_dropped)
    return dropped


def _wait_for(dropped: list, page) -> None:
    deadline = time.monotonic() + WAIT_MS / 1000
    while not dropped:
        assert time.monotonic() < deadline, "no save was sent"
        page.wait_for_timeout(50)  # the route's handler runs while the page is waited on


def _workspace_with(page, server, url, text):
    save_through_service(server, thread_id_from(url), text)
    page.reload()
    expect(document_text(page)).to_have_value(text)
    wait_for_socket(page)


@REPLACEMENTS
def test_a_save_written_whose_connection_dropped_never_brings_back_what_she_changed(replacement, owner_workspace, haico_server):
    """The written version's push reaches the page with its next save still
    to go: that save, of her changed text, undoes nothing."""
    page, url = owner_workspace
    thread_id = thread_id_from(url)
    text = long_document(5_000)
    _workspace_with(page, haico_server, url, text)
    expected = text + replacement
    dropped = _answer_lost_while_she_changes(page, lambda: _change_what_she_typed(page, FIRST_TRY, replacement))
    _type_at_the_end(page, FIRST_TRY)
    _wait_for(dropped, page)
    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=WAIT_MS)
    expect(document_text(page)).to_have_value(expected)
    assert stored_document(haico_server, thread_id) == expected
    assert _editor_state(page, "unansweredFrom") is None
    page.reload()
    expect(document_text(page)).to_have_value(expected)


def test_text_typed_back_after_a_lost_answer_is_saved_over_the_written_save(owner_workspace, haico_server):
    """She deletes all she typed: the editor holds its base again, which
    before meant "nothing to save", and the written version's push was put
    in the editor, the sentence she deleted with it."""
    page, url = owner_workspace
    thread_id = thread_id_from(url)
    _workspace_with(page, haico_server, url, "The report.")
    dropped = _answer_lost_while_she_changes(page, lambda: _change_what_she_typed(page, " A sentence she deletes.", ""))
    _type_at_the_end(page, " A sentence she deletes.")
    _wait_for(dropped, page)
    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=WAIT_MS)
    expect(document_text(page)).to_have_value("The report.")
    assert stored_document(haico_server, thread_id) == "The report."


def test_a_reload_after_a_lost_answer_saves_what_she_changed_over_the_written_save(owner_workspace, haico_server):
    """The server is unreachable after the written save's answer was lost,
    and she reloads: what she changed is kept in the tab and saved by the
    new page as the old page's next save, so it still undoes nothing."""
    page, url = owner_workspace
    thread_id = thread_id_from(url)
    _workspace_with(page, haico_server, url, "The report.")
    saves = []

    def written_then_unreachable(route):
        saves.append(route.request)
        if len(saves) > 1:
            route.abort("connectionrefused")
            return
        route.fetch()
        _change_what_she_typed(page, " A sentence she deletes.", " A sentence she keeps.")
        route.abort("connectionreset")

    page.route(SAVE_URL, written_then_unreachable)
    _type_at_the_end(page, " A sentence she deletes.")
    _wait_for(saves, page)
    expect(document_status(page)).to_have_text("Not saved", timeout=WAIT_MS)
    assert stored_document(haico_server, thread_id) == "The report. A sentence she deletes."
    page.unroute(SAVE_URL)
    page.reload()
    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=WAIT_MS)
    expect(document_text(page)).to_have_value("The report. A sentence she keeps.")
    assert stored_document(haico_server, thread_id) == "The report. A sentence she keeps."


@REPLACEMENTS
def test_a_save_written_by_a_server_killed_before_its_answer_never_brings_back_what_she_changed(
    replacement, new_page, start_haico_server
):
    """The server writes the save and is killed (SIGKILL) before its answer
    goes; she changes what she typed while it is down; once it is back the
    page's own retry saves her change, undoing nothing."""
    server = start_haico_server()
    page = new_page()
    url = new_thread_for(page, server.url, "owner")
    thread_id = thread_id_from(url)
    text = long_document(5_000)
    _workspace_with(page, server, url, text)
    expected = text + replacement
    killed = []

    def written_then_killed(route):
        if killed:
            route.continue_()
            return
        route.fetch()  # written ...
        server.kill()  # ... and the server dies before the page hears of it
        killed.append(True)
        route.abort("connectionreset")

    page.route(SAVE_URL, written_then_killed)
    _type_at_the_end(page, FIRST_TRY)
    _wait_for(killed, page)
    expect(document_status(page)).to_have_text("Not saved", timeout=WAIT_MS)
    assert stored_document(server, thread_id) == text + FIRST_TRY
    _change_what_she_typed(page, FIRST_TRY, replacement)
    server.start()

    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=WAIT_MS)
    expect(document_text(page)).to_have_value(expected)
    assert stored_document(server, thread_id) == expected
    page.reload()
    expect(document_text(page)).to_have_value(expected)


def _a_save_waiting_on_the_lock_as_she_changes_her_paragraph(page, locker, row_id, replacement) -> None:
    """She types a paragraph; its save reaches the server and waits on the
    document's lock (held by `locker`); she rewrites or deletes it."""
    locker.execute("SELECT id FROM workspace_document WHERE thread_id = %s FOR UPDATE", (row_id,))
    _type_at_the_end(page, FIRST_TRY)
    page.wait_for_function("() => document.getElementById('doc-form').__haico.inFlight", timeout=WAIT_MS)
    time.sleep(0.5)  # on the server, waiting on the lock
    _change_what_she_typed(page, FIRST_TRY, replacement)


def _open_on_postgres(new_page, start_haico_server, database_url):
    server = start_haico_server({}, database_url=database_url)
    page = new_page()
    url = new_thread_for(page, server.url, "owner")
    thread_id = thread_id_from(url)
    text = long_document(3_000)
    save_through_service(server, thread_id, text)
    page.reload()
    expect(document_text(page)).to_have_value(text)
    wait_for_socket(page)
    return page, thread_id.replace("-", ""), text


def _stored_settles_on(database_url: str, row_id: str, expected: str) -> None:
    """The save let through and what followed it all written: the text stays `expected`."""
    deadline = time.monotonic() + 20
    while _stored_in_postgres(database_url, row_id) != expected:
        assert time.monotonic() < deadline, _stored_in_postgres(database_url, row_id)
        time.sleep(0.1)
    time.sleep(2)
    assert _stored_in_postgres(database_url, row_id) == expected


@pytest.mark.postgres
@REPLACEMENTS
@pytest.mark.parametrize("leaves", ["by-beacon", "in-the-tab"])
def test_a_reload_while_a_save_waits_on_the_server_never_brings_back_what_she_changed(
    leaves, replacement, new_page, start_haico_server, migrated_postgres_database_url
):
    """She reloads while the save of the paragraph she then deleted or
    rewrote still waits on the server. Her change goes as the closing page's
    beacon, numbered after that save, or, when no beacon can go, it is left
    in the tab and the new page saves it even when it is the very text the
    new page shows. Before, nothing was sent (a save was on its way, and the
    text left equalled the text shown), and the waiting save, written later,
    brought the deleted paragraph back while her page said "Saved"."""
    page, row_id, text = _open_on_postgres(new_page, start_haico_server, migrated_postgres_database_url)
    expected = text + replacement
    if leaves == "in-the-tab":
        page.evaluate("() => Object.defineProperty(navigator, 'sendBeacon', { value: undefined, configurable: true })")
    locker = psycopg.connect(migrated_postgres_database_url, connect_timeout=5)
    try:
        _a_save_waiting_on_the_lock_as_she_changes_her_paragraph(page, locker, row_id, replacement)
        assert document_text(page).input_value() == expected
        page.reload()
        expect(document_text(page)).to_be_visible()
    finally:
        locker.rollback()  # the save the old page sent goes on now
        locker.close()
    _stored_settles_on(migrated_postgres_database_url, row_id, expected)
    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=WAIT_MS)
    expect(document_text(page)).to_have_value(expected)


@pytest.mark.postgres
@REPLACEMENTS
def test_a_tab_closed_for_good_while_a_save_waits_on_the_server_keeps_what_she_changed(
    replacement, new_page, start_haico_server, migrated_postgres_database_url
):
    """Closed (after the leave prompt) while the save of the paragraph she
    then changed waits on the server: the beacon goes anyway, numbered after
    that save, so whichever the server writes first, her change is what
    stays. Before, no beacon went while a save was on its way."""
    page, row_id, text = _open_on_postgres(new_page, start_haico_server, migrated_postgres_database_url)
    expected = text + replacement
    locker = psycopg.connect(migrated_postgres_database_url, connect_timeout=5)
    try:
        _a_save_waiting_on_the_lock_as_she_changes_her_paragraph(page, locker, row_id, replacement)
        page.on("dialog", lambda dialog: dialog.accept())  # "Leave site?": Leave
        page.close(run_before_unload=True)
        deadline = time.monotonic() + 10
        while not page.is_closed() and time.monotonic() < deadline:
            page.context.cookies()  # lets Playwright deliver the dialog
            time.sleep(0.05)
        assert page.is_closed()
        time.sleep(0.5)  # the beacon on its way too
    finally:
        locker.rollback()
        locker.close()
    _stored_settles_on(migrated_postgres_database_url, row_id, expected)
