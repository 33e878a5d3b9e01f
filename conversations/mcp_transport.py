"""The MCP server's two transports over the official `mcp` SDK (docs/adr/0026):
streamable HTTP at /mcp inside the ASGI app (haico_site.asgi), and stdio
for desktop agents (the `mcp_stdio` management command). The tools and what
they do are conversations.mcp_server's.

HTTP: every request carries `Authorization: Bearer <token>`; a missing,
unknown, revoked or expired token (or one whose account waits for approval)
is answered 401 before the SDK sees the request, with a message saying
which, `WWW-Authenticate: Bearer error="invalid_token"` and where the
protected-resource metadata is (RFC 9728, conversations.mcp_metadata), and
counted: past HAICO_RATE_MCP_AUTH_FAILURES from one address, 429.
The Host header must be one Django allows (ALLOWED_HOSTS), as for every
other request; the Origin header is checked in front of this app
(haico_site.mcp_origin). Only POST carries messages: the session manager
runs stateless with JSON answers (no session survives a request, so any
server process can answer any request), so it could never send anything on
a GET's stream; GET and DELETE are answered 405, as the transport allows.
Daphne sends no ASGI lifespan events, so the manager is started on the
first request, once per event loop.

A body over the site's DATA_UPLOAD_MAX_MEMORY_SIZE is answered 413, as
every other request is (haico_site.middleware), before the SDK reads it
(it would read any size whole): by its Content-Length when it gives one,
else counted as it is read; a body within the limit is then handed on.

Every refusal's body is a JSON-RPC error (id null): MCP clients show its
message, where they would show only a status for a body of another shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import math

import mcp_types as types
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http.request import split_domain_port, validate_host
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError

from . import outages, ratelimit
from .mcp_metadata import resource_metadata_url
from .mcp_server import SERVER_INSTRUCTIONS, call_tool, mcp_tools
from .models import AccessToken
from .tokens import REQUIRED, TokenRefused, token_check

logger = logging.getLogger("haico.conversations.mcp")

MCP_PATHS = ("/mcp", "/mcp/")
# Requests with a missing or wrong token, per address (HAICO_RATE_MCP_AUTH_FAILURES, docs/adr/0051).
MCP_AUTH_FAILURES = "mcp-auth-failures"
TOKEN_SCOPE_KEY = "haico.mcp_token"
# The methods /mcp answers; OPTIONS for a browser's preflight (haico_site.mcp_origin).
ALLOWED_METHODS = "POST, OPTIONS"
# While PostgreSQL cannot be reached (a restart, a failover: conversations.outages),
# as the site's pages say it (docs/adr/0105).
DATABASE_DOWN = "The server cannot reach its database just now; nothing was done. Try again in a minute."
DATABASE_RETRY_AFTER_SECONDS = 30


# Why a request is refused, for the client's person: no bearer token at
# all, or one that is no (longer a) token; an expired token or an account
# waiting for approval gets its own reason (conversations.tokens).
NO_TOKEN = "A valid access token is required: send Authorization: Bearer <token> (make one at /accounts/tokens/)."
UNKNOWN_TOKEN = (
    "A valid access token is required: this one is unknown or revoked, or its account is inactive "
    "(make a new one at /accounts/tokens/)."
)


# The JSON-RPC error a stdio request gets once its token no longer acts
# (the HTTP transport's 401); -32000..-32099 are the server's own codes.
TOKEN_REFUSED_CODE = -32001
TOKEN_REFUSED = (
    "This access token has been revoked, or its person can no longer sign in; nothing was done. "
    "Make a new token at /accounts/tokens/."
)


async def _token_of(ctx) -> AccessToken:
    """The token this request acts as, checked for this request: over HTTP
    by HttpEndpoint before the SDK saw it; over stdio here, so a session
    started with a token stops acting the moment it is revoked or its
    person deactivated, as the HTTP transport does."""
    request = getattr(ctx, "request", None)
    if request is not None:
        return request.scope[TOKEN_SCOPE_KEY]
    try:
        return await database_sync_to_async(token_check, thread_sensitive=False)(_stdio_secret)
    except TokenRefused as exc:
        # Revoked or deactivated since the session started: say so, not "a token is required".
        raise MCPError(TOKEN_REFUSED_CODE, TOKEN_REFUSED if exc.message == REQUIRED else exc.message) from None


async def _list_tools(ctx, params) -> types.ListToolsResult:
    await _token_of(ctx)
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema,
                annotations=types.ToolAnnotations.model_validate(t.annotations),
            )
            for t in mcp_tools()
        ]
    )


async def _call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    token = await _token_of(ctx)
    try:
        # database_sync_to_async: a connection the database closed meanwhile is
        # replaced, not used (docs/adr/0044).
        result = await database_sync_to_async(call_tool, thread_sensitive=False)(token, params.name, params.arguments or {})
    except Exception as error:
        if outages.unreachable_service(error) != outages.DATABASE:
            raise
        # Said to the client as it is (the SDK would say "Internal server error"), a line of the outage's in the log.
        outages.note(logger, error, "could not run the MCP tool %s", params.name)
        return types.CallToolResult(content=[types.TextContent(text=DATABASE_DOWN)], is_error=True)
    return types.CallToolResult(content=[types.TextContent(text=result.text)], is_error=result.is_error)


def build_server() -> Server:
    return Server("haico", version="1", instructions=SERVER_INSTRUCTIONS, on_list_tools=_list_tools, on_call_tool=_call_tool)


# -- streamable HTTP --


def _allowed_host(scope) -> bool:
    host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # what Django itself allows then
    return bool(domain) and validate_host(domain, allowed)


def refusal_body(message: str, code: int = types.INVALID_REQUEST) -> bytes:
    """A JSON-RPC error answering a request that was not read (id null)."""
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()


async def answer(send, status: int, message: str, headers: tuple = (), *, code: int = types.INVALID_REQUEST) -> None:
    body = refusal_body(message, code)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _challenge(scope, message: str) -> bytes:
    """RFC 6750's challenge with the reason, and RFC 9728's pointer to the
    protected-resource metadata, which is where clients look next."""
    metadata = resource_metadata_url(ASGIRequest(scope, io.BytesIO()))
    return f'Bearer error="invalid_token", error_description="{message}", resource_metadata="{metadata}"'.encode("latin-1")


def too_big_message() -> str:
    limit_mb = settings.DATA_UPLOAD_MAX_MEMORY_SIZE / (1024 * 1024)
    return f"That was too much to send at once (the limit is {limit_mb:.1f} MB); nothing was done."


def _declared_length(scope) -> int | None:
    value = next((v for k, v in scope.get("headers", []) if k == b"content-length"), None)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class _TooBig(Exception):
    pass


async def _body_within(receive, limit: int) -> bytes | None:
    """The request's body, read to its end unless it passes `limit` bytes
    (_TooBig); None when the client went away first."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        if message["type"] != "http.request":
            continue
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooBig
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive):
    """A `receive` that gives the body already read, then the client's own
    messages (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay():
        return pending.pop() if pending else await receive()

    return replay


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
            await answer(send, 400, "This host is not allowed.")
            return
        method = scope.get("method", "")
        if method == "OPTIONS":  # without an Origin (a browser's preflight is answered in front)
            await send({"type": "http.response.start", "status": 204, "headers": [(b"allow", ALLOWED_METHODS.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        if method != "POST":
            await answer(
                send,
                405,
                f"{method} is not supported at /mcp: send each message as a POST (this server keeps no sessions "
                "and sends nothing on its own, so it has no stream to open).",
                ((b"allow", ALLOWED_METHODS.encode()),),
            )
            return
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None:
            declared = _declared_length(scope)
            if declared is not None and declared > limit:
                await answer(send, 413, too_big_message())
                return
            try:
                body = await _body_within(receive, limit)
            except _TooBig:
                await answer(send, 413, too_big_message())
                return
            if body is None:  # the client went away: no one to answer
                return
            receive = _replaying(body, receive)
        address = ratelimit.address_of(scope)
        rate = ratelimit.rate_setting("HAICO_RATE_MCP_AUTH_FAILURES")
        wait = await sync_to_async(ratelimit.over, thread_sensitive=False)(MCP_AUTH_FAILURES, address, rate)
        if wait is not None:
            await answer(
                send,
                429,
                f"Too many requests with a missing or wrong access token from your address; try again "
                f"in {ratelimit.duration_text(wait)}.",
                ((b"retry-after", str(max(1, math.ceil(wait))).encode()),),
            )
            return
        secret = _bearer(scope)
        try:
            if not secret:
                raise TokenRefused(NO_TOKEN)
            token = await database_sync_to_async(token_check, thread_sensitive=False)(secret)
        except TokenRefused as exc:
            await sync_to_async(ratelimit.hit, thread_sensitive=False)(MCP_AUTH_FAILURES, address, rate)
            message = UNKNOWN_TOKEN if exc.message == REQUIRED else exc.message
            await answer(send, 401, message, ((b"www-authenticate", _challenge(scope, message)),))
            return
        except Exception as error:
            if outages.unreachable_service(error) != outages.DATABASE:
                raise
            outages.note(logger, error, "could not check an MCP request's token")
            retry_after = ((b"retry-after", str(DATABASE_RETRY_AFTER_SECONDS).encode()),)
            # The server's fault, not the request's: JSON-RPC's internal error.
            await answer(send, 503, DATABASE_DOWN, retry_after, code=types.INTERNAL_ERROR)
            return
        manager = await self._running_manager()
        await manager.handle_request({**scope, TOKEN_SCOPE_KEY: token}, receive, send)


http_endpoint = HttpEndpoint()


# -- stdio --

_stdio_secret: str | None = None


async def serve_stdio(secret: str) -> None:
    """Serve one client over this process's stdin/stdout as the person of
    the token with this secret, checked again on every request."""
    from mcp.server.stdio import stdio_server

    global _stdio_secret
    _stdio_secret = secret
    server = build_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
