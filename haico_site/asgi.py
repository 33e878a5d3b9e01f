import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "haico_site.settings")
# Django must be set up before the routing imports the consumers (and models).
django.setup(set_prefix=False)

from .http_handler import OneHopASGIHandler  # noqa: E402

# What django.core.asgi.get_asgi_application gives, with the middleware and
# the view in one hop to a thread (haico_site.http_handler).
django_asgi_app = OneHopASGIHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from conversations.live import publisher  # noqa: E402
from conversations.mcp_transport import MCP_PATHS, http_endpoint  # noqa: E402
from conversations.routing import websocket_urlpatterns  # noqa: E402
from conversations.turns import registry  # noqa: E402

from .garbage_collection import tune_for_serving  # noqa: E402
from .mcp_origin import McpOriginGuard  # noqa: E402
from .websocket import ClosedForOutage, CsrfOriginValidator, unrouted  # noqa: E402

# Origins as strict as the socket's, browsers' preflights answered (haico_site.mcp_origin).
mcp_application = McpOriginGuard(http_endpoint)


async def http_application(scope, receive, send):
    # Changes that HTTP requests commit are pushed from this loop (conversations.live).
    publisher.attach()
    # The first request of a server started without haico_site.serve (say
    # runserver) releases what a killed predecessor left running; once per loop.
    registry.warm_up()
    if scope["path"] in MCP_PATHS:
        # The MCP server (bearer tokens, not sessions: docs/adr/0026, 0052).
        await mcp_application(scope, receive, send)
        return
    await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http_application,
        # Origins as strict as Django's CSRF check; any other path is refused quietly (haico_site.websocket).
        # A session the database cannot read now closes the socket for its page to reconnect (haico_site.websocket).
        "websocket": CsrfOriginValidator(
            ClosedForOutage(AuthMiddlewareStack(URLRouter([*websocket_urlpatterns, re_path(r"", unrouted)])))
        ),
    }
)

# Everything loaded so far lives as long as the process: out of the garbage
# collector's passes from here, which also run less often (docs/adr/0166).
tune_for_serving()
