"""What stands in front of the MCP endpoint (haico_site.asgi; docs/adr/0052).

The streamable HTTP transport says a server MUST check the Origin header:
without it, a web page the person opens could reach an MCP server on their
machine or network through DNS rebinding. /mcp follows the socket's rule
(haico_site.websocket.origin_allowed, Django's CSRF origin check): a
request that carries an Origin is accepted only from this site's own
scheme, host and port or one in CSRF_TRUSTED_ORIGINS, and any other is
answered 403 before the token is even looked at. A request with no Origin
is not a browser's (browsers always send one on a POST) and goes on to the
token check: desktop and command-line clients send none.

Browser-based MCP clients served from an accepted origin are supported:
their CORS preflight is answered here (the methods and headers the
transport uses; no cookies are involved, so no credentials), and the
answers they get carry Access-Control-Allow-Origin for their origin and
expose the headers a client reads (WWW-Authenticate, Mcp-Session-Id). A
preflight from any other origin gets the same 403.
"""

import io
import logging

from django.core.handlers.asgi import ASGIRequest

from conversations.mcp_transport import ALLOWED_METHODS, answer

from .websocket import origin_allowed

logger = logging.getLogger("haico.mcp")

ALLOWED_HEADERS = b"authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id"
EXPOSED_HEADERS = b"www-authenticate, mcp-session-id, mcp-protocol-version"
PREFLIGHT_MAX_AGE = b"600"


def refusal(origin: str) -> str:
    return (
        f"Requests from the web page at {origin[:200]} are not accepted here: only this site's own pages and "
        "the origins in CSRF_TRUSTED_ORIGINS may call /mcp from a browser. Clients outside a browser send no Origin."
    )


class McpOriginGuard:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        request = ASGIRequest(scope, io.BytesIO())
        origin = request.META.get("HTTP_ORIGIN")
        if origin is None:
            await self.application(scope, receive, send)
            return
        if not origin_allowed(request, origin):
            logger.warning("MCP request refused: origin %r is not this site's", origin)
            await answer(send, 403, refusal(origin), ((b"vary", b"Origin"),))
            return
        cors = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]
        if scope.get("method") == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META:
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": [
                        *cors,
                        (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
                        (b"access-control-allow-headers", ALLOWED_HEADERS),
                        (b"access-control-max-age", PREFLIGHT_MAX_AGE),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_with_cors(message):
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"access-control-allow-origin"]
                message = {**message, "headers": [*headers, *cors, (b"access-control-expose-headers", EXPOSED_HEADERS)]}
            await send(message)

        await self.application(scope, receive, send_with_cors)
