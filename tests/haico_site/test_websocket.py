"""In front of the sockets (haico_site.websocket): a socket opens only from an
origin Django's CSRF check would accept, never without one, and a path with
no route is refused with one log line. Real sockets through the site's ASGI
application."""

import logging

import channels.auth
import psycopg
import pytest
from channels.testing import WebsocketCommunicator
from django.db import OperationalError
from django.middleware.csrf import CsrfViewMiddleware

from conversations import outages
from haico_site.websocket import handshake_request, origin_allowed
from tests.support.outage_state import no_outage_on_record

pytestmark = pytest.mark.django_db(transaction=True)

THREAD_PATH = "/ws/threads/00000000-0000-4000-8000-000000000000/"


async def _handshake(path, *, origin, host="127.0.0.1:8000", scheme="ws"):
    """Whether the socket opens, and the first frame or close code."""
    from haico_site.asgi import application

    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    communicator.scope["scheme"] = scheme
    connected, _ = await communicator.connect(timeout=5)
    await communicator.disconnect()
    return connected


@pytest.mark.parametrize(
    "origin, host, scheme",
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", "ws"),
        ("http://localhost:8000", "localhost:8000", "ws"),
        ("https://127.0.0.1", "127.0.0.1", "wss"),
    ],
)
async def test_a_socket_opens_from_the_pages_own_origin(origin, host, scheme):
    # Anonymous: the consumer accepts, then says "log in" (4401); the origin let it through.
    assert await _handshake(THREAD_PATH, origin=origin, host=host, scheme=scheme)


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:9999",  # another port of an allowed host
        "https://127.0.0.1:8000",  # https page, plain socket
        "http://localhost:8000",  # another allowed host than the one asked
        "http://evil.example",
        "null",
        "",
        "http://127.0.0.1:8000.evil.example",
        None,  # no Origin header at all
    ],
)
async def test_a_socket_from_any_other_origin_is_refused_at_the_handshake(origin, caplog):
    with caplog.at_level(logging.WARNING, logger="haico.websocket"):
        assert not await _handshake(THREAD_PATH, origin=origin)
    assert [r.levelname for r in caplog.records if r.name == "haico.websocket"] == ["WARNING"]


async def test_a_trusted_origin_and_its_wildcard_subdomains_open_sockets(settings):
    settings.ALLOWED_HOSTS = ["haico.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.org", "https://partner.example.net"]
    host = "haico.example.com"
    assert await _handshake(THREAD_PATH, origin="https://app.example.org", host=host, scheme="wss")
    assert await _handshake(THREAD_PATH, origin="https://partner.example.net", host=host, scheme="wss")
    assert not await _handshake(THREAD_PATH, origin="http://app.example.org", host=host, scheme="wss")
    assert not await _handshake(THREAD_PATH, origin="https://app.example.org:8443", host=host, scheme="wss")
    assert not await _handshake(THREAD_PATH, origin="https://other.example.net", host=host, scheme="wss")


async def test_behind_a_tls_proxy_the_https_page_opens_its_socket(settings):
    settings.ALLOWED_HOSTS = ["haico.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    from haico_site.asgi import application

    headers = [(b"host", b"haico.example.com"), (b"origin", b"https://haico.example.com"), (b"x-forwarded-proto", b"https")]
    communicator = WebsocketCommunicator(application, THREAD_PATH, headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    await communicator.disconnect()
    assert connected


def _scope(host, scheme, extra=()):
    return {"type": "websocket", "path": "/ws/", "scheme": scheme, "headers": [(b"host", host.encode()), *extra]}


@pytest.mark.parametrize(
    "trusted",
    [[], ["https://*.example.org"], ["http://partner.example.net:8080", "https://*.example.org:8443"]],
)
@pytest.mark.parametrize(
    "host, scheme",
    [("127.0.0.1:8000", "ws"), ("haico.example.org", "wss"), ("haico.example.org", "ws"), ("not-allowed.test", "ws")],
)
def test_the_origin_rule_is_exactly_djangos_csrf_origin_check(settings, trusted, host, scheme):
    settings.ALLOWED_HOSTS = ["127.0.0.1", "haico.example.org"]
    settings.CSRF_TRUSTED_ORIGINS = trusted
    origins = [
        "http://127.0.0.1:8000",
        "https://127.0.0.1:8000",
        "http://127.0.0.1:9999",
        "http://127.0.0.1",
        "https://haico.example.org",
        "http://haico.example.org",
        "https://a.example.org",
        "https://example.org",
        "https://a.example.org:8443",
        "http://partner.example.net:8080",
        "http://partner.example.net",
        "null",
        "",
        "http://[::1",
        "HTTP://127.0.0.1:8000",
    ]
    for origin in origins:
        request = handshake_request(_scope(host, scheme, [(b"origin", origin.encode())]))
        djangos = CsrfViewMiddleware(lambda r: None)._origin_verified(request)
        assert origin_allowed(request, origin) is djangos, origin


@pytest.mark.parametrize(
    "path", ["/ws/nowhere/", "/ws/threads/not-a-uuid/", "/", "/ws/threads/00000000-0000-4000-8000-000000000000/extra/"]
)
async def test_a_socket_to_a_path_with_no_route_is_refused_with_one_info_line(path, caplog):
    with caplog.at_level(logging.INFO):
        assert not await _handshake(path, origin="http://127.0.0.1:8000")
    assert [(r.name, r.levelname) for r in caplog.records if r.levelno >= logging.INFO] == [("haico.websocket", "INFO")]


async def test_a_handshake_whose_session_the_database_cannot_read_closes_for_the_page_to_reconnect(monkeypatch, caplog):
    """A database restarting under reconnecting pages: each handshake is a
    line of the outage, not a traceback, and ends as an outage does."""
    from haico_site.asgi import application

    def database_away(scope):
        try:
            raise psycopg.OperationalError("connection failed: Connection refused")
        except psycopg.OperationalError as cause:
            raise OperationalError(str(cause)) from cause

    monkeypatch.setattr(channels.auth, "get_user", database_away)
    no_outage_on_record(monkeypatch)
    caplog.set_level(logging.INFO)
    communicator = WebsocketCommunicator(
        application, THREAD_PATH, headers=[(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]
    )
    with pytest.raises(outages.SocketClosedForOutage):
        await communicator.connect(timeout=5)
    assert [r.getMessage() for r in caplog.records if "could not be opened" in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info]
