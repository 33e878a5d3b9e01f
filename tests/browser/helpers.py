"""Steps a person takes in the browser, shared by the browser tests."""

from __future__ import annotations

import re
from urllib.parse import urljoin

from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call

from .conftest import PASSWORD

WORKSPACE_URL = re.compile(r"/threads/([0-9a-f-]{36})/workspace/$")


def sign_up(page: Page, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/signup/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_label("Password confirmation").fill(password)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("heading", name="Your threads")).to_be_visible()
    expect(page.get_by_role("navigation", name="Account")).to_contain_text(username)


def sign_up_quickly(page: Page, base_url: str, username: str, password: str = PASSWORD) -> None:
    """Make the account and sign in as `sign_up` does, through the site's own
    sign-up (the same form post, the same service, the session cookie put in
    the page's context), without loading and filling the pages: a second
    saved in every test that is not about signing up. The page is left where
    it was; the tests about signing up and in use `sign_up` and `log_in`."""
    request = page.context.request
    request.get(f"{base_url}/accounts/signup/")
    csrf_token = next(c["value"] for c in page.context.cookies(base_url) if c["name"] == "csrftoken")
    response = request.post(
        f"{base_url}/accounts/signup/",
        form={"csrfmiddlewaretoken": csrf_token, "username": username, "password1": password, "password2": password},
        max_redirects=0,
    )
    assert response.status == 302, f"sign-up of {username!r} answered {response.status}:\n{response.text()[:2000]}"


def new_thread_for(page: Page, base_url: str, username: str) -> str:
    """A new person (`sign_up_quickly`) on a new thread (`create_thread_quickly`):
    returns its workspace URL."""
    sign_up_quickly(page, base_url, username)
    return create_thread_quickly(page, base_url)


def create_thread_quickly(page: Page, base_url: str) -> str:
    """Make a thread as "New thread" does (the same form post, as the person
    signed in to `page`'s context), then open its workspace: the thread
    list is not loaded first, which was one page more in every test not
    about the list. Returns the workspace URL; the tests about making a
    thread from the list use `create_thread`."""
    csrf_token = next(c["value"] for c in page.context.cookies(base_url) if c["name"] == "csrftoken")
    response = page.context.request.post(f"{base_url}/threads/new/", form={"csrfmiddlewaretoken": csrf_token}, max_redirects=0)
    assert response.status == 302, f"a new thread answered {response.status}:\n{response.text()[:2000]}"
    page.goto(urljoin(f"{base_url}/", response.headers["location"]))
    expect(page).to_have_url(WORKSPACE_URL)
    # Its scripts have run (htmx's and ours): a control used before then does nothing.
    page.wait_for_load_state("load")
    return page.url


def open_second_tab(page: Page, url: str) -> Page:
    """Another tab of the same person (`page`'s browser context) on `url`;
    returns once both tabs' sockets are open."""
    second = page.context.new_page()
    second.goto(url)
    wait_for_socket(page)
    wait_for_socket(second)
    return second


def log_in(page: Page, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("navigation", name="Account")).to_contain_text(username)


def create_thread(page: Page, base_url: str) -> str:
    """Click "New thread" on the list; returns the new thread's workspace URL."""
    page.goto(f"{base_url}/threads/")
    page.get_by_role("button", name="New thread").click()
    expect(page).to_have_url(WORKSPACE_URL)
    # Its scripts have run (htmx's and ours): a control used before then does nothing.
    page.wait_for_load_state("load")
    return page.url


ADD_TOGGLES = {"Add step": "Add a step", "Add preference": "Add a preference"}


def open_add_form(page: Page, region: str, form: str):
    """The add form `form` ("Add step", "Add preference") of `region`, opened
    from its compact "Add" control if it is closed."""
    panel = page.get_by_role("region", name=region)
    add = panel.get_by_role("form", name=form)
    # The toggle's handler is the page's script: clicked before it ran, nothing opens.
    page.wait_for_load_state("load")
    if not add.is_visible():
        panel.get_by_role("button", name=ADD_TOGGLES[form], exact=True).click()
    expect(add).to_be_visible()
    return add


def thread_id_from(url: str) -> str:
    match = WORKSPACE_URL.search(url)
    assert match, url
    return match.group(1)


def wait_for_socket(page: Page) -> None:
    """Wait until the page's thread WebSocket is open.

    htmx's ws extension queues what is sent before the socket opens, which
    would let a test pass over a socket that opens late or never. It keeps
    the socket in its internal data of the element carrying ws-connect.
    """
    page.wait_for_function(
        "() => { const el = document.querySelector('[ws-connect]');"
        " const ws = el && el['htmx-internal-data'] && el['htmx-internal-data'].webSocket;"
        " return !!ws && !!ws.socket && ws.socket.readyState === 1; }"
    )


# --- A chart asked for in the chat, answered by a scripted model.

MODEL = "scripted-model"
REQUEST = "chart Q1 vs Q2 revenue: 120, 180"
REASONING = "Drawing a bar chart of the Q1 vs Q2 revenue figures."
ANSWER = "Here's the chart: Q2 is 50% higher than Q1."
TURN_WAIT_MS = 20_000


def model_env(model_server, **extra: str) -> dict[str, str]:
    """The server environment that makes the scripted `model_server` the site's model (MODEL)."""
    return {"OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": "test", "HAICO_MODEL": MODEL, **extra}


def two_servers(start_haico_server, model_server, *, database_url: str, redis_url: str):
    """Two servers sharing PostgreSQL and the Redis channel layer, as a team
    runs several server processes behind a proxy: (server A, server B)."""
    env = model_env(model_server, REDIS_URL=redis_url)
    return tuple(
        start_haico_server({**env, "HAICO_INSTANCE": name}, database_url=database_url) for name in ("server-a", "server-b")
    )


def revenue_chart_call(reasoning: str = REASONING) -> dict:
    """The chart_generator call for the bar chart `expect_bar_chart` looks for."""
    return tool_call(
        "chart_generator",
        reasoning,
        chart_type="bar",
        title="Q1 vs Q2 Revenue",
        data=[{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}],
        y_axis_title="Revenue",
    )


def revenue_table_call(reasoning: str = "Listing the figures.") -> dict:
    """The data_table call for the same figures, titled "Revenue table"."""
    return tool_call(
        "data_table", reasoning, title="Revenue table", columns=["Quarter", "Revenue"], rows=[["Q1", 120], ["Q2", 180]]
    )


def send_message(page: Page, text: str) -> None:
    """Type `text` in the chat's Message box and press Send."""
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def approval_card(page: Page, turn: int):
    """The approval card of `turn`, once it asks (its Approve button shown)."""
    card = page.get_by_role("region", name=f"Approval for turn {turn}")
    expect(card.get_by_role("button", name="Approve", exact=True)).to_be_visible(timeout=TURN_WAIT_MS)
    return card


def document_in_two_tabs(page: Page, base_url: str, text: str) -> Page:
    """A new person's new thread with `text` saved as its document, open in
    `page` and in a second tab, which is returned."""
    url = new_thread_for(page, base_url, "ada")
    other = open_second_tab(page, url)
    save_document_now(page, text)
    return other


def chart_turn_script() -> list[Reply]:
    """First call: a chart_generator tool call; second: the answer, streamed."""
    return [
        Reply(tool_calls=[revenue_chart_call()]),
        # Tokens a little apart, so the browser can be seen receiving them one by one.
        Reply(text=ANSWER, token_delay=0.08),
    ]


def chart_drawn(page: Page, canvas) -> dict:
    """What Chart.js drew on the canvas: its type and data (None if nothing)."""
    return canvas.evaluate(
        """(el) => {
            const chart = window.Chart && Chart.getChart(el);
            if (!chart) return null;
            return {type: chart.config.type, labels: chart.data.labels,
                    values: chart.data.datasets.map(d => d.data)};
        }"""
    )


def expect_bar_chart(page: Page) -> None:
    centre = page.get_by_role("region", name="Document")
    expect(centre.get_by_role("heading", name="Q1 vs Q2 Revenue")).to_be_visible()
    canvas = centre.get_by_role("img", name=re.compile("Q1 vs Q2 Revenue"))
    expect(canvas).to_be_visible()
    assert canvas.evaluate("el => el.tagName") == "CANVAS"
    page.wait_for_function("el => window.Chart && Chart.getChart(el)", arg=canvas.element_handle())
    drawn = chart_drawn(page, canvas)
    assert drawn["type"] == "bar"
    assert drawn["labels"] == ["Q1", "Q2"]
    assert drawn["values"] == [[120, 180]]


def step_action(page: Page, number: str, action: str) -> None:
    """Choose `action` ("Edit", "Add sub-step", "Indent", ...) from the menu of plan step `number`."""
    planning = page.get_by_role("region", name="Planning")
    planning.get_by_role("button", name=f"Actions for step {number}", exact=True).click()
    page.get_by_role("menu", name="Step actions").get_by_role("menuitem", name=action, exact=True).click()


def step_menu_item(page: Page, number: str, action: str):
    """The menu item `action` of step `number`, with the menu left open."""
    planning = page.get_by_role("region", name="Planning")
    planning.get_by_role("button", name=f"Actions for step {number}", exact=True).click()
    return page.get_by_role("menu", name="Step actions").get_by_role("menuitem", name=action, exact=True)


# --- the document editor --------------------------------------------------------------------

AUTOSAVE_WAIT_MS = 8_000  # 1.5 s debounce plus the request, with headroom for a busy CI box
LONG_FILL_MS = 30_000  # a near-limit document filled at once, on a busy two-core machine


def document_text(page: Page):
    return page.get_by_role("region", name="Document").get_by_role("textbox", name="Document text")


def document_status(page: Page):
    return page.get_by_role("region", name="Document").locator("[data-doc-status]")


def type_after(page: Page, anchor: str, text: str) -> None:
    """Put the caret just after `anchor` in the document text and type `text`
    (real key presses: the page then counts as used, which a beforeunload
    prompt needs)."""
    editor = document_text(page)
    editor.click()
    editor.evaluate(
        "(el, anchor) => { const at = el.value.indexOf(anchor); if (at < 0) throw new Error('no ' + anchor);"
        " el.setSelectionRange(at + anchor.length, at + anchor.length); }",
        anchor,
    )
    page.keyboard.type(text, delay=5)


def paste(page: Page, text: str) -> None:
    """Paste `text` at the caret as a person does: onto the clipboard, then
    Ctrl+V (one `insertFromPaste` input). Typing it with Playwright's
    insert_text instead makes Chromium insert a long text with many lines
    line by line, in time that grows with the square of its size (70 000
    characters of short lines: two minutes)."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.evaluate("(text) => navigator.clipboard.writeText(text)", text)
    page.keyboard.press("Control+V")


def save_document_now(page: Page, text: str) -> None:
    """Replace the document text and save at once (Enter in the title), as a
    person in another tab would, without waiting for the autosave delay.
    The text is pasted over the whole of the old one (`paste`): Playwright's
    fill inserts it as typed text, which Chromium takes in line by line (a
    50 000-character report: 10 s of the renderer's CPU on a quiet machine,
    over 30 s on a busy one)."""
    editor = document_text(page)
    if not text:
        editor.fill("", timeout=LONG_FILL_MS)
    else:
        editor.click()
        page.keyboard.press("Control+A")
        paste(page, text)
        expect(editor).to_have_value(text, timeout=LONG_FILL_MS)
    page.get_by_role("region", name="Document").get_by_role("textbox", name="Document title").press("Enter")
    expect(document_status(page)).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)


def delay_document_saves(page: Page, ms: int) -> None:
    """Hold every document save this long in the browser after htmx has
    prepared it (its text and base version are fixed by then), so a test
    can type while it is on its way."""
    page.evaluate(
        """(ms) => {
            const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
            XMLHttpRequest.prototype.open = function (method, url) { this.__url = String(url); return open.apply(this, arguments); };
            XMLHttpRequest.prototype.send = function (body) {
                if (!this.__url.includes("/document/save/")) return send.call(this, body);
                setTimeout(() => send.call(this, body), ms);
            };
        }""",
        ms,
    )


# --- a socket that connects late ------------------------------------------------------------

# Installed before the page's scripts: each WebSocket the page opens connects
# to the server only after window.__socketDelayMs (default 1500 ms), and
# window.__dropSocket() cuts the open one as a network failure would (close
# code 1006, after which htmx's ws extension reconnects, late again).
LATE_SOCKET_SCRIPT = """
(() => {
  const Real = window.WebSocket;
  let current = null;
  class LateSocket extends EventTarget {
    constructor(url, protocols) {
      super();
      this.url = url; this.readyState = 0; this.binaryType = "blob";
      this.CONNECTING = 0; this.OPEN = 1; this.CLOSING = 2; this.CLOSED = 3;
      current = this;
      this._timer = setTimeout(() => this._connect(protocols), window.__socketDelayMs ?? 1500);
    }
    _connect(protocols) {
      const ws = this._ws = new Real(this.url, protocols);
      ws.binaryType = this.binaryType;
      ws.onopen = (e) => { this.readyState = 1; this._fire("open", new Event("open")); };
      ws.onmessage = (e) => this._fire("message", new MessageEvent("message", { data: e.data }));
      ws.onerror = () => this._fire("error", new Event("error"));
      ws.onclose = (e) => this._closed(e.code, e.reason);
    }
    _fire(type, event) {
      if (this["on" + type]) this["on" + type](event);
      this.dispatchEvent(event);
    }
    _closed(code, reason) {
      if (this.readyState === 3) return;
      this.readyState = 3;
      this._fire("close", new CloseEvent("close", { code, reason }));
    }
    send(data) {
      if (this.readyState !== 1) throw new DOMException("not open", "InvalidStateError");
      this._ws.send(data);
    }
    close(code, reason) {
      clearTimeout(this._timer);
      if (this._ws) this._ws.close(code, reason);
      this._closed(code || 1000, reason || "");
    }
  }
  window.WebSocket = LateSocket;
  window.__dropSocket = () => {
    const socket = current;
    if (socket._ws) { socket._ws.onclose = null; socket._ws.close(); }
    socket._closed(1006, "dropped by the test");
  };
})();
"""


# --- the document written by the server's own services ------------------------------------------

SERVICE_SAVE = """
import os, uuid
from workspace.models import Thread
from workspace.services import document as document_services
thread = Thread.objects.get(pk=uuid.UUID(os.environ["HAICO_TEST_THREAD"]))
text = open(os.environ["HAICO_TEST_TEXT"], encoding="utf-8").read()
document_services.document_save(thread=thread, title="Report", content=text, author=os.environ["HAICO_TEST_AUTHOR"])
"""


def save_through_service(server, thread_id: str, text: str, *, author: str = "agent") -> None:
    """Write the whole document through the document service, as the agent's
    update_document does, in the server's database. It runs in another
    process, whose pushes cannot reach the server's in-memory channel layer:
    a page shows it once (re)loaded."""
    import os
    import tempfile

    from .conftest import _manage

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "text.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        env = {**server.env, "HAICO_TEST_THREAD": thread_id, "HAICO_TEST_TEXT": path, "HAICO_TEST_AUTHOR": author}
        _manage(env, "shell", "-c", SERVICE_SAVE)


def stored_document(server, thread_id: str) -> str | None:
    """The document's text as the server's database holds it (None before its first write)."""
    rows = server.query("SELECT content FROM workspace_document WHERE thread_id = ?", (thread_id.replace("-", ""),))
    return rows[0][0] if rows else None


def long_document(chars: int) -> str:
    """A markdown report of exactly `chars` characters: sections, each a
    heading and paragraphs numbered through the document (so every
    paragraph's text is unique), a list now and then."""
    parts, size, n = [], 0, 0
    while size < chars:
        n += 1
        part = (
            f"## Section {n}\n\nParagraph {n}.1 of the report says what was found in part {n}. "
            f"It goes on for a while, as reports do.\n\nParagraph {n}.2 weighs it.\n\n"
        )
        if n % 4 == 0:
            part += f"- point {n}.a\n- point {n}.b\n\n"
        parts.append(part)
        size += len(part)
    text = "".join(parts)[:chars]
    return text[:-1] + "\n" if not text.endswith("\n") else text
