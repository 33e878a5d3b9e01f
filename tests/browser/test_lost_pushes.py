"""A page that misses the end of a turn (the push was lost on its way)
finds out from the server instead of showing the turn running forever
(docs/adr/0043): when a running turn has sent nothing for longer than its
heartbeat, when the page becomes visible again, and when Stop finds no
turn running. An artifact made while its socket was down is shown once it
is back, as the push would have shown it."""

import re

from playwright.sync_api import expect

from tests.support.fake_model import Reply

from .helpers import (
    ANSWER,
    LATE_SOCKET_SCRIPT,
    REQUEST,
    TURN_WAIT_MS,
    chart_turn_script,
    document_status,
    document_text,
    model_env,
    new_thread_for,
    save_document_now,
    wait_for_socket,
)


def _drop_turn_ends(page) -> list[str]:
    """Route the thread's socket through the test, dropping every message
    from the server that would end a turn on the page."""
    dropped: list[str] = []

    def handler(ws):
        server = ws.connect_to_server()

        def from_server(message):
            ends_a_turn = isinstance(message, str) and 'id="chat-status"' in message and 'data-state="idle"' in message
            if ends_a_turn and "No turn is running." not in message:  # Stop's answer gets through
                dropped.append(message)
                return
            ws.send(message)

        server.on_message(from_server)
        ws.on_message(lambda message: server.send(message))

    page.route_web_socket("**/ws/threads/**", handler)
    return dropped


def _send(chat, text: str) -> None:
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def test_a_page_that_missed_a_turns_end_learns_it_from_the_server(page, start_haico_server, model_server):
    # Tokens a little apart: a turn that ends within the live layer's
    # coalescing window sends its whole answer in the message that ends it,
    # which this test drops.
    model_server.script(
        [
            Reply(text="First answer.", token_delay=0.05),
            Reply(text="Second answer.", token_delay=0.05),
            Reply(text="Third answer.", token_delay=0.05),
        ]
    )
    server = start_haico_server(model_env(model_server))
    dropped = _drop_turn_ends(page)
    # A shorter wait than a real page's 25 s of silence.
    page.add_init_script("window.HAICO = window.HAICO || {}; window.HAICO.chatQuietMs = 2000;")
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    status = page.locator("#chat-status")

    # 1. Silence: the page asks the server once the turn has been quiet too long.
    _send(chat, "first")
    expect(chat.locator("#turn-1-answer-content")).to_contain_text("First answer.", timeout=TURN_WAIT_MS)
    # The streamed answer shows before the turn's end comes (and is dropped).
    for _ in range(TURN_WAIT_MS // 100):
        if dropped:
            break
        page.wait_for_timeout(100)
    assert dropped, "the turn's end should have been dropped on its way to the page"
    expect(status).to_have_attribute("data-state", "idle", timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled()

    # 2. Coming back to the tab: the page checks at once.
    page.evaluate("window.HAICO.chatQuietMs = 600000")
    _send(chat, "second")
    expect(chat.locator("#turn-2-answer-content")).to_contain_text("Second", timeout=TURN_WAIT_MS)
    # Its end dropped (the last tokens may travel in the same message, and go with it).
    for _ in range(TURN_WAIT_MS // 100):
        if len(dropped) >= 2:
            break
        page.wait_for_timeout(100)
    assert len(dropped) >= 2, "the second turn's end should have been dropped on its way to the page"
    expect(status).to_have_attribute("data-state", "running")
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(status).to_have_attribute("data-state", "idle", timeout=5000)
    expect(chat.locator("#turn-2-answer-content")).to_have_text("Second answer.")  # as the server stored it
    expect(chat.get_by_role("button", name="Send")).to_be_enabled()

    # 3. Stop on a turn that already ended: the page is told, not only "No turn is running".
    _send(chat, "third")
    expect(chat.locator("#turn-3")).to_be_visible(timeout=TURN_WAIT_MS)
    deadline = 100
    while len(dropped) < 3 and deadline:
        page.wait_for_timeout(100)
        deadline -= 1
    assert len(dropped) == 3
    expect(status).to_have_attribute("data-state", "running")
    chat.get_by_role("button", name="Stop").click()
    expect(page.locator("#chat-notice")).to_have_text("No turn is running.")
    expect(status).to_have_attribute("data-state", "idle")
    expect(chat.get_by_role("button", name="Send")).to_be_enabled()
    expect(chat.locator("#turn-3-answer-content")).to_have_text("Third answer.")


def test_a_chart_made_while_a_tab_was_reconnecting_takes_its_centre_once_it_is_back(new_page, start_haico_server, model_server):
    model_server.script(chart_turn_script())
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    lagging = page.context.new_page()
    lagging.add_init_script(LATE_SOCKET_SCRIPT)
    lagging.goto(url)
    lagging.evaluate("() => { window.__socketDelayMs = 200; }")
    wait_for_socket(page)
    wait_for_socket(lagging)
    # The second tab's connection drops and stays down for 6 seconds.
    lagging.evaluate("() => { window.__socketDelayMs = 6000; window.__dropSocket(); }")
    expect(lagging.locator("#connection-status")).to_contain_text("Reconnecting", timeout=5_000)

    _send(page.get_by_role("region", name="Chat"), REQUEST)
    expect(page.get_by_role("region", name="Chat").locator(".answer").first).to_have_text(ANSWER, timeout=TURN_WAIT_MS)

    expect(lagging.locator("#connection-status")).to_have_text("", timeout=15_000)
    centre = lagging.get_by_role("region", name="Document")
    expect(centre.get_by_role("img", name=re.compile("Q1 vs Q2 Revenue"))).to_be_visible(timeout=10_000)
    expect(centre.get_by_role("combobox", name="Show")).to_contain_text("Q1 vs Q2 Revenue")


def test_a_document_saved_while_another_tab_was_loading_shows_on_it_once_its_socket_opens(new_page, haico_server):
    """The save's push went out before the loading tab's socket joined the
    thread: the socket, told the page was rendered before that write, has
    the page read the workspace again."""
    page = new_page()
    url = new_thread_for(page, haico_server.url, "ada")
    wait_for_socket(page)
    loading = page.context.new_page()
    loading.add_init_script("window.__socketDelayMs = 4000;\n" + LATE_SOCKET_SCRIPT)
    loading.goto(url)
    expect(document_text(loading)).to_have_value("")
    save_document_now(page, "Written while the other tab was loading.")
    wait_for_socket(loading)
    expect(document_text(loading)).to_have_value("Written while the other tab was loading.", timeout=5_000)
    expect(document_status(loading)).not_to_have_text("Unsaved changes")
