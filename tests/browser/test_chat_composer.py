"""The chat composer never loses a message, and a message is sent only once
the document text typed before it is saved (docs/adr/0013), in Chromium
against the real server and a scripted model.

- Sent before the page's socket is connected (the page still connecting, or
  reconnecting after a drop): the message is held, the composer says so, and
  it goes once the socket opens; the page never submits the form natively.
- Send clicked while the page's scripts are still loading: the message stays
  and goes once they run.
- Enter in the chat within the autosave delay of typing in the document: the
  turn's snapshot and the model's first call see the typed text.
- A message being written survives a reload of the tab, until it is sent or
  the person logs out.
- A held message whose socket closes before the ack: kept, said and sent
  once after logging in again (4401); after a drop (1006) sent again with
  the id it went with, so it runs once whether or not the server had it
  (docs/adr/0126), also across a reload.
"""

import time

from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply
from tests.support.openai_server import Misbehave

from .helpers import (
    LATE_SOCKET_SCRIPT,
    TURN_WAIT_MS,
    document_status,
    document_text,
    log_in,
    model_env,
    new_thread_for,
    thread_id_from,
    wait_for_socket,
)

CONNECTING = "Connecting… it will be sent when connected."
GOING_AGAIN = "The connection dropped as your message went: once connected it is sent again as it went, and runs only once."


def _start(new_page, start_haico_server, model_server) -> tuple[object, Page, str]:
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    return server, page, url


def _chat(page: Page):
    return page.get_by_role("region", name="Chat")


def _socket_state(page: Page):
    return page.evaluate(
        "() => { const el = document.querySelector('[ws-connect]');"
        " const ws = el && el['htmx-internal-data'] && el['htmx-internal-data'].webSocket;"
        " return ws && ws.socket ? ws.socket.readyState : null; }"
    )


def _stored_messages(server, thread_id: str) -> list[str]:
    return [
        message
        for (message,) in server.query(
            "SELECT user_message FROM workspace_workspacesnapshot WHERE thread_id = ? ORDER BY turn_index",
            (thread_id.replace("-", ""),),
        )
    ]


def test_a_message_sent_before_the_socket_connects_is_held_and_sent_once_it_does(new_page, start_haico_server, model_server):
    model_server.script([Reply(text="First answer."), Reply(text="Second answer.")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    # Long enough that a busy machine still fills and sends inside it.
    page.add_init_script("window.__socketDelayMs = 5000;")
    page.add_init_script(LATE_SOCKET_SCRIPT)
    page.goto(url)

    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")
    box.fill("Sent before the socket is up")
    box.press("Enter")
    assert _socket_state(page) == 0  # still connecting: the test is about this moment
    expect(chat.get_by_role("status").filter(has_text="Connecting")).to_have_text(CONNECTING)
    expect(box).to_have_value("Sent before the socket is up")
    assert page.url == url  # no native submit (a GET that loses the message)
    assert _stored_messages(server, thread_id_from(url)) == []

    expect(chat.locator(".bubble-user .bubble-text")).to_have_text(["Sent before the socket is up"], timeout=TURN_WAIT_MS)
    expect(chat.locator(".answer")).to_have_text(["First answer."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("")
    expect(page.locator("#chat-pending")).to_be_hidden()
    assert _stored_messages(server, thread_id_from(url)) == ["Sent before the socket is up"]

    # The turn has ended on this page (Send is enabled again) before the drop:
    # otherwise the click below waits for the reconnect to enable Send and the
    # message goes straight out, never held.
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)

    # The socket drops; a message sent while it reconnects is held the same way.
    page.evaluate("() => { window.__socketDelayMs = 5000; window.__dropSocket(); }")
    reconnecting = page.get_by_role("status").filter(has_text="Reconnecting…")
    expect(reconnecting).to_be_visible()
    box.fill("Sent while reconnecting")
    chat.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-pending")).to_have_text(CONNECTING)
    expect(chat.locator(".answer")).to_have_text(["First answer.", "Second answer."], timeout=TURN_WAIT_MS)
    expect(reconnecting).to_have_count(0)
    expect(box).to_have_value("")
    assert _stored_messages(server, thread_id_from(url)) == ["Sent before the socket is up", "Sent while reconnecting"]
    assert len(model_server.requests) == 2  # each message sent once


def test_send_clicked_while_the_page_is_still_loading_keeps_the_message_and_sends_it(new_page, start_haico_server, model_server):
    model_server.script([Reply(text="Got it.")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    held = []
    page.route("**/htmx-2.min.js", lambda route: held.append(route))  # the scripts wait for it (defer keeps order)
    page.goto(url, wait_until="commit")

    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")
    box.fill("Clicked before the scripts ran")
    chat.get_by_role("button", name="Send").click()
    page.wait_for_timeout(300)
    assert page.url == url
    expect(box).to_have_value("Clicked before the scripts ran")

    assert held, "the page did not ask for htmx"
    held[0].continue_()
    expect(chat.locator(".answer")).to_have_text(["Got it."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("")
    assert _stored_messages(server, thread_id_from(url)) == ["Clicked before the scripts ran"]


def test_document_text_typed_just_before_enter_is_saved_before_the_message_goes(new_page, start_haico_server, model_server):
    model_server.script([Reply(text="I see your draft.")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    wait_for_socket(page)

    editor = document_text(page)
    editor.click()
    page.keyboard.type("Draft typed just now", delay=5)
    expect(document_status(page)).to_have_text("Unsaved changes")
    box = _chat(page).get_by_role("textbox", name="Message")
    box.fill("Look at my draft")
    box.press("Enter")  # well within the 1.5 s autosave delay

    expect(_chat(page).locator(".answer")).to_have_text(["I see your draft."], timeout=TURN_WAIT_MS)
    expect(document_status(page)).to_have_text("Saved")
    thread_id = thread_id_from(url).replace("-", "")
    # The thread's first snapshot holds its document text whole (docs/adr/0015).
    assert server.query(
        "SELECT s.user_message, b.text FROM workspace_workspacesnapshot s"
        " JOIN workspace_contentblob b ON b.id = s.document_body_id WHERE s.thread_id = ?",
        (thread_id,),
    ) == [("Look at my draft", "Draft typed just now")]
    assert "Draft typed just now" in model_server.system_prompt(0)


def test_a_message_being_written_survives_a_reload_until_it_is_sent_or_the_person_logs_out(
    new_page, start_haico_server, model_server
):
    model_server.script([Reply(text="Noted.")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    wait_for_socket(page)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")
    box.click()
    page.keyboard.type("A long question I was halfway through", delay=5)

    page.reload()
    expect(box).to_have_value("A long question I was halfway through")
    # Another tab of the thread starts with its own empty box.
    other = page.context.new_page()
    other.goto(url)
    expect(_chat(other).get_by_role("textbox", name="Message")).to_have_value("")
    other.close()

    wait_for_socket(page)
    box.press("Enter")
    expect(chat.locator(".answer")).to_have_text(["Noted."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("")
    page.reload()
    expect(box).to_have_value("")
    assert _stored_messages(server, thread_id_from(url)) == ["A long question I was halfway through"]

    box.click()
    page.keyboard.type("Not for whoever comes next", delay=5)
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("link", name="Log in")).to_be_visible()
    log_in(page, server.url, "ada")
    page.goto(url)
    expect(box).to_have_value("")


# --- a held message and a socket that closes before the ack (docs/adr/0013) ------------

NOT_LOGGED_IN = "Not sent: you are not logged in here any more. Your message is still in the box; it goes once you log in again."


def _go_offline(page: Page) -> None:
    page.context.set_offline(True)
    page.evaluate("() => window.__dropSocket()")  # a browser notices a lost network late: the test says when


def test_a_message_held_offline_while_the_session_ended_says_so_and_goes_once_after_logging_in_again(
    new_page, start_haico_server, model_server
):
    """Send is pressed offline; the session ends meanwhile (logged out on
    another device). The network comes back: the page's socket is accepted,
    sent the held message and at once closed 4401, the server having acted
    on nothing. The message stays held, the page says it was not sent, and
    it goes, once, when the person has logged in again."""
    model_server.script([Reply(text="Got your message.")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    _open_with_a_socket_the_test_can_drop(page, url)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")

    _go_offline(page)
    box.fill("Sent offline, then my session ended.")
    chat.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-pending")).to_have_text(CONNECTING)

    other = new_page()
    other.context.add_cookies(page.context.cookies())
    other.goto(f"{server.url}/threads/")
    other.get_by_role("button", name="Log out").click()
    expect(other.get_by_role("link", name="Log in")).to_be_visible()

    page.context.set_offline(False)
    expect(page.locator("#flash")).to_contain_text("Your session has ended", timeout=15_000)
    expect(page.locator("#chat-pending")).to_have_text(NOT_LOGGED_IN)
    expect(box).to_have_value("Sent offline, then my session ended.")
    assert _stored_messages(server, thread_id_from(url)) == []

    login_tab = page.context.new_page()
    log_in(login_tab, server.url, "ada")
    login_tab.close()
    page.evaluate("() => window.dispatchEvent(new Event('focus'))")  # back to the tab
    expect(chat.locator(".answer")).to_have_text(["Got your message."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("")
    expect(page.locator("#chat-pending")).to_be_hidden()
    assert _stored_messages(server, thread_id_from(url)) == ["Sent offline, then my session ended."]
    assert len(model_server.requests) == 1


# The chat message goes, or is lost on its way (`keep`), and the connection drops before any answer.
DROP_AS_THE_MESSAGE_GOES = (
    "(() => { const send = WebSocket.prototype.send;"
    " WebSocket.prototype.send = function (data) {"
    " const drop = window.__dropAfterMessage && String(data).includes('\"message\"');"
    " if (!drop || window.__dropAfterMessage === 'keep') send.call(this, data);"
    " if (drop) { window.__dropAfterMessage = false; window.__dropSocket(); } }; })();"
)
# Every text the line under the box shows, however briefly (the socket reconnects within a second).
WATCH_THE_PENDING_LINE = (
    "() => { window.__pendingSaid = []; const line = document.getElementById('chat-pending');"
    " new MutationObserver(() => window.__pendingSaid.push(line.textContent))"
    ".observe(line, { childList: true, characterData: true, subtree: true }); }"
)


def _until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


def _open_with_a_socket_the_test_can_drop(page: Page, url: str, *scripts: str) -> None:
    """Opens `url` with its socket connecting at once and droppable by the
    test (LATE_SOCKET_SCRIPT's window.__dropSocket), and `scripts` installed first."""
    page.add_init_script("window.__socketDelayMs = 0;")
    page.add_init_script(LATE_SOCKET_SCRIPT)
    for script in scripts:
        page.add_init_script(script)
    page.goto(url)
    wait_for_socket(page)


def _drop_as_it_goes(new_page, start_haico_server, model_server, *, reaches_the_server: bool):
    server, page, url = _start(new_page, start_haico_server, model_server)
    _open_with_a_socket_the_test_can_drop(page, url, DROP_AS_THE_MESSAGE_GOES)
    page.evaluate(WATCH_THE_PENDING_LINE)
    page.evaluate("(keep) => { window.__dropAfterMessage = keep ? 'keep' : 'lose'; }", reaches_the_server)
    return server, page, url


def test_a_message_the_connection_dropped_under_after_it_arrived_is_not_run_twice_and_the_box_clears(
    new_page, start_haico_server, model_server
):
    """The socket drops (1006) just after the message went: the server ran
    it, but its ack was lost. The page cannot tell, so it sends it again on
    the reconnected socket with the id it went with; the server finds it
    stored and acks the turn it began (docs/adr/0126): one turn, one model
    call, and the box is cleared."""
    model_server.script([Reply(text="Only once.")])
    server, page, url = _drop_as_it_goes(new_page, start_haico_server, model_server, reaches_the_server=True)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")

    box.fill("Caught by the drop")
    chat.get_by_role("button", name="Send").click()
    page.wait_for_function("(text) => window.__pendingSaid.includes(text)", arg=GOING_AGAIN)
    expect(chat.locator(".answer")).to_have_text(["Only once."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("")
    expect(page.locator("#chat-pending")).to_be_hidden()
    page.wait_for_timeout(2_000)
    assert _stored_messages(server, thread_id_from(url)) == ["Caught by the drop"]
    assert len(model_server.requests) == 1
    expect(chat.locator(".bubble-user")).to_have_count(1)


def test_a_message_the_connection_dropped_before_it_arrived_goes_once_reconnected(new_page, start_haico_server, model_server):
    """The socket drops with the message still on its way: the server never
    had it. It goes again once the page reconnects, by itself: the person
    does not have to notice and send it again (before, the page only said it
    may not have gone)."""
    model_server.script([Reply(text="Got it after the drop.")])
    server, page, url = _drop_as_it_goes(new_page, start_haico_server, model_server, reaches_the_server=False)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")

    box.fill("Lost on the wire")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".answer")).to_have_text(["Got it after the drop."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("")
    expect(page.locator("#chat-pending")).to_be_hidden()
    assert _stored_messages(server, thread_id_from(url)) == ["Lost on the wire"]
    assert len(model_server.requests) == 1
    assert GOING_AGAIN in page.evaluate("() => window.__pendingSaid")


def test_a_turn_that_ends_while_the_pages_catch_up_is_on_its_way_shows_its_answer_at_once(
    new_page, start_haico_server, model_server
):
    """Tab A's socket is down when tab B starts a turn. A reconnects and asks
    for the chat; the answer (the turn running, nothing streamed yet) reaches
    A only after the turn's end was pushed to A, where it had no turn to land
    in. A asks for the chat again and shows the answer, rather than an
    empty running turn until its check of a quiet turn (25 s)."""
    answer = "Answered while you were away."
    model_server.script([Misbehave(reply=Reply(text=answer), pause_after_tokens=1, pause_seconds=2.0)])
    _server, tab_a, url = _start(new_page, start_haico_server, model_server)
    _open_with_a_socket_the_test_can_drop(tab_a, url)
    held = []

    def hold_the_first_catch_up(route):
        if held:
            route.continue_()
        else:
            held.append(route)  # answered below, once the turn has ended

    tab_a.route("**/chat/from/**", hold_the_first_catch_up)
    tab_b = tab_a.context.new_page()
    tab_b.goto(url)
    wait_for_socket(tab_b)
    tab_a.evaluate("() => { window.__socketDelayMs = 500; window.__dropSocket(); }")
    chat_b = _chat(tab_b)
    chat_b.get_by_role("textbox", name="Message").fill("What did I miss?")
    chat_b.get_by_role("button", name="Send").click()
    deadline = time.monotonic() + 10
    while not held:
        assert time.monotonic() < deadline, "tab A never asked for the chat"
        tab_a.wait_for_timeout(50)
    running = held[0].fetch()  # the chat as the server has it now: the turn running
    assert answer not in running.text()
    expect(chat_b.locator(".answer")).to_have_text([answer], timeout=TURN_WAIT_MS)
    tab_a.wait_for_timeout(1_000)  # the turn's end reaches tab A, which shows no turn yet
    held[0].fulfill(response=running)
    expect(_chat(tab_a).locator(".answer")).to_have_text([answer], timeout=10_000)
    expect(tab_a.locator("#chat-status")).to_have_attribute("data-state", "idle")


def test_a_message_caught_by_a_drop_and_a_reload_goes_with_the_same_id_and_runs_once(new_page, start_haico_server, model_server):
    """The connection drops as the message goes (the server ran it) and the
    person reloads at once: the box has the draft back, and Send sends it
    with the id it went with, so the server acks the turn it already began
    rather than running it twice; the box is cleared."""
    model_server.script([Reply(text="Ran once.")])
    server, page, url = _drop_as_it_goes(new_page, start_haico_server, model_server, reaches_the_server=True)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")
    # Held offline after the drop: the page cannot send it again before the reload.
    page.evaluate("() => { window.__socketDelayMs = 60000; }")
    box.fill("Reloaded right after the drop")
    chat.get_by_role("button", name="Send").click()
    page.wait_for_function("(text) => window.__pendingSaid.includes(text)", arg=GOING_AGAIN)
    _until(lambda: _stored_messages(server, thread_id_from(url)) == ["Reloaded right after the drop"])

    page.reload()
    wait_for_socket(page)
    expect(box).to_have_value("Reloaded right after the drop")
    chat.get_by_role("button", name="Send").click()
    expect(box).to_have_value("", timeout=TURN_WAIT_MS)
    expect(chat.locator(".answer")).to_have_text(["Ran once."], timeout=TURN_WAIT_MS)
    page.wait_for_timeout(1_000)
    assert _stored_messages(server, thread_id_from(url)) == ["Reloaded right after the drop"]
    assert len(model_server.requests) == 1


def test_words_changed_while_a_dropped_message_goes_again_stay_in_the_box_and_it_runs_once(
    new_page, start_haico_server, model_server
):
    """The connection drops just after the message went (the server has it
    and runs it). While the page reconnects the person fixes a typo. The
    message goes again as it went, with its id: it runs once, and the
    corrected words stay in the box, said so, to send or not."""
    model_server.script([Reply(text="First answer."), Reply(text="Second answer.")])
    server, page, url = _drop_as_it_goes(new_page, start_haico_server, model_server, reaches_the_server=True)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")
    page.evaluate("() => { window.__socketDelayMs = 3000; }")  # a train tunnel: back in a few seconds
    box.fill("What is teh plan?")
    chat.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-pending")).to_have_text(GOING_AGAIN)
    _until(lambda: _stored_messages(server, thread_id_from(url)) == ["What is teh plan?"])
    box.fill("What is the plan?")
    expect(page.locator("#chat-pending")).to_have_text(
        "Your message went as you first sent it; what you changed since is still in the box.", timeout=TURN_WAIT_MS
    )
    expect(chat.locator(".answer")).to_have_text(["First answer."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("What is the plan?")
    page.wait_for_timeout(1_000)
    assert _stored_messages(server, thread_id_from(url)) == ["What is teh plan?"]
    assert len(model_server.requests) == 1


# The page's frames carrying a chat message are lost on the way out while
# window.__swallow > 0 (an uplink that died first); the first one lost also
# drops the socket (1006).
LOSE_MESSAGES_ON_THE_WAY_OUT = (
    "(() => { const send = WebSocket.prototype.send;"
    " WebSocket.prototype.send = function (data) {"
    " if (window.__swallow > 0 && String(data).includes('\"message\"')) {"
    " window.__swallow--; window.__swallowed = (window.__swallowed || 0) + 1;"
    " if (window.__dropOnSwallow) { window.__dropOnSwallow = false; window.__dropSocket(); } return; }"
    " send.call(this, data); }; })();"
)


def test_a_message_lost_twice_on_a_flaky_connection_goes_once_the_connection_holds(new_page, start_haico_server, model_server):
    """A thread with a finished turn. The message is lost on the way and the
    connection drops; its copy on the reconnected socket is lost too, and
    that socket drops a moment later, after the server told it how the last
    turn ended (an emptied notice, which is not a refusal). The page goes on
    holding it and sends it on the third socket: one turn, the box cleared."""
    model_server.script([Reply(text="First answer."), Reply(text="Second answer.")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    _open_with_a_socket_the_test_can_drop(page, url, LOSE_MESSAGES_ON_THE_WAY_OUT)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")
    box.fill("First question")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".answer")).to_have_text(["First answer."], timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled()

    page.evaluate("() => { window.__swallow = 2; window.__dropOnSwallow = true; }")
    box.fill("Second question, on a flaky connection")
    chat.get_by_role("button", name="Send").click()
    page.wait_for_function("() => window.__swallowed === 2", timeout=10_000)  # the copy sent again, lost too
    page.wait_for_timeout(1_500)  # the reconnected socket's first frames arrive
    page.evaluate("() => window.__dropSocket()")
    expect(chat.locator(".answer")).to_have_text(["First answer.", "Second answer."], timeout=TURN_WAIT_MS)
    expect(box).to_have_value("")
    assert _stored_messages(server, thread_id_from(url)) == ["First question", "Second question, on a flaky connection"]


def test_a_message_that_drops_the_connection_each_time_is_sent_again_only_a_few_times_and_said_so(
    new_page, start_haico_server, model_server
):
    """Every time this message goes, the connection drops under it (a proxy
    that cuts it, say). The page sends it again by itself, but not for ever:
    after the third drop it stops and says so, the words still in the box."""
    model_server.script([Reply(text="never")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    _open_with_a_socket_the_test_can_drop(page, url, LOSE_MESSAGES_ON_THE_WAY_OUT)
    chat = _chat(page)
    box = chat.get_by_role("textbox", name="Message")
    page.evaluate(
        "() => { window.__swallow = 100; Object.defineProperty(window, '__dropOnSwallow', { get: () => true, set: () => {} }); }"
    )
    box.fill("Cut every time")
    chat.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-pending")).to_have_text(
        "Not sent: the connection dropped each time this message went. It is still in the box: "
        "send it again once the connection is steady (it still runs only once).",
        timeout=15_000,
    )
    page.wait_for_timeout(3_000)
    assert page.evaluate("() => window.__swallowed") == 3
    expect(box).to_have_value("Cut every time")
    assert _stored_messages(server, thread_id_from(url)) == []
    wait_for_socket(page)


def test_a_message_too_big_for_the_socket_is_not_sent_said_so_and_the_page_stays_connected(
    new_page, start_haico_server, model_server
):
    """A long book pasted into the document (too long to save), all of it
    selected and asked about: the message with its selection is over the 1
    MiB the server's socket takes. The page does not send it (sent, it
    would close the socket, and go again on every reconnect): it says why,
    and the socket stays open."""
    model_server.script([Reply(text="never")])
    server, page, url = _start(new_page, start_haico_server, model_server)
    wait_for_socket(page)
    page.evaluate(
        "() => { const ed = document.querySelector('#doc-form textarea[name=\"content\"]');"
        " ed.value = 'A long book. '.repeat(90000); ed.focus(); ed.setSelectionRange(0, ed.value.length);"
        " ed.dispatchEvent(new Event('select', { bubbles: true })); }"
    )
    page.evaluate(
        "() => { window.__closes = [];"
        " document.addEventListener('htmx:wsClose', (e) => window.__closes.push(e.detail.event.code)); }"
    )
    chat = _chat(page)
    chat.get_by_role("button", name="Ask about selection").click()
    box = chat.get_by_role("textbox", name="Message")
    box.fill("Summarise the selected chapters")
    chat.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-pending")).to_contain_text("Not sent: the message with the text it asks about is too long")
    page.wait_for_timeout(2_000)
    assert page.evaluate("() => window.__closes") == []
    assert _socket_state(page) == 1
    expect(box).to_have_value("Summarise the selected chapters")
    assert _stored_messages(server, thread_id_from(url)) == []


def test_a_message_refused_while_another_tabs_turn_runs_says_not_sent_after_that_turn_ends(
    new_page, start_haico_server, model_server
):
    """Two tabs of one person. Tab A's message is lost as its connection
    drops; while A reconnects, tab B's message starts a turn. A's copy goes
    again and is refused ("a turn is running"); B's turn ends, which empties
    that notice. A's box still holds the message and its line says it was
    not sent, so it is not left unsent without a word."""
    model_server.script([Reply(text=" ".join(f"w{i}" for i in range(30)), token_delay=0.1), Reply(text="A's answer.")])
    server, tab_a, url = _start(new_page, start_haico_server, model_server)
    _open_with_a_socket_the_test_can_drop(tab_a, url, DROP_AS_THE_MESSAGE_GOES)
    tab_b = tab_a.context.new_page()
    tab_b.goto(url)
    wait_for_socket(tab_b)
    tab_a.evaluate("() => { window.__dropAfterMessage = 'lose'; window.__socketDelayMs = 3000; }")
    chat_a, chat_b = _chat(tab_a), _chat(tab_b)
    chat_a.get_by_role("textbox", name="Message").fill("Tab A's question")
    chat_a.get_by_role("button", name="Send").click()
    chat_b.get_by_role("textbox", name="Message").fill("Tab B's question")
    chat_b.get_by_role("button", name="Send").click()
    expect(chat_b.locator(".answer")).to_contain_text("w29", timeout=TURN_WAIT_MS)
    expect(chat_a.locator(".answer")).to_contain_text("w29", timeout=TURN_WAIT_MS)
    expect(tab_a.locator("#chat-pending")).to_have_text("Not sent: your message is still in the box.")
    expect(chat_a.get_by_role("textbox", name="Message")).to_have_value("Tab A's question")
    assert _stored_messages(server, thread_id_from(url)) == ["Tab B's question"]
