"""`manage.py mcp_stdio` as a desktop agent starts it: a subprocess driven
by the SDK's own stdio client, on this test's database. A running session
stops acting the moment its token is revoked or its person deactivated,
as the HTTP transport does (conversations.mcp_transport)."""

import os
import sys
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from conversations.mcp_server import THREAD_FIELD
from conversations.mcp_transport import TOKEN_REFUSED
from conversations.tokens import token_create, token_revoke
from workspace.models import Preference

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[4]


def _database_url() -> str:
    """This test's database, for the subprocess."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def _server(secret: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAICO_", "OPENAI_"))}
    env.update(DATABASE_URL=_database_url(), HAICO_TOKEN=secret, HAICO_LOG_LEVEL="WARNING", REDIS_URL="")
    return StdioServerParameters(command=sys.executable, args=["manage.py", "mcp_stdio"], env=env, cwd=ROOT)


def _add(thread, title: str) -> dict:
    return {
        THREAD_FIELD: str(thread.pk),
        "action_and_reasoning": "Recording a rule.",
        "items": [{"title": title, "kind": "soft"}],
    }


def _titles(thread):
    return sync_to_async(lambda: list(Preference.objects.filter(thread=thread).values_list("title", flat=True)))()


@pytest.mark.parametrize("stop", ["revoke the token", "deactivate the person"])
async def test_a_running_stdio_session_stops_acting_when_its_token_does(thread, owner, stop):
    token, secret = await sync_to_async(token_create)(user=owner, name="Desktop agent")
    async with Client(_server(secret), read_timeout_seconds=60) as client:
        assert not (await client.call_tool("add_preferences", _add(thread, "Before"))).is_error
        if stop == "revoke the token":
            await sync_to_async(token_revoke)(user=owner, token_id=token.pk)
        else:
            owner.is_active = False
            await sync_to_async(owner.save)(update_fields=["is_active"])
        with pytest.raises(MCPError) as refused:
            await client.call_tool("add_preferences", _add(thread, "After"))
        assert refused.value.message == TOKEN_REFUSED
        with pytest.raises(MCPError, match="revoked"):
            await client.list_tools()
    assert await _titles(thread) == ["Before"]
