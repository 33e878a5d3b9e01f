"""Scale-out (docs/adr/0072): two server processes on one PostgreSQL database and
one Redis channel layer. A turn sent to one process streams live to a tab of
the same thread connected to the other, and its history (PostgreSQL
checkpointer) reloads from either."""

import pytest
from playwright.sync_api import expect

from .helpers import (
    ANSWER,
    REASONING,
    REQUEST,
    TURN_WAIT_MS,
    chart_turn_script,
    expect_bar_chart,
    model_env,
    new_thread_for,
    wait_for_socket,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_turn_started_on_one_server_streams_to_a_tab_on_another(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url, model_server
):
    model_server.script(chart_turn_script())
    env = model_env(model_server, REDIS_URL=redis_url)
    server_a = start_haico_server(env, database_url=migrated_postgres_database_url)
    server_b = start_haico_server(env, database_url=migrated_postgres_database_url)

    tab_a = new_page()
    url_a = new_thread_for(tab_a, server_a.url, "ada")
    # Same browser context: the session cookie (host 127.0.0.1, any port)
    # logs the second tab in on the other server, whose sessions are in
    # the same database.
    tab_b = tab_a.context.new_page()
    tab_b.goto(url_a.replace(server_a.url, server_b.url))
    expect(tab_b.get_by_role("region", name="Chat")).to_be_visible()
    wait_for_socket(tab_a)
    wait_for_socket(tab_b)

    chat_a = tab_a.get_by_role("region", name="Chat")
    chat_a.get_by_role("textbox", name="Message").fill(REQUEST)
    chat_a.get_by_role("button", name="Send").click()

    # The other server's tab sees the whole turn live.
    chat_b = tab_b.get_by_role("region", name="Chat")
    expect(chat_b.locator(".bubble-text", has_text=REQUEST)).to_be_visible(timeout=TURN_WAIT_MS)
    expect(chat_b.get_by_role("group", name="Internal reasoning")).to_contain_text(REASONING, timeout=TURN_WAIT_MS)
    expect(chat_b.locator("#chat-messages .answer").first).to_have_text(ANSWER, timeout=TURN_WAIT_MS)
    expect_bar_chart(tab_b)
    expect(chat_a.locator("#chat-messages .answer").first).to_have_text(ANSWER, timeout=TURN_WAIT_MS)
    expect(chat_b.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)

    # History comes back from PostgreSQL on either server.
    for tab in (tab_a, tab_b):
        tab.reload()
        chat = tab.get_by_role("region", name="Chat")
        expect(chat.locator(".bubble-text", has_text=REQUEST)).to_be_visible()
        expect(chat.locator("#chat-messages .answer").first).to_have_text(ANSWER)
    assert len(model_server.requests) == 2
