"""The MCP server end to end: a person makes a token on their account page,
an MCP client (the official SDK's) uses it over streamable HTTP against the
running server, and what it adds appears live in the person's open tab and
in the activity log; the same tools over stdio (the mcp_stdio command); a
revoked token and another person's thread are refused."""

import asyncio
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import expect

from .conftest import BASE_DIR
from .helpers import create_thread, new_thread_for, sign_up_quickly, thread_id_from, wait_for_socket

WHY = "Recording the tone you asked for."


def run_async(coroutine):
    """Run an MCP client beside Playwright, whose sync API holds this thread's event loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result(timeout=120)


def _make_token(page, base_url, name):
    page.goto(f"{base_url}/accounts/tokens/")
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_role("region", name="New token").locator("[data-token-secret]").inner_text()
    assert re.fullmatch(r"haico_[A-Za-z0-9_-]{20,}", secret)
    return secret


async def _over_http(url, secret, calls):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30)
    async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        return [await client.call_tool(name, arguments) for name, arguments in calls]


def test_a_preference_added_through_mcp_appears_live_in_the_open_tab(haico_server, new_page):
    page = new_page()
    sign_up_quickly(page, haico_server.url, "barbara")
    secret = _make_token(page, haico_server.url, "Desktop agent")
    thread_url = create_thread(page, haico_server.url)
    thread_id = thread_id_from(thread_url)
    wait_for_socket(page)

    listed, added = run_async(
        _over_http(
            haico_server.url,
            secret,
            [
                ("list_threads", {}),
                (
                    "add_preferences",
                    {
                        "thread_id": thread_id,
                        "action_and_reasoning": WHY,
                        "items": [{"title": "Plain, friendly tone", "kind": "hard"}],
                    },
                ),
            ],
        )
    )
    assert [t["id"] for t in json.loads(listed.content[0].text)["threads"]] == [thread_id]
    assert not added.is_error

    preferences = page.get_by_role("region", name="Preferences")
    expect(preferences).to_contain_text("Plain, friendly tone")  # pushed, no reload
    page.get_by_text("Activity log").click()
    expect(page.locator("#activity-log")).to_contain_text(f"Through MCP (token “Desktop agent”): {WHY}")

    # The token page shows when it was last used.
    page.goto(f"{haico_server.url}/accounts/tokens/")
    row = page.get_by_role("table", name="Your tokens").get_by_role("row").filter(has_text="Desktop agent")
    expect(row.get_by_role("cell").nth(5)).not_to_have_text("Never")  # Last used (it never expires: "Never" there)
    expect(row.get_by_role("cell").nth(4)).to_have_text("Never")


def test_revoked_tokens_and_other_peoples_threads_are_refused(haico_server, new_page):
    owner = new_page()
    thread_id = thread_id_from(new_thread_for(owner, haico_server.url, "frances"))
    intruder = new_page()
    sign_up_quickly(intruder, haico_server.url, "mallory")
    theirs = _make_token(intruder, haico_server.url, "Mallory's agent")

    (result,) = run_async(
        _over_http(
            haico_server.url,
            theirs,
            [
                ("set_objective", {"thread_id": thread_id, "action_and_reasoning": WHY, "text": "Taken over"}),
            ],
        )
    )
    assert result.is_error and "No such thread among yours" in result.content[0].text
    assert haico_server.query("SELECT count(*) FROM workspace_objective") == [(0,)]

    intruder.get_by_role("button", name="Revoke token Mallory's agent").click()
    expect(intruder.get_by_role("table", name="Your tokens")).to_contain_text("Revoked")
    response = httpx2.post(
        f"{haico_server.url}/mcp",
        headers={"Authorization": f"Bearer {theirs}"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert response.status_code == 401


def test_the_stdio_server_offers_the_same_tools_and_writes_the_same_way(haico_server, new_page):
    page = new_page()
    sign_up_quickly(page, haico_server.url, "radia")
    secret = _make_token(page, haico_server.url, "Terminal agent")
    thread_id = thread_id_from(create_thread(page, haico_server.url))
    wait_for_socket(page)

    async def over_stdio():
        params = StdioServerParameters(
            command=sys.executable,
            args=["manage.py", "mcp_stdio"],
            cwd=str(BASE_DIR),
            env={**haico_server.env, "HAICO_TOKEN": secret},
        )
        async with Client(params) as client:
            tools = await client.list_tools()
            result = await client.call_tool(
                "set_objective",
                {
                    "thread_id": thread_id,
                    "action_and_reasoning": WHY,
                    "text": "Ship the field guide",
                },
            )
            return tools, result

    tools, result = run_async(over_stdio())
    assert {"list_threads", "get_workspace", "add_preferences", "update_document"} <= {t.name for t in tools.tools}
    assert not result.is_error
    assert haico_server.query("SELECT text FROM workspace_objective") == [("Ship the field guide",)]


def test_the_real_server_checks_origin_refuses_get_and_points_a_401_at_its_metadata(haico_server, new_page):
    """What an MCP client meets on the running server (docs/adr/0052): a page
    on another origin is refused (DNS rebinding), GET gets 405 at once rather
    than a stream held open, and a 401 names the reason and the metadata,
    which names this endpoint. The SDK client reports the server's words."""
    page = new_page()
    sign_up_quickly(page, haico_server.url, "grace")
    secret = _make_token(page, haico_server.url, "Laptop")
    auth = {"Authorization": f"Bearer {secret}", "Accept": "application/json, text/event-stream"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    foreign = httpx2.post(f"{haico_server.url}/mcp", json=listing, headers={**auth, "Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "not accepted here" in foreign.json()["error"]["message"]
    own = httpx2.post(f"{haico_server.url}/mcp", json=listing, headers={**auth, "Origin": haico_server.url})
    assert own.status_code == 200 and own.headers["access-control-allow-origin"] == haico_server.url
    assert "update_document" in {tool["name"] for tool in own.json()["result"]["tools"]}
    preflight = httpx2.options(
        f"{haico_server.url}/mcp",
        headers={
            "Origin": haico_server.url,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == haico_server.url

    held = httpx2.get(f"{haico_server.url}/mcp", headers={**auth, "Accept": "text/event-stream"}, timeout=5)
    assert held.status_code == 405 and held.headers["allow"] == "POST, OPTIONS"

    unauthorised = httpx2.post(f"{haico_server.url}/mcp", json=listing, headers={"Authorization": "Bearer haico_wrong"})
    assert unauthorised.status_code == 401
    challenge = unauthorised.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge and "unknown or revoked" in challenge
    metadata_url = re.search(r'resource_metadata="([^"]+)"', challenge).group(1)
    assert metadata_url == f"{haico_server.url}/.well-known/oauth-protected-resource/mcp"
    metadata = httpx2.get(metadata_url).json()
    assert metadata["resource"] == f"{haico_server.url}/mcp" and metadata["bearer_methods_supported"] == ["header"]

    async def with_a_wrong_token():
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer haico_wrong"}, timeout=30)
        try:
            async with Client(streamable_http_client(f"{haico_server.url}/mcp", http_client=http)) as client:
                await client.list_tools()
        except BaseException as raised:  # the SDK's task groups wrap its MCPError
            while isinstance(raised, BaseExceptionGroup):
                raised = raised.exceptions[0]
            return raised
        return None

    refused = run_async(with_a_wrong_token())
    assert isinstance(refused, MCPError) and "this one is unknown or revoked" in str(refused)
