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

import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, wait_for_socket
from .long_answer_outage import CHUNK, LAST, LONG_ANSWER, long_answer_across_an_outage, send_message, stored_turns

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.long_wait]


def test_a_long_answer_that_finishes_while_the_database_is_away_for_a_minute_is_kept_once_it_is_back(
    new_page, start_haico_server, model_server, private_postgres
):
    """Away for a minute: the turn's own waits for the database (the
    checkpointer's pool) outlast it."""
    long_answer_across_an_outage(new_page, start_haico_server, model_server, private_postgres, away_seconds=60)


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
    send_message(page, "Write the long report")
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
    [(_index, status, stored_length, notice)] = stored_turns(private_postgres.url)
    assert status == "stopped", (status, stored_length, notice)
    assert stored_length >= len(shown_at_stop) - 2 * CHUNK, (stored_length, len(shown_at_stop))
    page.reload()
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator("#turn-1-marker")).to_contain_text("Stopped")
    wait_for_socket(page)
    send_message(page, "And now a short one")
    expect(chat.locator("#turn-2-answer-content")).to_have_text("The next answer.", timeout=TURN_WAIT_MS)
