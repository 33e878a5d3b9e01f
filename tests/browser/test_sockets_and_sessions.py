"""The thread socket on the real server (daphne), from Chromium and from a
plain WebSocket client: it lives only as long as its session, opens only
from the site's own origin, survives a frame it could not encode, and
refuses an unrouted path without a traceback. A stale tab acting on what
another tab deleted gets a message, never the error page (DEBUG is on here,
where django-htmx would show it over the whole workspace)."""

import http.cookiejar
import re
import urllib.parse
import urllib.request

import pytest
from playwright.sync_api import expect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from .conftest import PASSWORD
from .helpers import new_thread_for, open_add_form, step_action, thread_id_from, wait_for_socket

ENDED = "Your session has ended; log in again to use the chat."


class Browser:
    """A plain HTTP client with its own cookies, logged in through the login form."""

    def __init__(self, base_url: str):
        self.base_url = base_url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def _token(self, path: str) -> str:
        html = self.opener.open(self.base_url + path).read().decode()
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)

    def post(self, path: str, fields: dict, *, token_from: str) -> str:
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": self._token(token_from), **fields}).encode()
        request = urllib.request.Request(self.base_url + path, data=data, headers={"Referer": self.base_url + token_from})
        with self.opener.open(request) as response:
            return response.geturl()

    def log_in(self, username: str) -> "Browser":
        self.post("/accounts/login/", {"username": username, "password": PASSWORD}, token_from="/accounts/login/")
        return self

    def new_thread(self) -> str:
        return thread_id_from(self.post("/threads/new/", {}, token_from="/threads/"))

    @property
    def cookie(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


def _socket(server, thread_id, browser, *, origin=None, path=None):
    url = server.url.replace("http://", "ws://") + (path or f"/ws/threads/{thread_id}/")
    return connect(url, origin=origin or server.url, additional_headers={"Cookie": browser.cookie}, open_timeout=5)


def _frame_containing(socket, needle, timeout=5.0):
    while True:
        frame = socket.recv(timeout=timeout)
        if needle in frame:
            return frame


def test_logging_out_in_another_tab_closes_the_pages_socket_and_says_why(page, haico_server):
    new_thread_for(page, haico_server.url, "ada")
    wait_for_socket(page)
    other_tab = page.context.new_page()
    other_tab.goto(f"{haico_server.url}/threads/")
    other_tab.get_by_role("button", name="Log out").click()

    chat = page.get_by_role("region", name="Chat")
    expect(chat.get_by_role("alert").filter(has_text=ENDED)).to_be_visible()
    page.wait_for_function(
        "() => { const el = document.querySelector('[ws-connect]');"
        " const ws = el && el['htmx-internal-data'] && el['htmx-internal-data'].webSocket;"
        " return !ws || !ws.socket || ws.socket.readyState === 3; }"
    )
    # Closed for good, not dropped: the page does not claim to be reconnecting.
    expect(page.get_by_role("status").filter(has_text="Reconnecting")).to_have_count(0)


def test_a_password_change_elsewhere_ends_a_socket_at_its_next_message(haico_server):
    haico_server.create_user("ada")
    laptop, phone = Browser(haico_server.url).log_in("ada"), Browser(haico_server.url).log_in("ada")
    thread_id = laptop.new_thread()
    with _socket(haico_server, thread_id, laptop) as stale, _socket(haico_server, thread_id, phone) as changing:
        phone.post(
            "/accounts/password_change/",
            {"old_password": PASSWORD, "new_password1": "another-long-pass-42", "new_password2": "another-long-pass-42"},
            token_from="/accounts/password_change/",
        )
        stale.send('{"action": "stop"}')
        assert ENDED in _frame_containing(stale, ENDED)
        with pytest.raises(Exception):  # noqa: B017  (any end of the socket; its close code is checked below)
            while True:
                stale.recv(timeout=5)
        assert stale.close_code == 4401
        # The browser that changed the password keeps its socket.
        changing.send('{"action": "stop"}')
        assert "No turn is running." in _frame_containing(changing, "No turn is running.")


def test_frames_with_lone_surrogates_close_no_socket_of_the_thread(start_haico_server):
    # A configured model (never called): the unknown-model notice echoes the name sent.
    server = start_haico_server({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "x", "HAICO_MODEL": "scripted"})
    server.create_user("ada")
    browser = Browser(server.url).log_in("ada")
    thread_id = browser.new_thread()
    with _socket(server, thread_id, browser) as sender, _socket(server, thread_id, browser) as other_tab:
        # Browsers send well-formed text; a crafted client can send JSON escapes of lone surrogates.
        sender.send('{"message": "a lone \\ud800 surrogate"}')
        assert "cannot be stored" in _frame_containing(sender, "cannot be stored")
        sender.send('{"message": "hello", "model": "gpt\\udfff"}')
        assert "Unknown model \u201cgpt\ufffd\u201d" in _frame_containing(sender, "Unknown model")
        # Both sockets are still open and live: a change reaches both.
        browser.post(
            f"/threads/{thread_id}/workspace/plan/add/", {"text": "Still live"}, token_from=f"/threads/{thread_id}/workspace/"
        )
        for socket in (sender, other_tab):
            assert "Still live" in _frame_containing(socket, "Still live")
    assert server.query("SELECT count(*) FROM workspace_workspacesnapshot") == [(0,)]
    assert "Traceback" not in server.log_tail(200)


@pytest.mark.parametrize("origin", ["http://127.0.0.1:9999", "https://127.0.0.1", "http://evil.example"])
def test_a_socket_from_another_origin_is_refused_at_the_handshake(haico_server, origin):
    haico_server.create_user("ada")
    browser = Browser(haico_server.url).log_in("ada")
    thread_id = browser.new_thread()
    port = haico_server.url.rsplit(":", 1)[1]
    origin = origin.replace("9999", str(int(port) + 1))
    with pytest.raises(InvalidStatus) as refused:
        _socket(haico_server, thread_id, browser, origin=origin)
    assert refused.value.response.status_code == 403
    with _socket(haico_server, thread_id, browser) as socket:  # the page's own origin opens
        socket.send('{"action": "stop"}')
        assert "No turn is running." in _frame_containing(socket, "No turn is running.")


def test_a_socket_to_an_unrouted_path_is_refused_without_a_traceback(haico_server):
    anonymous = Browser(haico_server.url)
    for path in ("/ws/nowhere/", "/ws/threads/not-a-uuid/", "/favicon.ico"):
        with pytest.raises(InvalidStatus) as refused:
            _socket(haico_server, None, anonymous, path=path)
        assert refused.value.response.status_code == 403
    log = haico_server.log_tail(200)
    assert "Traceback" not in log and "No route found" not in log
    assert log.count("no such route") == 3


def test_a_stale_tab_acting_on_a_deleted_step_or_thread_gets_a_message_not_the_error_page(page, haico_server):
    url = new_thread_for(page, haico_server.url, "ada")
    planning = page.get_by_role("region", name="Planning")
    add = open_add_form(page, "Planning", "Add step")
    add.get_by_role("textbox", name="New step").fill("Gather sources")
    add.get_by_role("button", name="Add step").click()
    expect(planning.locator(".step-text")).to_have_text(["Gather sources"])

    # Deleted behind the page's back (as if it had missed the push).
    haico_server.manage("shell", "-c", "from workspace.models import Todo; Todo.objects.all().delete()")
    step_action(page, "1", "Edit")
    field = planning.get_by_role("textbox", name="Text of step 1")
    field.fill("Gather more sources")
    field.press("Enter")
    expect(planning.get_by_role("alert").filter(has_text="That step no longer exists")).to_be_visible()
    expect(planning.locator(".step-text")).to_have_count(0)

    # The thread deleted from another tab: acting here flashes a message; the workspace stays.
    thread_id = thread_id_from(url)
    haico_server.manage(
        "shell", "-c", f"from workspace.models import Thread; Thread.objects.filter(pk='{thread_id}').update(is_deleted=True)"
    )
    add.get_by_role("textbox", name="New step").fill("One more")
    add.get_by_role("button", name="Add step").click()
    expect(planning.get_by_role("alert").filter(has_text="no longer exists")).to_be_visible()
    expect(page.get_by_role("region", name="Chat")).to_be_visible()
    expect(page.get_by_text("Page not found")).to_have_count(0)
    assert haico_server.query("SELECT count(*) FROM workspace_todo") == [(0,)]
