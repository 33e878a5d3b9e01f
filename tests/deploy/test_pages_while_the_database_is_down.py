"""A production server (deploy/start.sh) whose PostgreSQL stops under a
signed-in person (a restart, a failover), on a cluster of the test's own.

Before, every request got Django's bare "Server Error (500)" and wrote
about twelve tracebacks to the log (the session's read, the second read
after a lost connection, Django's own record of each). Now a page says the
database cannot be reached and that nothing was changed (503, with when to
try again), an htmx request gets that sentence for the page to show, the
log has one line for the outage and one when the database is back, and
the person is still signed in afterwards, their save going through. Their
MCP client is told the same in a JSON-RPC error (conversations.mcp_transport)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

DATABASE_DOWN = "The server cannot reach its database just now, so this could not be done; nothing was changed."
MCP_DATABASE_DOWN = "The server cannot reach its database just now; nothing was done. Try again in a minute."


class Visitor:
    """A browser without a browser: keeps the server's cookies (Secure ones
    too, over this plain HTTP) and follows no redirect, so each answer is
    seen as the server gave it."""

    class _NoRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    def __init__(self, url: str):
        self.url = url
        self.cookies: dict[str, str] = {}
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), self._NoRedirects())

    def request(
        self, path: str, form: dict | None = None, *, json_body: dict | None = None, **headers: str
    ) -> tuple[int, dict, str]:
        headers = {**headers, "Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if form is not None:
            headers.setdefault("Referer", self.url + path)
            headers.setdefault("X-CSRFToken", self.cookies.get("csrftoken", ""))
        data = None if form is None else urllib.parse.urlencode(form).encode()
        if json_body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(json_body).encode()
        try:
            response = self._opener.open(urllib.request.Request(self.url + path, data=data, headers=headers), timeout=20)
        except urllib.error.HTTPError as error:
            response = error
        for cookie in response.headers.get_all("Set-Cookie") or []:
            name, value = cookie.split(";", 1)[0].split("=", 1)
            self.cookies[name] = value
        return response.status, dict(response.headers), response.read().decode()

    def sign_up(self, username: str) -> None:
        self.request("/accounts/signup/")
        password = "a-long-pass-4826"
        status, headers, _ = self.request(
            "/accounts/signup/", {"username": username, "password1": password, "password2": password}
        )
        assert (status, headers.get("Location")) == (302, "/threads/"), status


def _mcp_list_threads(url: str, secret: str) -> tuple[int, dict, str]:
    """An MCP client's tools/call over streamable HTTP (the server keeps no
    sessions, so a call needs no handshake before it)."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_threads", "arguments": {}}}
    client = Visitor(url)
    return client.request(
        "/mcp",
        json_body=call,
        Authorization=f"Bearer {secret}",
        Accept="application/json, text/event-stream",
    )


def _server_lines(server, *, since: int) -> list[str]:
    return server.server_lines()[since:]


def test_a_person_is_told_the_database_is_away_and_their_save_goes_through_once_it_is_back(start_production, private_services):
    postgres, redis = private_services
    server = start_production({"DATABASE_URL": postgres.url, "REDIS_URL": redis.url}, processes=1)
    ada = Visitor(server.url)
    ada.sign_up("ada")
    status, headers, _ = ada.request("/threads/new/", {})
    assert status == 302
    workspace = headers["Location"]
    thread_id = re.search(r"/threads/([0-9a-f-]{36})/workspace/", workspace).group(1)
    save = f"/threads/{thread_id}/workspace/document/save/"
    _, _, tokens_page = ada.request("/accounts/tokens/", {"name": "laptop", "expires": "never"})
    secret = re.search(r"<code class=\"token-secret\" data-token-secret>([^<]+)</code>", tokens_page).group(1)
    assert _mcp_list_threads(server.url, secret)[0] == 200
    before = len(server.server_lines())

    postgres.stop()

    status, headers, body = ada.request("/threads/")
    assert status == 503
    assert headers["Retry-After"] == "30"
    assert "<title>Not available just now · HAICO</title>" in body
    assert DATABASE_DOWN in body
    assert "Everything saved before is kept. Try again in a minute." in body
    status, headers, body = ada.request(workspace)
    assert status == 503
    assert DATABASE_DOWN in body
    # The editor's save, as htmx sends it: the sentence alone, for the page to show.
    draft = {"base_version": "0", "title": "Notes", "content": "Written while the database restarts."}
    status, headers, body = ada.request(save, draft, **{"HX-Request": "true"})
    assert (status, headers["Content-Type"], body) == (503, "text/plain; charset=utf-8", DATABASE_DOWN)
    # Her MCP client is told the same, as a JSON-RPC error it shows.
    status, headers, body = _mcp_list_threads(server.url, secret)
    assert (status, headers["Retry-After"]) == (503, "30")
    assert json.loads(body)["error"] == {"code": -32603, "message": MCP_DATABASE_DOWN}

    postgres.start()
    deadline = time.monotonic() + 60
    while (status := ada.request("/threads/")[0]) != 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert status == 200  # still signed in: the session outlived the outage

    status, _, body = ada.request(save, draft, **{"HX-Request": "true"})
    assert status == 200
    assert 'data-state="saved"' in body
    status, _, body = _mcp_list_threads(server.url, secret)
    assert status == 200
    assert thread_id in json.loads(body)["result"]["content"][0]["text"]
    status, _, body = ada.request(workspace)
    assert status == 200
    assert "Written while the database restarts." in body

    lines = _server_lines(server, since=before)
    assert not [line for line in lines if "Traceback" in line or " ERROR " in line], "\n".join(lines)
    outage = [line for line in lines if " WARNING " in line]
    assert len(outage) == 2, "\n".join(outage)
    assert re.search(
        r"WARNING haico\.site the database is unreachable \(connection failed: .*Connection refused.*\): "
        # What failed first: this request, or the server's own round of recovery if it came first.
        r"(could not answer GET /threads/|the turn recovery could not run; trying again); "
        r"failures are counted until it answers again$",
        outage[0],
    ), outage[0]
    assert re.search(r"WARNING haico\.outages the database answers again after \d+\.\d s$", outage[1]), outage[1]
