"""PostgreSQL closes every connection (a restart, a failover): simulated by
terminating every backend of the test database, with two server processes
on it (and the Redis channel layer), while idle and in the middle of turns
(docs/adr/0044).

Before, the checkpointer's pool handed out the dead connections and the
next turns failed one after another. Now every pool and connection the app
keeps is checked before use: the next turns succeed on both servers, a
turn that was streaming when it happened finishes, and a turn whose write
was on a connection as it was closed fails as a retryable turn (its message
kept, Retry offered, never left running)."""

import re
import time

import psycopg
import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply
from tests.support.postgres import end_backends

from .helpers import TURN_WAIT_MS, WORKSPACE_URL, model_env, new_thread_for, wait_for_socket

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

DATABASE_LOST = "The database did not answer while the assistant was working."


def _checkpoint_writes_waiting_on_a_lock(admin_url: str, database: str) -> list[int]:
    """The backends of writes to the checkpoints table waiting on a lock: a
    page's read of the chat, or a transaction queued behind another, is not
    the case tested."""
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'"
            " AND query ILIKE '%%INSERT INTO checkpoints%%'",
            (database,),
        ).fetchall()
    return [pid for (pid,) in rows]


def _send(tab, text: str) -> None:
    chat = tab.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def _expect_answer(tab, turn: int, text: str) -> None:
    chat = tab.get_by_role("region", name="Chat")
    expect(chat.locator(f"#turn-{turn}-answer-content")).to_have_text(text, timeout=TURN_WAIT_MS)
    expect(chat.locator(f"#turn-{turn}-marker")).to_be_hidden()
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)


def test_turns_go_on_on_both_servers_after_the_database_closed_every_connection(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url, model_server
):
    admin_url = migrated_postgres_database_url.rsplit("/", 1)[0] + "/postgres"
    database = migrated_postgres_database_url.rsplit("/", 1)[1]
    model_server.default_reply = Reply(text="All good.")
    env = model_env(model_server, REDIS_URL=redis_url)
    server_a = start_haico_server(env, database_url=migrated_postgres_database_url)
    server_b = start_haico_server(env, database_url=migrated_postgres_database_url)

    tab_a = new_page()
    new_thread_for(tab_a, server_a.url, "ada")  # a thread whose turns run on server A
    tab_b = tab_a.context.new_page()
    tab_b.goto(f"{server_b.url}/threads/")  # and one whose turns run on server B
    tab_b.get_by_role("button", name="New thread", exact=True).click()
    expect(tab_b).to_have_url(WORKSPACE_URL)
    tabs = (tab_a, tab_b)
    for tab in tabs:
        wait_for_socket(tab)
        _send(tab, "warm up")
    for tab in tabs:
        _expect_answer(tab, 1, "All good.")

    # 1. While idle: every pooled connection of both servers dies.
    assert end_backends(migrated_postgres_database_url) >= 2
    for turn in (2, 3, 4):
        for tab in tabs:
            _send(tab, f"turn {turn}")
        for tab in tabs:
            _expect_answer(tab, turn, "All good.")

    # 2. While a turn streams its answer: it finishes.
    words = " ".join(f"word{n}" for n in range(1, 31))
    model_server.script([Reply(text=words, token_delay=0.1)])
    _send(tab_a, "stream slowly")
    expect(tab_a.locator("#turn-5-answer-content")).to_contain_text("word5", timeout=TURN_WAIT_MS)
    end_backends(migrated_postgres_database_url)
    _expect_answer(tab_a, 5, words)

    # 3. While a turn's checkpoint write waits on the database: that
    # write's connection is closed under it. The turn fails, retryable.
    locker = psycopg.connect(migrated_postgres_database_url, connect_timeout=5)
    # EXCLUSIVE lets reads through (a page rendering its chat) and holds writes.
    locker.execute("LOCK TABLE checkpoints IN EXCLUSIVE MODE")
    _send(tab_b, "caught in the failover")
    deadline = time.monotonic() + 20
    while not (writers := _checkpoint_writes_waiting_on_a_lock(admin_url, database)):
        assert time.monotonic() < deadline, "the turn's checkpoint write never waited on the lock"
        time.sleep(0.1)
    # The writer's connection goes first, while it still waits: ended in
    # one sweep, the locker's connection could go first, and the write,
    # let through by the lock going with it, could finish before its own
    # connection is ended (a turn that then finishes whole, as it should).
    end_backends(migrated_postgres_database_url, first=writers)
    locker.close()
    chat_b = tab_b.get_by_role("region", name="Chat")
    marker = chat_b.locator("#turn-5-marker")
    expect(marker).to_contain_text(DATABASE_LOST, timeout=TURN_WAIT_MS)
    expect(marker).not_to_have_class(re.compile("is-running"))
    expect(chat_b.locator("#turn-5 .bubble-user")).to_contain_text("caught in the failover")
    expect(chat_b.get_by_role("button", name="Send")).to_be_enabled()
    expect(tab_b.locator("#chat-status")).to_have_attribute("data-state", "idle")
    chat_b.get_by_role("button", name="Retry turn 5").click()
    _expect_answer(tab_b, 6, "All good.")
    expect(chat_b.locator("#turn-6 .bubble-user")).to_contain_text("caught in the failover")

    # And both servers go on as before.
    for tab, turn in ((tab_a, 6), (tab_b, 7)):
        _send(tab, "after it all")
        _expect_answer(tab, turn, "All good.")
    for tab in tabs:
        tab.reload()
        expect(tab.get_by_role("region", name="Chat").locator(".answer").last).to_have_text("All good.")
    # Every other turn completed; the one caught in the write failed, its message kept.
    with psycopg.connect(migrated_postgres_database_url, connect_timeout=5) as conn:
        statuses = conn.execute("SELECT status, count(*) FROM conversations_turn GROUP BY status").fetchall()
        failures = conn.execute("SELECT user_message FROM conversations_turn WHERE status = 'failed'").fetchall()
    assert dict(statuses) == {"complete": 12, "failed": 1}
    assert failures == [("caught in the failover",)]
