"""A long (150 000-character) answer streaming while the test's own
PostgreSQL cluster goes away, for the browser tests of a turn's end across a
failover (docs/adr/0131): the answer, the page's words meanwhile, the rows
stored, and the whole run of one outage."""

import time

import psycopg
from playwright.sync_api import expect

from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, open_second_tab, wait_for_socket

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


def stored_turns(url: str) -> list[tuple]:
    with psycopg.connect(url.replace("postgres://", "postgresql://", 1), connect_timeout=5) as conn:
        return conn.execute("SELECT index, status, length(answer), notice FROM conversations_turn ORDER BY index").fetchall()


def send_message(page, text: str) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def long_answer_across_an_outage(new_page, start_haico_server, model_server, private_postgres, *, away_seconds):
    """The database stops a few chunks into the answer and comes back
    `away_seconds` later."""
    model_server.script([Reply(text=LONG_ANSWER, token_chars=CHUNK, token_delay=0.05), Reply(text="The next answer.")])
    server = start_haico_server(model_env(model_server), database_url=private_postgres.url)
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    send_message(page, "Write the long report")
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
    rows = stored_turns(private_postgres.url)
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
    send_message(page, "And now a short one")
    expect(chat.locator("#turn-2-answer-content")).to_have_text("The next answer.", timeout=TURN_WAIT_MS)
