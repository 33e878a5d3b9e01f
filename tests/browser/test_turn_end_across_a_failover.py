"""PostgreSQL goes away while a long (150 000-character) answer streams, in
Chromium against the real server, on a cluster of the test's own (never the
shared one).

A self-hosting team's database fails over (tens of seconds; a managed
service's failover takes one to two minutes) while the assistant writes a
long answer. The model keeps streaming (it does not need the database) and
the page shows the whole answer. What the person read is never taken back:
the turn ends with the answer that streamed, once the database is back,
however long it was away; the page says meanwhile that it is kept and not
saved yet; a reload, another tab and the database agree; and the thread
takes the next message (docs/adr/0131)."""

import time

import psycopg
import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, open_second_tab, wait_for_socket

pytestmark = [pytest.mark.browser, pytest.mark.postgres]

CHUNK = 1000
CHUNKS = 150
# The page's words while the turn's end waits for the database (conversations.turns.run.ENDING_KEPT).
NOT_SAVED_YET = "Not saved yet: the server's database does not answer."


def _chunk(i: int) -> str:
    head = f"[chunk {i:04d}] "
    body = ("Long answer text about the quarterly report. " * 30)[: CHUNK - len(head) - 1]
    return head + body + " "


LONG_ANSWER = "".join(_chunk(i) for i in range(CHUNKS))
LAST = f"[chunk {CHUNKS - 1:04d}]"


def _rows(url: str) -> list[tuple]:
    with psycopg.connect(url.replace("postgres://", "postgresql://", 1), connect_timeout=5) as conn:
        return conn.execute("SELECT index, status, length(answer), notice FROM conversations_turn ORDER BY index").fetchall()


def _send(page, text: str) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def test_a_long_answer_that_finishes_while_the_database_is_away_for_a_minute_is_kept_once_it_is_back(
    new_page, start_haico_server, model_server, private_postgres
):
    """Away for a minute: the turn's own waits for the database (the
    checkpointer's pool) outlast it."""
    _long_answer_across_an_outage(new_page, start_haico_server, model_server, private_postgres, away_seconds=60)


def test_a_long_answer_that_finishes_during_a_two_minute_failover_is_kept_once_the_database_is_back(
    new_page, start_haico_server, model_server, private_postgres
):
    """Away for two minutes (a managed service's failover): longer than the
    turn's own waits, so its end is kept and stored once the database is
    back; the page says so meanwhile, and takes no message until then."""
    _long_answer_across_an_outage(new_page, start_haico_server, model_server, private_postgres, away_seconds=130)


def _long_answer_across_an_outage(new_page, start_haico_server, model_server, private_postgres, *, away_seconds):
    """The database stops a few chunks into the answer and comes back
    `away_seconds` later."""
    model_server.script([Reply(text=LONG_ANSWER, token_chars=CHUNK, token_delay=0.05), Reply(text="The next answer.")])
    server = start_haico_server(model_env(model_server), database_url=private_postgres.url)
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    _send(page, "Write the long report")
    answer = chat.locator("#turn-1-answer-content")
    expect(answer).to_contain_text("[chunk 0010]", timeout=TURN_WAIT_MS)
    private_postgres.stop()
    away_since = time.monotonic()
    # The model goes on: the page gets the whole answer.
    expect(answer).to_contain_text(LAST, timeout=TURN_WAIT_MS)
    marker = chat.locator("#turn-1-marker")
    send = chat.get_by_role("button", name="Send")
    if away_seconds > 100:
        # The turn's own waits have given up: the page says what is true.
        expect(marker).to_contain_text(NOT_SAVED_YET, timeout=(away_seconds - 10) * 1000)
        expect(marker).not_to_contain_text("Retry")
        expect(chat.locator("#chat-status")).to_contain_text("Saving the turn once the database answers")
        expect(send).to_be_disabled()
        assert LAST in answer.inner_text()
    while time.monotonic() - away_since < away_seconds:
        time.sleep(1)
    private_postgres.start()

    # Once the database is back the turn's true end is stored and reaches the
    # page (within the checkpointer pool's reconnect).
    expect(send).to_be_enabled(timeout=45_000)
    expect(marker).not_to_contain_text("Not saved")
    rows = _rows(private_postgres.url)
    [(_index, status, stored_length, notice)] = rows
    # The answer the person read in full is kept, not cut back to what was
    # stored before the outage.
    assert (status, notice) == ("complete", ""), rows
    assert stored_length >= len(LONG_ANSWER) - 10, rows

    page.reload()
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator("#turn-1-answer-content")).to_contain_text(LAST)
    other = open_second_tab(page, url)
    expect(other.get_by_role("region", name="Chat").locator("#turn-1-answer-content")).to_contain_text(LAST)
    # A database outage is not "the server restarted" / "stopped answering".
    expect(chat.locator("#turn-1-marker")).not_to_contain_text("server")

    wait_for_socket(page)
    _send(page, "And now a short one")
    expect(chat.locator("#turn-2-answer-content")).to_have_text("The next answer.", timeout=TURN_WAIT_MS)


def test_stop_pressed_while_the_database_is_away_ends_the_turn_stopped_once_it_is_back(
    new_page, start_haico_server, model_server, private_postgres
):
    """Stop pressed on a long answer while PostgreSQL is stopped, on the
    server running the turn. The page says the turn is stopping; once the
    database is back (a few seconds later) the turn ends "Stopped" in the
    page, on reload and in the database, keeping the answer up to the Stop,
    and the thread takes the next message."""
    model_server.script([Reply(text=LONG_ANSWER, token_chars=CHUNK, token_delay=0.1), Reply(text="The next answer.")])
    server = start_haico_server(model_env(model_server), database_url=private_postgres.url)
    page = new_page()
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    _send(page, "Write the long report")
    answer = chat.locator("#turn-1-answer-content")
    expect(answer).to_contain_text("[chunk 0020]", timeout=TURN_WAIT_MS)
    private_postgres.stop()
    chat.get_by_role("button", name="Stop").click()
    expect(page.locator("#chat-notice")).to_contain_text("the turn is stopping", timeout=TURN_WAIT_MS)
    shown_at_stop = answer.inner_text()
    page.wait_for_timeout(5000)
    private_postgres.start()

    marker = chat.locator("#turn-1-marker")
    expect(marker).to_contain_text("Stopped", timeout=45_000)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled()
    kept = answer.inner_text()
    assert kept.startswith("[chunk 0000]")
    assert LAST not in kept
    assert len(kept) >= len(shown_at_stop) - 2 * CHUNK, (len(kept), len(shown_at_stop))
    [(_index, status, stored_length, notice)] = _rows(private_postgres.url)
    assert status == "stopped", (status, stored_length, notice)
    assert stored_length >= len(shown_at_stop) - 2 * CHUNK, (stored_length, len(shown_at_stop))
    page.reload()
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator("#turn-1-marker")).to_contain_text("Stopped")
    wait_for_socket(page)
    _send(page, "And now a short one")
    expect(chat.locator("#turn-2-answer-content")).to_have_text("The next answer.", timeout=TURN_WAIT_MS)
