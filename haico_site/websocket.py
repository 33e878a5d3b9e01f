"""What stands in front of the WebSocket consumers (haico_site.asgi).

`CsrfOriginValidator`: a socket opens only from an origin Django's CSRF
check would accept for a form post to the same address, i.e. the request's
own scheme, host and port (ws is http, wss is https, and SECURE_PROXY_SSL_HEADER
counts as it does for HTTP), or one listed in CSRF_TRUSTED_ORIGINS,
"https://*.example.com" wildcards included. channels' AllowedHostsOriginValidator
compared host names only, so `http://127.0.0.1:9999` could open a socket to
a server on port 8000. A handshake with no Origin header is refused, as it
was (browsers always send one; only other clients leave it out).

`unrouted`: a path no socket route matches is refused at the handshake with
one info line; channels' URLRouter raises instead, and the server logged a
traceback for every attempt.

`ClosedForOutage`: a handshake whose session cannot be read (the database
away: a restart, a failover) ends as a consumer's outage does
(conversations.consumers.PageSocketConsumer, docs/adr/0103): a line of the
outage, the socket closed for the page to reconnect. The session is read
before any consumer runs, and each page's reconnect logged a traceback.
"""

import io
import logging
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http.request import is_same_domain

from conversations import outages

logger = logging.getLogger("haico.websocket")


def handshake_request(scope) -> ASGIRequest:
    """The handshake as the HTTP request Django would see at that address, so
    host and scheme follow Django's own rules (ALLOWED_HOSTS, the proxy headers)."""
    scheme = "https" if scope.get("scheme") == "wss" else "http"
    return ASGIRequest({**scope, "type": "http", "method": "GET", "scheme": scheme}, io.BytesIO())


def origin_allowed(request, origin: str) -> bool:
    """Django's CSRF origin rule (CsrfViewMiddleware's Origin check), spelled out:
    the request's own origin, a trusted origin, or a trusted wildcard's subdomain."""
    try:
        own_host = request.get_host()
    except DisallowedHost:
        pass
    else:
        if origin == f"{'https' if request.is_secure() else 'http'}://{own_host}":
            return True
    trusted = settings.CSRF_TRUSTED_ORIGINS
    if origin in (entry for entry in trusted if "*" not in entry):
        return True
    try:
        parsed = urlsplit(origin)
    except ValueError:
        return False
    return any(
        is_same_domain(parsed.netloc, wildcard.netloc.lstrip("*"))
        for wildcard in (urlsplit(entry) for entry in trusted if "*" in entry)
        if wildcard.scheme == parsed.scheme
    )


async def _refuse_handshake(receive, send) -> None:
    # A close before the accept: the server answers the handshake with 403.
    message = await receive()
    if message["type"] == "websocket.connect":
        await send({"type": "websocket.close"})


class CsrfOriginValidator:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        request = handshake_request(scope)
        origin = request.META.get("HTTP_ORIGIN")
        if origin is not None and origin_allowed(request, origin):
            return await self.application(scope, receive, send)
        logger.warning("WebSocket to %s refused: origin %r is not this site's", scope.get("path"), origin)
        await _refuse_handshake(receive, send)


async def unrouted(scope, receive, send):
    logger.info("WebSocket to %s refused: no such route", scope.get("path"))
    await _refuse_handshake(receive, send)


class ClosedForOutage:
    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        try:
            await self.application(scope, receive, send)
        except Exception as error:
            if outages.unreachable_service(error) is None:
                raise
            outages.note(logger, error, "a page's socket at %s could not be opened", scope.get("path"))
            raise outages.SocketClosedForOutage(str(error)) from error
