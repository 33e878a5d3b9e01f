"""Production as README runs it, end to end: deploy/start.sh with two
server processes on PostgreSQL + Redis, Debian's nginx in front of them
with deploy/nginx.conf terminating TLS (a self-signed certificate), and a
person in Chromium who only ever talks to nginx (docs/adr/0058).

Through the proxy they sign up, open a thread in two tabs (nginx gives each
page's socket to another process), send a message, and see the scripted
model's turn stream into both: the WebSocket origin check passes on the
proxy's scheme and host (X-Forwarded-Proto https, the Host with its port),
the static files come hashed and compressed through the proxy, and no page
breaks the Content-Security-Policy. The servers' log (HAICO_LOG_FORMAT=json)
is one JSON object a line, the turn's lines name its thread and turn, and
the access lines carry the browser's address as nginx passed it on.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from tests.support import nginx
from tests.support.production import start_production  # noqa: F401  (the fixture)

from .helpers import (
    ANSWER,
    MODEL,
    REASONING,
    REQUEST,
    TURN_WAIT_MS,
    chart_turn_script,
    create_thread,
    expect_bar_chart,
    sign_up,
    thread_id_from,
    wait_for_socket,
)
from .test_agent_chart_flow import watch_answer_text

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def csp_violations(messages: list[str]) -> list[str]:
    return [m for m in messages if "Content Security Policy" in m or "Content-Security-Policy" in m]


def socket_instances(production) -> list[str]:
    """The server process of each socket opened so far, oldest first."""
    entries = [json.loads(line) for line in production.server_lines()]
    return [e["instance"] for e in entries if e["logger"] == "daphne.access" and e.get("method") == "WSCONNECT"]


def test_behind_nginx_with_tls_a_turn_streams_from_two_server_processes_into_two_tabs(
    browser,
    start_production,  # noqa: F811  (the fixture imported above)
    migrated_postgres_database_url,
    redis_url,
    tmp_path,
    model_server,
):
    if reason := nginx.available(tls=True):
        pytest.skip(reason)
    model_server.script(chart_turn_script())
    production = start_production(
        {
            "DATABASE_URL": migrated_postgres_database_url,
            "REDIS_URL": redis_url,
            # nginx terminates TLS and says so (X-Forwarded-Proto): no redirect loop.
            "SECURE_SSL_REDIRECT": "True",
            "HAICO_LOG_FORMAT": "json",
            "HAICO_INSTANCE": "web",
            "OPENAI_BASE_URL": model_server.base_url,
            "OPENAI_API_KEY": "test",
            "HAICO_MODEL": MODEL,
        },
        processes=2,
    )
    upstreams = [url.removeprefix("http://") for url in production.urls]
    with nginx.Nginx(tmp_path / "nginx", upstreams=upstreams, tls=True) as proxy:
        context = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 900})
        context.set_default_timeout(10_000)
        console: list[str] = []
        try:
            tab_a = context.new_page()
            tab_a.on("console", lambda message: console.append(message.text))
            # The sign-up form itself, through nginx: its CSRF check over TLS is part of working behind it.
            sign_up(tab_a, proxy.url, "ada")
            url = create_thread(tab_a, proxy.url)
            assert url.startswith(proxy.url + "/threads/")
            thread_id = thread_id_from(url)
            wait_for_socket(tab_a)
            tab_b = context.new_page()
            tab_b.on("console", lambda message: console.append(message.text))
            tab_b.goto(url)
            wait_for_socket(tab_b)
            # least_conn breaks a tie (a request of the page still in
            # flight on the other process) in turn: the second tab may
            # land beside the first; a reload opens its socket again.
            for _ in range(3):
                if len(set(socket_instances(production)[-2:])) == 2:
                    break
                tab_b.reload()
                wait_for_socket(tab_b)
            assert tab_a.evaluate("location.protocol") == "https:"

            # The static files came through the proxy: hashed names, styles applied.
            stylesheets = tab_a.evaluate("[...document.styleSheets].map(s => s.href)")
            assert stylesheets and all(re.search(r"/static/css/\w+\.[0-9a-f]{12}\.css$", href) for href in stylesheets)
            assert tab_a.evaluate("getComputedStyle(document.querySelector('.topbar')).display") != "inline"
            css = context.request.get(stylesheets[0], headers={"Accept-Encoding": "br"})
            assert css.ok and css.headers["content-encoding"] == "br"
            assert css.headers["cache-control"] == "max-age=315360000, public, immutable"

            watch_answer_text(tab_b)
            chat_a = tab_a.get_by_role("region", name="Chat")
            chat_a.get_by_role("textbox", name="Message").fill(REQUEST)
            chat_a.get_by_role("button", name="Send").click()

            for tab in (tab_a, tab_b):
                chat = tab.get_by_role("region", name="Chat")
                expect(chat.locator(".bubble-text", has_text=REQUEST)).to_be_visible(timeout=TURN_WAIT_MS)
                expect(chat.get_by_role("group", name="Internal reasoning")).to_contain_text(REASONING, timeout=TURN_WAIT_MS)
                expect(chat.locator("#chat-messages .answer").first).to_have_text(ANSWER, timeout=TURN_WAIT_MS)
                expect_bar_chart(tab)
                expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
            # The other tab saw the answer arrive token by token.
            states = tab_b.evaluate("window.__answerStates")
            partial = [s for s in states if s != ANSWER]
            # Tokens 80 ms apart; a busy machine may join some into one frame.
            assert len(partial) >= 2, f"the answer did not stream in through the proxy: {states}"
            assert all(ANSWER.startswith(s) for s in partial), states
            assert len(model_server.requests) == 2

            tab_a.reload()
            expect(tab_a.get_by_role("region", name="Chat").locator("#chat-messages .answer").first).to_have_text(ANSWER)
            assert csp_violations(console) == []
        finally:
            context.close()
        assert "[error]" not in proxy.error_log(), proxy.error_log()

    lines = production.server_lines()
    entries = [json.loads(line) for line in lines]  # one JSON object a line, every line
    assert all({"time", "level", "logger", "message", "instance"} <= entry.keys() for entry in entries)
    # Each tab's socket went to another process.
    assert set(socket_instances(production)) == {"web-1", "web-2"}
    # The origin check passed for both: no socket was refused.
    assert not [e for e in entries if e.get("method") == "WSREJECT" or "refused" in e["message"]]
    # The turn's own lines name its thread and turn.
    turn_lines = [e for e in entries if e["logger"] == "haico.conversations.turns"]
    assert [e["message"].split(" of thread")[0] for e in turn_lines] == ["turn 1", "turn 1"]
    assert all((e["thread_id"], e["turn"]) == (thread_id, 1) for e in turn_lines)
    assert "ended (complete)" in turn_lines[-1]["message"]
    # The address nginx passed on, not nginx's own connection's port.
    access = [e for e in entries if e["logger"] == "daphne.access" and e.get("path") == "/accounts/signup/"]
    assert access and all(e["client"].startswith("127.0.0.1") for e in access)
    errors = [e for e in entries if e["level"] in ("ERROR", "CRITICAL")]
    assert not errors, errors
