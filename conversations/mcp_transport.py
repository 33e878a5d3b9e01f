"""The MCP server's two transports over the official `mcp` SDK (docs/adr/0026):
streamable HTTP at /mcp inside the ASGI app (haico_site.asgi), and stdio
for desktop agents (the `mcp_stdio` management command). The tools and what
they do are conversations.mcp_server's.

HTTP: every request carries `Authorization: Bearer <token>`; a missing,
unknown or revoked token is answered 401 before the SDK sees the request,
and the Host header must be one Django allows (ALLOWED_HOSTS), as for every
other request. The SDK's session manager runs stateless with JSON answers
(no session survives a request, so any server process can answer any
request); daphne sends no ASGI lifespan events, so it is started on the
first request, once per event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import mcp_types as types
from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from .mcp_server import SERVER_INSTRUCTIONS, call_tool, mcp_tools
from .models import AccessToken
from .tokens import token_for_secret

logger = logging.getLogger("haico.conversations.mcp")

MCP_PATHS = ("/mcp", "/mcp/")
TOKEN_SCOPE_KEY = "haico.mcp_token"


def _token_of(ctx) -> AccessToken | None:
    request = getattr(ctx, "request", None)
    if request is not None:
        return request.scope.get(TOKEN_SCOPE_KEY)
    return _stdio_token


async def _list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in mcp_tools()]
    )


async def _call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    token = _token_of(ctx)
    if token is None:  # never: both transports authenticate first
        return types.CallToolResult(content=[types.TextContent(text="Not authenticated.")], is_error=True)
    # database_sync_to_async: a connection the database closed meanwhile is
    # replaced, not used (docs/adr/0044).
    result = await database_sync_to_async(call_tool, thread_sensitive=False)(token, params.name, params.arguments or {})
    return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.is_error)


def build_server() -> Server:
    return Server(
        "haico", version="1", instructions=SERVER_INSTRUCTIONS, on_list_tools=_list_tools, on_call_tool=_call_tool
    )


# -- streamable HTTP --


def _allowed_host(scope) -> bool:
    host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # what Django itself allows then
    return bool(domain) and validate_host(domain, allowed)


async def _answer(send, status: int, message: str, headers: tuple = ()) -> None:
    body = json.dumps({"error": message}).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
    })
    await send({"type": "http.response.body", "body": body})


def _bearer(scope) -> str | None:
    value = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"), "")
    scheme, _, secret = value.partition(" ")
    return secret.strip() if scheme.lower() == "bearer" and secret.strip() else None


class HttpEndpoint:
    """The ASGI app for /mcp."""

    def __init__(self):
        self._manager: StreamableHTTPSessionManager | None = None
        self._loop = None
        self._task = None
        self._lock: asyncio.Lock | None = None

    async def _running_manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        if self._manager is not None and self._loop is loop:
            return self._manager
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop, self._manager = asyncio.Lock(), loop, None
        async with self._lock:
            if self._manager is None:
                manager = StreamableHTTPSessionManager(app=build_server(), json_response=True, stateless=True)
                ready = asyncio.Event()

                async def run():
                    async with manager.run():
                        ready.set()
                        await asyncio.Event().wait()  # for as long as the process serves

                self._task = loop.create_task(run(), name="haico-mcp-session-manager")
                await ready.wait()
                self._manager = manager
        return self._manager

    async def close(self) -> None:
        """Stop the session manager (tests: each has its own event loop)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._manager = self._task = self._loop = self._lock = None

    async def __call__(self, scope, receive, send):
        if not _allowed_host(scope):
            await _answer(send, 400, "This host is not allowed.")
            return
        secret = _bearer(scope)
        token = await database_sync_to_async(token_for_secret, thread_sensitive=False)(secret) if secret else None
        if token is None:
            await _answer(
                send, 401, "A valid access token is required (Authorization: Bearer <token>; make one at /accounts/tokens/).",
                ((b"www-authenticate", b'Bearer realm="haico"'),),
            )
            return
        manager = await self._running_manager()
        await manager.handle_request({**scope, TOKEN_SCOPE_KEY: token}, receive, send)


http_endpoint = HttpEndpoint()


# -- stdio --

_stdio_token: AccessToken | None = None


async def serve_stdio(token: AccessToken) -> None:
    """Serve one client over this process's stdin/stdout as `token`'s person."""
    from mcp.server.stdio import stdio_server

    global _stdio_token
    _stdio_token = token
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
