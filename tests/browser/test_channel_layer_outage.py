"""The channel layer (Redis) stops for about ten seconds, in Chromium
against the real server on a Redis of the test's own (never the shared one).

Every socket of the thread drops while Redis is down (each page's consumer
reads its messages from it). The page says "Reconnecting…" meanwhile, is
back within a few seconds of Redis, and shows what changed while it was
away without a reload: another tab's plan step, a running turn's answer.
The server's log says that Redis went and came back, a line each, not a
traceback per socket and retry (conversations.outages)."""

import time

import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, open_add_form, wait_for_socket

pytestmark = [pytest.mark.browser, pytest.mark.redis]

OUTAGE_SECONDS = 10
# From Redis answering again to the page showing it: the page's backoff is at
# most 2 s (static/js/live.js), then the handshake and the reload.
BACK_WITHIN_MS = 6_000


def _reconnecting(page):
    return page.get_by_role("status").filter(has_text="Reconnecting…")


def _add_step(page, text):
    form = open_add_form(page, "Planning", "Add step")
    form.get_by_role("textbox", name="New step").fill(text)
    form.get_by_role("button", name="Add step").click()


def _steps(page):
    return page.get_by_role("region", name="Planning").locator("#plan-steps .step-text")


def test_with_redis_stopped_the_page_says_reconnecting_and_catches_up_once_it_is_back(
    new_page, start_haico_server, private_redis
):
    server = start_haico_server({"REDIS_URL": private_redis.url})
    first = new_page()
    url = new_thread_for(first, server.url, "ada")
    second = first.context.new_page()
    second.goto(url)
    for tab in (first, second):
        wait_for_socket(tab)
        expect(_reconnecting(tab)).to_have_count(0)

    stopped = time.monotonic()
    private_redis.stop()
    expect(_reconnecting(first)).to_be_visible(timeout=5_000)
    expect(_reconnecting(second)).to_be_visible(timeout=5_000)

    # Another tab's change while the layer is down: saved (the database is
    # up), but nothing can push it to the first tab now.
    _add_step(second, "Written while Redis was down")
    expect(_steps(second)).to_have_text(["Written while Redis was down"])
    first.wait_for_timeout(max(0, int((OUTAGE_SECONDS - (time.monotonic() - stopped)) * 1000)))
    expect(_reconnecting(first)).to_be_visible()
    expect(_steps(first)).to_have_count(0)

    private_redis.start()
    for tab in (first, second):
        expect(_reconnecting(tab)).to_have_count(0, timeout=BACK_WITHIN_MS)
    expect(_steps(first)).to_have_text(["Written while Redis was down"], timeout=BACK_WITHIN_MS)

    # And live again: a change just after comes through at once.
    _add_step(second, "Written once it was back")
    expect(_steps(first)).to_have_text(["Written while Redis was down", "Written once it was back"])
    _assert_the_outage_logged_in_two_lines(server)


def _assert_the_outage_logged_in_two_lines(server):
    log = server.log_path.read_text(errors="replace")
    assert "Traceback" not in log and "Exception inside application" not in log
    assert log.count("Redis is unreachable") == 1 and log.count("Redis answers again after") == 1


ANSWER = " ".join(f"word{n}" for n in range(1, 41))


def test_a_turn_streaming_while_redis_stops_comes_back_whole_on_the_page(
    new_page, start_haico_server, private_redis, model_server
):
    # About 16 seconds of answer (a token per word and per space): it
    # streams through the whole outage.
    model_server.script([Reply(text=ANSWER, token_delay=0.2)])
    server = start_haico_server(model_env(model_server, REDIS_URL=private_redis.url))
    page = new_page()
    new_thread_for(page, server.url, "grace")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("Count for me")
    chat.get_by_role("button", name="Send").click()
    answer = page.locator("#chat-messages .answer").first
    expect(answer).to_contain_text("word3", timeout=TURN_WAIT_MS)

    private_redis.stop()
    expect(_reconnecting(page)).to_be_visible(timeout=5_000)
    page.wait_for_timeout(OUTAGE_SECONDS * 1000 - 2_000)
    private_redis.start()
    expect(_reconnecting(page)).to_have_count(0, timeout=BACK_WITHIN_MS)
    # The answer so far came back with the socket, and the rest streams on.
    expect(answer).to_have_text(ANSWER, timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
    _assert_the_outage_logged_in_two_lines(server)
