"""The MCP server (conversations.mcp_server, conversations.mcp_transport):
the tool list is the in-app agent's, calls act only on the token owner's
threads through the same services and lock rules, every write is in the
activity log with the token's name, and the HTTP transport driven by the
SDK's own client. Runs on SQLite, and on PostgreSQL with DATABASE_URL set."""

import json
from datetime import timedelta

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agent.builder import AgentProvider
from agent.steps import REASON_MAX_CHARS
from conversations import mcp_transport
from conversations.mcp_server import BASE_FIELD, REMOVAL_FIELD, THREAD_FIELD, call_tool, is_read_tool, mcp_tools
from conversations.models import AccessToken, ActivityLogEntry
from conversations.tokens import token_create, token_revoke
from conversations.turns import registry
from tests.support.fake_model import Reply
from tests.support.openai_server import OpenAICompatibleServer
from tests.support.web import database_rows
from workspace.models import Preference
from workspace.selectors import document_for
from workspace.services import preferences as preference_services
from workspace.services.document import document_save

pytestmark = pytest.mark.django_db(transaction=True)

WHY = "Recording what you asked for."


def _envelope(result):
    return json.loads(result.text)


@pytest.fixture
def token(owner):
    return token_create(user=owner, name="Laptop editor")[0]


async def test_the_tool_list_is_what_the_in_app_model_is_sent(thread, settings, monkeypatch):
    """Names and argument schemas as the real ChatOpenAI puts them on the wire,
    plus the thread (and, for the tools that edit the document text, the base
    version; for the two that can remove most of it, the optional
    allow_removal) MCP adds."""
    with OpenAICompatibleServer(models=["scripted"]) as server:
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url, "test-key"
        settings.HAICO_MODEL, settings.HAICO_MODELS = "scripted", ["scripted"]
        monkeypatch.setattr(registry, "agents", AgentProvider())
        server.script([Reply(text="Hello.")])
        await registry.start_turn(thread=thread, user_message="hi")
        await registry.wait_for_turn(thread.pk)
        sent = {t["function"]["name"]: t["function"]["parameters"] for t in server.requests[0]["tools"]}

    listed = {t.name: t.input_schema for t in mcp_tools()}
    assert set(listed) == set(sent) | {"list_threads", "get_workspace"}
    for name, parameters in sent.items():
        schema = json.loads(json.dumps(listed[name]))
        edits_text = name in {"update_document", "replace_in_document", "insert_in_document"}
        added = [THREAD_FIELD, BASE_FIELD] if edits_text else [THREAD_FIELD]
        assert schema["required"][: len(added)] == added
        for field in added:
            schema["properties"].pop(field)
            schema["required"].remove(field)
        if name in {"update_document", "replace_in_document"}:
            assert schema["properties"].pop(REMOVAL_FIELD)["type"] == "boolean"
        assert schema == parameters, name


def test_a_preference_added_through_mcp_is_in_the_thread_and_the_activity_log(thread, token):
    result = call_tool(
        token,
        "add_preferences",
        {
            THREAD_FIELD: str(thread.pk),
            "action_and_reasoning": WHY,
            "items": [{"title": "British English", "kind": "hard"}],
        },
    )
    assert not result.is_error and _envelope(result)["success"]
    assert list(Preference.objects.filter(thread=thread).values_list("title", "kind")) == [("British English", "hard")]
    entry = ActivityLogEntry.objects.get(thread=thread)
    assert entry.message == f"Through MCP (token “Laptop editor”): {WHY} (done)"


def test_another_persons_thread_does_not_exist_for_the_token(thread, other_user):
    theirs = token_create(user=other_user, name="Theirs")[0]
    for name in ("get_workspace", "add_preferences"):
        result = call_tool(
            theirs,
            name,
            {
                THREAD_FIELD: str(thread.pk),
                "action_and_reasoning": WHY,
                "items": [{"title": "x", "kind": "soft"}],
            },
        )
        assert result.is_error and "No such thread among yours" in _envelope(result)["error"]
    assert not Preference.objects.filter(thread=thread).exists()
    listed = _envelope(call_tool(theirs, "list_threads", {}))
    assert listed == {"success": True, "threads": []}


def test_locked_preferences_stay_locked_through_mcp(thread, token):
    preference = preference_services.preference_add(thread=thread, title="Formal tone", kind="hard", respect_lock=False)
    preference_services.preference_set_locked(preference=preference, locked=True, respect_lock=False)
    result = call_tool(token, "remove_preferences", {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "indices": [1]})
    assert Preference.objects.filter(pk=preference.pk).exists()
    assert "locked" in result.text.lower()


def test_update_document_needs_the_version_read_and_merges_what_changed_since(thread, token):
    document_save(thread=thread, title="Notes", content="Intro.\n\nMiddle.\n\nEnd.\n")
    workspace = call_tool(token, "get_workspace", {THREAD_FIELD: str(thread.pk)}).text
    assert 'version="1"' in workspace and "Middle." in workspace
    # The person edits the end after the client read the document.
    document_save(thread=thread, content="Intro.\n\nMiddle.\n\nEnd, by the person.\n", base_version=1, author="person")

    refused = call_tool(
        token,
        "update_document",
        {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "content": "Intro, by MCP.\n\nMiddle.\n\nEnd.\n"},
    )
    assert refused.is_error and "base_version is required" in _envelope(refused)["error"]
    merged = call_tool(
        token,
        "update_document",
        {
            THREAD_FIELD: str(thread.pk),
            BASE_FIELD: 1,
            "action_and_reasoning": WHY,
            "content": "Intro, by MCP.\n\nMiddle.\n\nEnd.\n",
        },
    )
    assert not merged.is_error
    assert document_for(thread=thread).content == "Intro, by MCP.\n\nMiddle.\n\nEnd, by the person.\n"


def test_bad_calls_get_an_envelope_error_and_change_nothing(thread, token):
    cases = [
        ("no_such_tool", {THREAD_FIELD: str(thread.pk)}, "There is no tool named"),
        ("set_objective", {"text": "x", "action_and_reasoning": WHY}, "thread_id is required"),
        ("set_objective", {THREAD_FIELD: "not-a-uuid", "text": "x", "action_and_reasoning": WHY}, "No such thread"),
        ("set_objective", {THREAD_FIELD: str(thread.pk), "text": "x"}, "action_and_reasoning"),
        ("set_objective", {THREAD_FIELD: str(thread.pk), "text": 5, "action_and_reasoning": WHY}, "text"),
        ("set_objective", [1, 2], "must be a JSON object"),
    ]
    for name, arguments, message in cases:
        result = call_tool(token, name, arguments)
        assert result.is_error and message in _envelope(result)["error"], (name, arguments, result.text)
    assert not ActivityLogEntry.objects.exists()


@pytest.fixture
async def mcp_endpoint():
    yield mcp_transport.http_endpoint
    await mcp_transport.http_endpoint.close()


def _client(secret: str | None):
    from haico_site.asgi import application

    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    http = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), headers=headers, base_url="http://localhost")
    return Client(streamable_http_client("http://localhost/mcp", http_client=http))


async def test_the_sdk_client_lists_tools_and_adds_a_preference_over_http(thread, owner, mcp_endpoint):
    _token, secret = await sync_to_async(token_create)(user=owner, name="Desktop agent")
    async with _client(secret) as client:
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == {t.name for t in mcp_tools()}
        threads = json.loads((await client.call_tool("list_threads", {})).content[0].text)
        assert [t["id"] for t in threads["threads"]] == [str(thread.pk)]
        result = await client.call_tool(
            "add_preferences",
            {
                THREAD_FIELD: str(thread.pk),
                "action_and_reasoning": WHY,
                "items": [{"title": "Short answers", "kind": "soft"}],
            },
        )
        assert not result.is_error
    titles = await sync_to_async(lambda: list(Preference.objects.filter(thread=thread).values_list("title", flat=True)))()
    assert titles == ["Short answers"]


async def test_a_missing_or_revoked_token_is_refused_over_http(thread, owner, mcp_endpoint):
    token, secret = await sync_to_async(token_create)(user=owner, name="Old")
    await sync_to_async(token_revoke)(user=owner, token_id=token.pk)
    from haico_site.asgi import application

    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), base_url="http://localhost") as http:
        for headers in ({}, {"Authorization": f"Bearer {secret}"}, {"Authorization": "Bearer haico_guess"}):
            response = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
            assert response.status_code == 401
            assert "valid access token is required" in response.json()["error"]["message"]
            assert response.headers["www-authenticate"].startswith("Bearer")
        foreign = await http.post("/mcp", json={}, headers={"Host": "evil.example", "Authorization": f"Bearer {secret}"})
        assert foreign.status_code == 400


async def test_requests_with_wrong_tokens_from_one_address_are_limited(thread, owner, mcp_endpoint, settings):
    settings.HAICO_RATE_MCP_AUTH_FAILURES = "5/minute"
    _token, secret = await sync_to_async(token_create)(user=owner, name="Real one")
    from haico_site.asgi import application

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=application, client=("10.0.0.5", 1234)), base_url="http://localhost"
    ) as http:
        for n in range(5):
            wrong = await http.post("/mcp", json=body, headers={"Authorization": f"Bearer haico_guess{n}"})
            assert wrong.status_code == 401
        limited = await http.post("/mcp", json=body, headers={"Authorization": f"Bearer {secret}"})
        assert limited.status_code == 429
        assert limited.json()["error"]["message"].startswith("Too many requests with a missing or wrong access token")
        assert 0 < int(limited.headers["retry-after"]) <= 60
    # Another address, with its right token, is answered.
    async with _client(secret) as client:
        assert (await client.list_tools()).tools


# --- read-only tokens and expiry (docs/adr/0026) ---------------------------------------------


async def test_a_read_only_token_lists_and_reads_and_every_write_is_refused(thread, owner, mcp_endpoint):
    await sync_to_async(preference_services.preference_add)(thread=thread, title="Kept", kind="soft", respect_lock=False)
    _token, secret = await sync_to_async(token_create)(user=owner, name="Reader", read_only=True)
    before = await sync_to_async(database_rows)()
    async with _client(secret) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {t.name for t in mcp_tools()}
        threads = json.loads((await client.call_tool("list_threads", {})).content[0].text)
        assert [t["id"] for t in threads["threads"]] == [str(thread.pk)]
        workspace = await client.call_tool("get_workspace", {THREAD_FIELD: str(thread.pk)})
        assert not workspace.is_error and "Kept" in workspace.content[0].text
        for name in ("list_preferences", "list_todos", "list_artifacts"):
            read = await client.call_tool(name, {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY})
            assert not read.is_error, (name, read.content[0].text)
        writes = sorted(tools - {name for name in tools if is_read_tool(name)})
        assert {"add_preferences", "update_document", "set_objective", "remove_preferences"} <= set(writes)
        for name in writes:
            refused = await client.call_tool(
                name,
                {
                    THREAD_FIELD: str(thread.pk),
                    BASE_FIELD: 1,
                    "action_and_reasoning": WHY,
                    "text": "x",
                    "items": [{"title": "Sneaked in", "kind": "soft"}],
                    "content": "overwritten",
                    "indices": [1],
                },
            )
            assert refused.is_error, name
            assert _envelope(refused.content[0])["error"].startswith("This token is read-only"), name
    assert await sync_to_async(database_rows)() == {**before, **await sync_to_async(_token_rows)()}


def _token_rows():
    """The token's last-used time, and the rows it was listed (what its next
    indices name), are the things a read may write."""
    from django.apps import apps
    from django.db import connection

    rows = {}
    with connection.cursor() as cursor:
        for label in ("AccessToken", "ClientWorkspaceListing"):
            table = apps.get_model("conversations", label)._meta.db_table
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)} ORDER BY 1")
            rows[f"conversations.{label}"] = cursor.fetchall()
    return rows


async def test_an_expired_token_gets_401_saying_it_expired(thread, owner, mcp_endpoint):
    token, secret = await sync_to_async(token_create)(user=owner, name="Week", expires_in_days=7)
    async with _client(secret) as client:
        assert (await client.list_tools()).tools
    await sync_to_async(AccessToken.objects.filter(pk=token.pk).update)(expires_at=timezone.now() - timedelta(minutes=1))
    from haico_site.asgi import application

    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), base_url="http://localhost") as http:
        response = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"Authorization": f"Bearer {secret}"}
        )
    assert response.status_code == 401
    message = response.json()["error"]["message"]
    assert message.startswith("This access token expired on ") and "make a new one at /accounts/tokens/" in message
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_the_stdio_server_refuses_an_expired_token_saying_so(owner):
    from django.core.management import CommandError, call_command

    token, secret = token_create(user=owner, name="Week", expires_in_days=7)
    AccessToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    with pytest.raises(CommandError, match="This access token expired on"):
        call_command("mcp_stdio", token=secret)


def _long_document(thread, chars: int = 40_000) -> str:
    paragraphs = [f"Paragraph {n}: " + "the findings hold across every region we sampled. " * 3 for n in range(chars // 160 + 1)]
    content = "\n\n".join(paragraphs)[:chars] + "\n"
    document_save(thread=thread, title="Report", content=content)
    return content


def _rewrite(token, thread, content: str, base: int, **extra):
    arguments = {THREAD_FIELD: str(thread.pk), BASE_FIELD: base, "action_and_reasoning": WHY, "content": content}
    return call_tool(token, "update_document", {**arguments, **extra})


def test_a_rewrite_from_the_part_get_workspace_shows_is_refused_until_the_rest_is_read(thread, token):
    content = _long_document(thread)
    workspace = call_tool(token, "get_workspace", {THREAD_FIELD: str(thread.pk)}).text
    shown = content[:30_000]
    assert shown in workspace and content not in workspace
    # The client rewrites what it was shown: the last quarter would go.
    refused = _rewrite(token, thread, "A sharper opening.\n\n" + shown, base=1)
    assert refused.is_error and "you have not seen all of it" in _envelope(refused)["error"]
    assert document_for(thread=thread).content == content

    read = call_tool(token, "read_document", {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "start": 30_000})
    assert not read.is_error and "That is the end." in read.text
    kept = _rewrite(token, thread, "A sharper opening.\n\n" + content, base=1)
    assert not kept.is_error, kept.text
    assert document_for(thread=thread).content == "A sharper opening.\n\n" + content


def test_a_version_the_client_wrote_from_all_of_it_needs_no_second_read(thread, token):
    content = _long_document(thread)
    call_tool(token, "read_document", {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "start": 30_000})
    assert not _rewrite(token, thread, content + "\nA closing line.\n", base=1).is_error
    again = _rewrite(token, thread, "An opening line.\n\n" + content + "\nA closing line.\n", base=2)
    assert not again.is_error, again.text
    assert document_for(thread=thread).version == 3


def test_what_another_token_read_or_an_older_version_does_not_count(thread, token, owner):
    content = _long_document(thread)
    other = token_create(user=owner, name="Phone")[0]
    call_tool(other, "read_document", {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "start": 30_000})
    assert _rewrite(token, thread, content + "\nMore.\n", base=1).is_error
    # The person types on: what was read of version 1 is not all of version 2.
    call_tool(token, "read_document", {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "start": 30_000})
    document_save(thread=thread, content=content + "\nThe person's line.\n", base_version=1, author="person")
    refused = _rewrite(token, thread, content + "\nThe person's line.\nMore.\n", base=2)
    assert refused.is_error and "you have not seen all of it" in _envelope(refused)["error"]


def test_replace_and_read_by_code_points_in_a_long_document_of_text_as_people_write_it(thread, owner):
    from tests.support.unicode_text import PARAS, big_document

    token = token_create(user=owner, name="laptop")[0]
    text = big_document(150_000)
    version = document_save(thread=thread, title="Notes", content=text).document.version
    passage = "71. " + PARAS[71 % len(PARAS)]
    result = call_tool(
        token,
        "replace_in_document",
        {
            THREAD_FIELD: str(thread.pk),
            BASE_FIELD: version,
            "action_and_reasoning": WHY,
            "old_text": passage,
            "new_text": "71. 新 🇫🇷",
        },
    )
    assert not result.is_error, result.text
    new = text.replace(passage, "71. 新 🇫🇷")
    assert document_for(thread=thread).content == new
    at = new.index("71. 新 🇫🇷")
    result = call_tool(
        token, "read_document", {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "start": at, "length": 9}
    )
    assert not result.is_error and "71. 新 🇫🇷" in result.text, result.text[:300]


def test_an_insertion_after_half_a_character_is_refused_and_says_why(thread, owner):
    token = token_create(user=owner, name="laptop")[0]
    version = document_save(thread=thread, title="Notes", content="Merci 👍🏽 pour tout.\n").document.version
    result = call_tool(
        token,
        "insert_in_document",
        {
            THREAD_FIELD: str(thread.pk),
            BASE_FIELD: version,
            "action_and_reasoning": WHY,
            "after_text": "Merci 👍",
            "text": " encore",
        },
    )
    assert result.is_error and "inside a character" in result.text, result.text
    assert document_for(thread=thread).content == "Merci 👍🏽 pour tout.\n"


def test_a_sentence_longer_than_the_limit_is_refused_and_the_activity_log_stays_readable(thread, token):
    """A client that sends a 1 MB action_and_reasoning is told the limit; nothing is written, and the
    owner's activity log holds one short entry saying the call failed, not the megabyte."""
    result = call_tool(
        token,
        "add_preferences",
        {
            THREAD_FIELD: str(thread.pk),
            "action_and_reasoning": "Because " * 125_000,
            "items": [{"title": "Short", "kind": "soft"}],
        },
    )
    assert result.is_error
    error = _envelope(result)["error"]
    assert "action_and_reasoning" in error and f"{REASON_MAX_CHARS}" in error, error
    assert not Preference.objects.filter(thread=thread).exists()
    assert (
        max((len(m) for m in ActivityLogEntry.objects.filter(thread=thread).values_list("message", flat=True)), default=0) < 2_000
    )


def test_a_sentence_at_the_limit_is_taken_and_shown_whole_in_the_activity_log(thread, token):
    sentence = ("Adding the rule you asked for. " * 40)[:REASON_MAX_CHARS].strip()
    result = call_tool(
        token,
        "add_preferences",
        {THREAD_FIELD: str(thread.pk), "action_and_reasoning": sentence, "items": [{"title": "Short", "kind": "soft"}]},
    )
    assert not result.is_error, result.text
    assert sentence in ActivityLogEntry.objects.get(thread=thread).message


def test_the_sentences_limit_is_in_the_schema_a_client_is_shown():
    for tool in mcp_tools():
        reason = tool.input_schema["properties"].get("action_and_reasoning")
        if reason is not None:
            assert reason["maxLength"] == REASON_MAX_CHARS, tool.name


@pytest.mark.parametrize("tool", ["replace_in_document", "insert_in_document", "update_document"])
@pytest.mark.parametrize("base", [2, 2**70])
def test_a_base_version_the_document_never_had_is_refused_as_unknown(thread, token, tool, base):
    """A version above the document's (one it never had) is not written from as if it were the current
    text: the client is told the version is unknown, and the document is unchanged."""
    document_save(thread=thread, title="Notes", content="Intro.\n\nBody.\n")
    arguments = {
        "replace_in_document": {"old_text": "Body.", "new_text": "Changed."},
        "insert_in_document": {"after_text": "Body.", "text": " More."},
        "update_document": {"content": "Intro.\n\nChanged.\n"},
    }[tool]
    result = call_tool(token, tool, {THREAD_FIELD: str(thread.pk), BASE_FIELD: base, "action_and_reasoning": WHY, **arguments})
    assert result.is_error
    error = _envelope(result)["error"]
    assert f"version {base}" in error and "unknown" in error and "version 1" in error, error
    assert "the person edited" not in error
    assert document_for(thread=thread).content == "Intro.\n\nBody.\n"
    assert document_for(thread=thread).version == 1


def _set_objective_call(thread, padding: int) -> bytes:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "set_objective",
            "arguments": {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "text": "Padded", "padding": "x" * padding},
        },
    }
    return json.dumps(call).encode()


@pytest.mark.parametrize("chunked", [False, True], ids=["with-content-length", "chunked"])
async def test_a_post_over_the_sites_upload_limit_is_refused_413_before_it_is_read(
    thread, owner, mcp_endpoint, settings, chunked
):
    """As every other page answers a body past DATA_UPLOAD_MAX_MEMORY_SIZE; the objective is not set."""
    from haico_site.asgi import application

    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    _t, secret = await sync_to_async(token_create)(user=owner, name="desktop")
    body = _set_objective_call(thread, 3_000_000)

    async def in_parts():
        for at in range(0, len(body), 64_000):
            yield body[at : at + 64_000]

    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Mcp-Protocol-Version": "2025-06-18",
    }
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), base_url="http://localhost") as http:
        response = await http.post("/mcp", content=in_parts() if chunked else body, headers=headers)
        assert response.status_code == 413, (response.status_code, response.text[:300])
        assert "too much to send" in response.json()["error"]["message"]
        within = await http.post("/mcp", content=_set_objective_call(thread, 50_000), headers=headers)
        assert within.status_code == 200, within.text[:300]
    assert await sync_to_async(lambda: ActivityLogEntry.objects.filter(thread=thread).count())() == 1
