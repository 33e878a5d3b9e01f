"""What real MCP clients meet at /mcp (docs/adr/0026, 0052), driven through
the official SDK's client over streamable HTTP against the ASGI app, and
plain HTTP where a client's first request would be: the Origin rule
(DNS rebinding), 405 for GET, the 401 challenge and the protected-resource
metadata, browsers' preflights, tool annotations, base_version's message,
the confirmation a large removal needs, and MCP edits recorded as the
person's through their token (History, objective history, the review, the
archive). Runs on SQLite, and on PostgreSQL with DATABASE_URL set."""

import json

import httpx2
import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError
from django.urls import reverse
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from conversations import mcp_transport
from conversations.archive import archive_bytes, import_archive
from conversations.mcp_server import BASE_FIELD, REMOVAL_FIELD, THREAD_FIELD, call_tool
from conversations.models import ActivityLogEntry
from conversations.tokens import token_create, token_revoke
from tests.support.outage_state import no_outage_on_record
from workspace.models import DocumentRevision, ObjectiveRevision
from workspace.selectors import document_for, document_history, document_review, objective_history
from workspace.services.document import document_save

pytestmark = pytest.mark.django_db(transaction=True)

WHY = "Doing what you asked for."
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}
# What a streamable HTTP client sends with every POST.
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
async def mcp_endpoint():
    yield mcp_transport.http_endpoint
    await mcp_transport.http_endpoint.close()


def _http(headers=None) -> httpx2.AsyncClient:
    from haico_site.asgi import application

    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), headers=headers or {}, base_url="http://localhost")


def _client(secret: str | None, headers=None) -> Client:
    auth = {"Authorization": f"Bearer {secret}"} if secret else {}
    return Client(streamable_http_client("http://localhost/mcp", http_client=_http({**auth, **(headers or {})})))


def _mcp_error(raised: BaseException) -> MCPError:
    """The JSON-RPC error the SDK client raised (inside its task groups' exception groups)."""
    while isinstance(raised, BaseExceptionGroup):
        assert len(raised.exceptions) == 1, raised.exceptions
        raised = raised.exceptions[0]
    assert isinstance(raised, MCPError), repr(raised)
    return raised


async def _token(owner, name="laptop"):
    return await sync_to_async(token_create)(user=owner, name=name)


# -- the transport's edges --


async def test_a_foreign_origin_is_refused_before_the_token_is_looked_at(thread, owner, mcp_endpoint, settings):
    _token_row, secret = await _token(owner)
    auth = {"Authorization": f"Bearer {secret}", **ACCEPT}
    async with _http() as http:
        for origin in ("http://evil.example", "http://localhost:9999", "https://localhost", "null"):
            response = await http.post("/mcp", json=TOOLS_LIST, headers={**auth, "Origin": origin})
            assert response.status_code == 403, origin
            error = response.json()
            assert error["jsonrpc"] == "2.0" and error["id"] is None
            assert "not accepted here" in error["error"]["message"]
            assert "access-control-allow-origin" not in response.headers
        # This site's own origin and a trusted one are accepted; no Origin (a desktop client) too.
        settings.CSRF_TRUSTED_ORIGINS = ["https://tools.example.com"]
        for origin in ("http://localhost", "https://tools.example.com", None):
            headers = {**auth, **({"Origin": origin} if origin else {})}
            response = await http.post("/mcp", json=INITIALIZE, headers=headers)
            assert response.status_code == 200, (origin, response.text)
            assert response.json()["result"]["serverInfo"]["name"] == "haico"
            assert response.headers.get("access-control-allow-origin") == origin


async def test_the_sdk_client_from_a_foreign_origin_reports_the_refusal(thread, owner, mcp_endpoint):
    _token_row, secret = await _token(owner)
    with pytest.raises(BaseException) as refused:
        async with _client(secret, {"Origin": "http://evil.example"}) as client:
            await client.list_tools()
    assert "Requests from the web page at http://evil.example are not accepted here" in str(_mcp_error(refused.value))


async def test_a_browsers_preflight_is_answered_for_accepted_origins_only(mcp_endpoint, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.com"]
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version",
    }
    async with _http() as http:
        allowed = await http.request("OPTIONS", "/mcp", headers={**preflight, "Origin": "https://app.example.com"})
        assert allowed.status_code == 204
        assert allowed.headers["access-control-allow-origin"] == "https://app.example.com"
        assert "POST" in allowed.headers["access-control-allow-methods"]
        for header in ("authorization", "content-type", "mcp-protocol-version"):
            assert header in allowed.headers["access-control-allow-headers"]
        assert "access-control-allow-credentials" not in allowed.headers  # a bearer header, never cookies
        refused = await http.request("OPTIONS", "/mcp", headers={**preflight, "Origin": "https://example.org"})
        assert refused.status_code == 403
        assert "access-control-allow-origin" not in refused.headers


async def test_get_and_delete_are_405_with_allow_and_never_hold_a_stream(thread, owner, mcp_endpoint):
    _token_row, secret = await _token(owner)
    async with _http({"Authorization": f"Bearer {secret}"}) as http:
        for method in ("GET", "DELETE", "PUT"):
            response = await http.request(method, "/mcp", headers={"Accept": "text/event-stream"}, timeout=5)
            assert response.status_code == 405, method
            assert response.headers["allow"] == "POST, OPTIONS"
            assert response.json()["error"]["message"].startswith(f"{method} is not supported at /mcp")


async def test_a_401_says_why_and_where_the_metadata_is(thread, owner, mcp_endpoint):
    token, secret = await _token(owner)
    await sync_to_async(token_revoke)(user=owner, token_id=token.pk)
    async with _http() as http:
        for headers, reason in (
            ({}, "send Authorization: Bearer <token>"),
            ({"Authorization": f"Bearer {secret}"}, "unknown or revoked"),
            ({"Authorization": "Basic dXNlcjpwYXNz"}, "send Authorization: Bearer <token>"),
        ):
            response = await http.post("/mcp", json=TOOLS_LIST, headers={**headers, **ACCEPT})
            assert response.status_code == 401
            challenge = response.headers["www-authenticate"]
            assert challenge.startswith('Bearer error="invalid_token", error_description="')
            assert reason in challenge
            assert 'resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"' in challenge
            assert reason in response.json()["error"]["message"]

        metadata = await http.get("/.well-known/oauth-protected-resource/mcp")
        assert metadata.status_code == 200
        assert metadata.json() == {
            "resource": "http://localhost/mcp",
            "bearer_methods_supported": ["header"],
            "resource_name": "HAICO",
            "resource_documentation": "http://localhost/accounts/tokens/",
        }
        assert "authorization_servers" not in metadata.json()  # personal access tokens: no OAuth flow to run
        assert metadata.headers["access-control-allow-origin"] == "*"
        root = await http.get("/.well-known/oauth-protected-resource")
        assert root.json() == metadata.json()
        # The resource is the address the client used.
        other_host = await http.get("/.well-known/oauth-protected-resource", headers={"Host": "127.0.0.1:8000"})
        assert other_host.json()["resource"] == "http://127.0.0.1:8000/mcp"


async def test_the_sdk_client_reports_the_servers_message_for_a_revoked_token(thread, owner, mcp_endpoint):
    token, secret = await _token(owner)
    await sync_to_async(token_revoke)(user=owner, token_id=token.pk)
    with pytest.raises(BaseException) as refused:
        async with _client(secret) as client:
            await client.list_tools()
    assert "this one is unknown or revoked" in str(_mcp_error(refused.value))


async def test_a_tool_call_the_database_went_away_under_is_told_so_and_logged_as_the_outage(
    thread, owner, mcp_endpoint, monkeypatch, caplog
):
    """The token was checked, then PostgreSQL went away before the tool's
    own reads: the client gets the sentence, not the SDK's "Internal server
    error", and the log a line of the outage, not a traceback."""
    _token_row, secret = await _token(owner)
    no_outage_on_record(monkeypatch)

    def database_gone(*args):
        try:
            raise psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly")
        except psycopg.OperationalError as cause:
            raise OperationalError(str(cause)) from cause

    monkeypatch.setattr(mcp_transport, "call_tool", database_gone)
    async with _client(secret) as client:
        result = await client.call_tool("list_threads", {})
    assert result.is_error is True
    assert [content.text for content in result.content] == [mcp_transport.DATABASE_DOWN]
    outage = [record for record in caplog.records if record.name == "haico.conversations.mcp"]
    assert [(record.levelname, record.exc_info) for record in outage] == [("WARNING", None)]
    assert outage[0].getMessage().startswith("the database is unreachable (consuming input failed")
    assert outage[0].getMessage().endswith("could not run the MCP tool list_threads; failures are counted until it answers again")


# -- the tools as a client sees them --


async def test_annotations_reach_the_sdk_client(thread, owner, mcp_endpoint):
    _token_row, secret = await _token(owner)
    async with _client(secret) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    reads = {"list_threads", "get_workspace", "read_document", "list_todos", "list_preferences", "list_artifacts", "get_artifact"}
    for name in reads:
        assert tools[name].annotations.read_only_hint is True, name
    destructive = {
        "update_document",
        "replace_in_document",
        "set_objective",
        "toggle_todos",
        "update_todos",
        "remove_todos",
        "update_preferences",
        "remove_preferences",
    }
    only_adding = {"append_to_document", "insert_in_document", "add_todos", "add_preferences", "chart_generator", "data_table"}
    assert set(tools) == reads | destructive | only_adding
    for name in destructive | only_adding:
        hints = tools[name].annotations
        assert hints.read_only_hint is False and hints.open_world_hint is False, name
        assert hints.destructive_hint is (name in destructive), name
    idempotent = {name for name in tools if tools[name].annotations.idempotent_hint}
    assert idempotent == {"update_document", "set_objective", "update_todos", "add_preferences", "update_preferences"}
    removal = tools["update_document"].input_schema["properties"][REMOVAL_FIELD]
    assert removal["type"] == "boolean" and "your user confirmed it" in removal["description"]
    assert REMOVAL_FIELD not in tools["update_document"].input_schema["required"]


def test_base_version_as_text_is_told_to_be_a_whole_number(thread, owner):
    token = token_create(user=owner, name="laptop")[0]
    document_save(thread=thread, title="Notes", content="Intro.\n")
    for value, shown in (("5", '"5"'), (1.5, "1.5"), (True, "true"), (-1, "-1"), (None, "null")):
        result = call_tool(
            token,
            "update_document",
            {
                THREAD_FIELD: str(thread.pk),
                BASE_FIELD: value,
                "action_and_reasoning": WHY,
                "content": "New.\n",
            },
        )
        message = json.loads(result.text)["error"]
        assert result.is_error and "base_version must be a whole number" in message, value
        assert f"got {shown}" in message and "is required" not in message
    assert document_for(thread=thread).content == "Intro.\n"


# -- removing most of the document needs the client's confirmation --

LONG = "".join(f"Paragraph {n}: the field notes of the survey, as the person wrote them.\n\n" for n in range(12))


def test_emptying_or_removing_most_of_the_document_needs_allow_removal(thread, owner):
    token = token_create(user=owner, name="laptop")[0]
    document_save(thread=thread, title="Notes", content=LONG)
    base = document_for(thread=thread).version
    call = {THREAD_FIELD: str(thread.pk), BASE_FIELD: base, "action_and_reasoning": WHY}
    short = LONG[: len(LONG) // 3]
    attempts = [
        ("update_document", {"content": ""}, "this call would empty the document"),
        ("update_document", {"content": "  \n"}, "would empty the document"),
        ("update_document", {"content": short}, "would remove 6"),  # two thirds of it
        ("replace_in_document", {"old_text": LONG, "new_text": ""}, "would empty the document"),
        ("update_document", {"content": "", REMOVAL_FIELD: "yes"}, "allow_removal must be true or false"),
    ]
    for name, arguments, message in attempts:
        result = call_tool(token, name, {**call, **arguments})
        assert result.is_error and message in json.loads(result.text)["error"], (name, arguments, result.text)
    assert document_for(thread=thread).content == LONG
    assert not ActivityLogEntry.objects.exists()

    # A small edit needs nothing; a short document may be rewritten freely, not emptied.
    small = call_tool(token, "update_document", {**call, "content": LONG.replace("survey", "census", 1)})
    assert not small.is_error

    confirmed = call_tool(
        token,
        "update_document",
        {
            **call,
            BASE_FIELD: document_for(thread=thread).version,
            "content": "",
            REMOVAL_FIELD: True,
        },
    )
    assert not confirmed.is_error
    assert document_for(thread=thread).content == ""
    entry = ActivityLogEntry.objects.filter(level=ActivityLogEntry.Level.WARNING).get()
    before = document_for(thread=thread).version - 1
    assert entry.message == (
        f"Through MCP (token “laptop”): Emptied the document ({len(LONG):,} characters), confirmed by the client; "
        f"version {before} in the document's history keeps the text before. {WHY} (done)"
    )
    assert DocumentRevision.objects.get(document__thread=thread, version=before).content.startswith("Paragraph 0")


def test_a_short_document_may_be_rewritten_but_not_emptied_without_the_flag(thread, owner):
    token = token_create(user=owner, name="laptop")[0]
    document_save(thread=thread, title="Notes", content="A short draft.\n")
    call = {THREAD_FIELD: str(thread.pk), BASE_FIELD: 1, "action_and_reasoning": WHY}
    assert not call_tool(token, "update_document", {**call, "content": "Another draft.\n"}).is_error
    emptied = call_tool(token, "update_document", {**call, BASE_FIELD: 2, "content": ""})
    assert emptied.is_error and "would empty the document" in emptied.text


# -- whose edit it is --


async def test_mcp_edits_are_the_persons_through_their_token_everywhere(thread, owner, owner_client, mcp_endpoint):
    _token_row, secret = await _token(owner, "laptop")
    await sync_to_async(document_save)(thread=thread, title="Notes", content="Intro.\n", author="person")
    async with _client(secret) as client:
        for name, arguments in (
            ("update_document", {BASE_FIELD: 1, "content": "Intro, by the laptop.\n"}),
            ("append_to_document", {"text": "Appended.\n"}),
            ("set_objective", {"text": "Write the field guide"}),
        ):
            result = await client.call_tool(name, {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, **arguments})
            assert not result.is_error, result.content[0].text

    def check():
        revisions = list(
            DocumentRevision.objects.filter(document__thread=thread).order_by("version").values_list("author", "token_name")
        )
        assert revisions == [("person", ""), ("mcp", "laptop"), ("mcp", "laptop")]
        assert list(ObjectiveRevision.objects.filter(thread=thread).values_list("author", "token_name")) == [("mcp", "laptop")]
        # History says who; no agent turn is named, and the review of agent turns has nothing.
        history = document_history(thread=thread)
        assert [v.author_label for v in history.versions][:2] == ["owner, through MCP (token “laptop”)"] * 2
        assert all(v.turn_index is None for v in history.versions)
        assert document_review(thread=thread) is None
        assert objective_history(thread=thread)[0].token_name == "laptop"

        page = owner_client.get(reverse("workspace:document-history", kwargs={"thread_id": thread.pk}))
        html = page.content.decode()
        assert html.count('doc-history-who">owner, through MCP (token “laptop”)<') == 2
        assert "Version 2 by owner, through MCP (token “laptop”); version 3 by owner, through MCP" in html
        assert "Agent" not in page.content.decode()
        objective = owner_client.get(reverse("workspace:objective-history", kwargs={"thread_id": thread.pk}))
        assert "Set by owner through MCP (token “laptop”) before the first turn" in objective.content.decode()
        assert "Set by the agent" not in objective.content.decode()
        workspace = owner_client.get(reverse("thread-page", kwargs={"thread_id": thread.pk})).content.decode()
        assert "The agent’s changes in turn" not in workspace

        # The archive carries it, and an import keeps it.
        archive = json.loads(archive_bytes(thread))
        assert [(r["author"], r["token"]) for r in archive["workspace"]["document"]["revisions"]] == revisions
        assert [(r["author"], r["token"]) for r in archive["workspace"]["objective_history"]] == [("mcp", "laptop")]
        copy = import_archive(raw=archive_bytes(thread), owner=owner)
        assert (
            list(DocumentRevision.objects.filter(document__thread=copy).order_by("version").values_list("author", "token_name"))
            == revisions
        )
        assert document_history(thread=copy).versions[0].author_label == "owner, through MCP (token “laptop”)"

    await sync_to_async(check)()


def test_an_archive_without_token_names_imports_and_a_bad_one_is_refused(thread, owner):
    from workspace.archive import ArchiveRefused

    document_save(thread=thread, title="Notes", content="Intro.\n", author="person")
    archive = json.loads(archive_bytes(thread))
    del archive["workspace"]["document"]["revisions"][0]["token"]  # an archive from before token names were kept
    copy = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    assert DocumentRevision.objects.get(document__thread=copy).token_name == ""
    archive["workspace"]["document"]["revisions"][0]["token"] = "x" * 101
    with pytest.raises(ArchiveRefused, match=r"workspace\.document\.revisions\[0\]\.token: 101 characters"):
        import_archive(raw=json.dumps(archive).encode(), owner=owner)
