"""Every WebSocket route of the ASGI application refuses other people's
threads (docs/adr/0072), enumerated from the application itself so a new route
is tested the day it is wired in (the HTTP routes: tests/haico_site/test_urls.py).

A page of another site cannot open one with the person's cookie (the origin
check of haico_site/asgi.py). Close codes are the consumer's (conversations/consumers.py): 4401 not logged
in, 4404 not your thread, each after a notice saying why.
"""

import asyncio
import contextlib
import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from conversations import services as conversation_services
from conversations import sharing
from conversations.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED, VIEW_ONLY_MESSAGE
from conversations.models import OpenPage
from haico_site.asgi import application
from haico_site.websocket import unrouted
from tests.conversations.helpers import QuietPresenceSocket, _session_cookie, frames_until_closed
from tests.support.turns import turn_environment  # noqa: F401  (autouse: the consumer warms the turn machinery)
from tests.support.web import database_rows
from workspace.services import objective as objective_services

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "owner-secret-ws-41c2"

# Route name -> kwarg -> key of the owner's object in `world`.
WS_ROUTES = {
    "thread-ws": {"thread_id": "thread"},
    "staff-thread-ws": {"thread_id": "thread"},
}
# Routes for staff only (the read-only view's socket): the owner is refused
# like anyone else who is not staff, and staff are let in.
STAFF_WS_ROUTES = {"staff-thread-ws"}


def websocket_routes(app=None, prefix="", kwargs=()):
    """(name, path pattern, kwarg names, pattern levels) of every route behind the
    application's "websocket" entry, through its middleware and nested routers."""
    app = app or application.application_mapping["websocket"]
    while not isinstance(app, URLRouter):
        app = getattr(app, "application", None) or getattr(app, "inner", None)
        assert app is not None, "no URLRouter behind the websocket entry of haico_site.asgi"
    found = []
    for route in app.routes:
        pattern = str(route.pattern)
        names = (*kwargs, *route.pattern.regex.groupindex)
        callback = route.callback
        if callback is unrouted:
            continue  # the catch-all that refuses every other path (tests/haico_site/test_websocket.py)
        if isinstance(callback, URLRouter):
            found += websocket_routes(callback, prefix + pattern, names)
        else:
            found.append((route.name or prefix + pattern, prefix + pattern, names))
    return found


ROUTES = websocket_routes()


def ws_path(pattern: str, values: dict) -> str:
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), pattern)
    return "/" + path.lstrip("^").rstrip("$")


@pytest.fixture
def world(owner, other_user):
    thread = conversation_services.thread_create(owner=owner, title=f"Thread {SECRET}")
    objective_services.objective_set(thread=thread, text=f"Objective {SECRET}")
    return {"thread": thread}


async def connect(path, user, origin=b"http://127.0.0.1:8000", *, quiet=False):
    """`quiet`: the socket leaves out the presence pushes every page that
    opens or closes sends (tests.conversations.helpers.QuietPresenceSocket)."""
    headers = [(b"origin", origin), (b"host", b"127.0.0.1:8000")] if origin else [(b"host", b"127.0.0.1:8000")]
    if user is not None:
        headers.append((b"cookie", await sync_to_async(_session_cookie)(user)))
    socket = (QuietPresenceSocket if quiet else WebsocketCommunicator)(application, path, headers=headers)
    connected, _ = await socket.connect(timeout=5)
    return socket, connected


async def _until_recorded_open(thread, user, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await sync_to_async(OpenPage.objects.filter(thread=thread, user=user).exists)():
        assert loop.time() < deadline, f"{user}'s page was not recorded as open"
        await asyncio.sleep(0.01)


async def disconnect(socket):
    # A refused socket's application has already ended (it closed the socket).
    with contextlib.suppress(asyncio.CancelledError):
        await socket.disconnect(timeout=2)


def test_every_websocket_route_is_in_the_table():
    unknown = [f"{name} ({pattern})" for name, pattern, _ in ROUTES if name not in WS_ROUTES]
    assert not unknown, f"add these WebSocket routes to WS_ROUTES of {__name__}, saying how to fill their kwargs: {unknown}"
    assert set(WS_ROUTES) <= {name for name, _, _ in ROUTES}, "WS_ROUTES lists routes that no longer exist"


@pytest.mark.parametrize(("name", "pattern", "kwargs"), ROUTES, ids=[r[0] for r in ROUTES])
async def test_websocket_route_refuses_other_people_and_anonymous_visitors(
    name, pattern, kwargs, world, owner, other_user, staff
):
    if name not in WS_ROUTES:
        pytest.fail(f"add the WebSocket route {name} ({pattern}) to WS_ROUTES of {__name__}")
    table = WS_ROUTES[name]
    assert set(table) == set(kwargs), f"{name} takes {sorted(kwargs)}; WS_ROUTES of {__name__} fills {sorted(table)}"
    path = ws_path(pattern, {kwarg: world[key].pk for kwarg, key in table.items()})
    before = await sync_to_async(database_rows)()
    refused = [("another person", other_user, CLOSE_NOT_FOUND), ("an anonymous visitor", None, CLOSE_UNAUTHENTICATED)]
    if name in STAFF_WS_ROUTES:
        refused.append(("the owner, who is not staff", owner, CLOSE_NOT_FOUND))
        owner = staff  # who it is for

    for who, user, code in refused:
        socket, connected = await connect(path, user)
        try:
            if connected:
                # Whatever it sends on a refused socket goes nowhere.
                await socket.send_to(text_data=json.dumps({"message": "hello", "HEADERS": {"HX-Request": "true"}}))
                frames, closed = await frames_until_closed(socket)
                assert closed == code, f"{name} opened by {who}: closed with {closed}, not {code}"
                assert not any(SECRET in frame for frame in frames), f"{name} sent {who} the owner's text"
        finally:
            await disconnect(socket)
        assert await sync_to_async(database_rows)() == before, f"{name} opened by {who} changed the database"

    # The owner's own cookie from another site's page (cross-site WebSocket
    # hijacking), or with no Origin at all: refused before the consumer runs.
    for origin in (b"http://evil.example", b"null", None):
        socket, connected = await connect(path, owner, origin=origin)
        try:
            assert not connected, f"{name} opened with the owner's cookie from origin {origin!r}"
        finally:
            await disconnect(socket)
    assert await sync_to_async(database_rows)() == before

    # The owner's socket opens and stays open: the refusals above are real.
    socket, connected = await connect(path, owner)
    try:
        assert connected
        frames, closed = await frames_until_closed(socket, timeout=1)
        assert closed is None, f"{name}: the owner's socket was closed with {closed}"
    finally:
        await disconnect(socket)


# --- the people a thread is shared with, message by message (docs/adr/0084) -----------------

PERSONA_NAMES = ("editor", "viewer", "link_viewer", "removed")
# Every message the thread's socket takes (conversations.consumers), each a write.
SOCKET_MESSAGES = {
    "message": {"message": "Change the plan"},
    "stop": {"action": "stop"},
    "retry": {"action": "retry", "turn": 1},
    "approval": {"action": "approval", "turn": 1, "decision": "approve"},
    "continue": {"message": "From there", "continue_thread": "{thread}", "continue_turn": 1},
}


@pytest.fixture
def shared_world(world, owner, django_user_model):
    thread = world["thread"]
    people = {name: django_user_model.objects.create_user(username=f"{name}-person") for name in PERSONA_NAMES}
    sharing.thread_member_add(thread=thread, who="editor-person", role="editor", by=owner)
    sharing.thread_member_add(thread=thread, who="viewer-person", role="viewer", by=owner)
    removed = sharing.thread_member_add(thread=thread, who="removed-person", role="editor", by=owner)
    sharing.thread_member_remove(thread=thread, member_id=removed.pk, by=owner)
    sharing.share_link_open(user=people["link_viewer"], key=sharing.share_link_create(thread=thread, by=owner))
    return {**world, **people}


@pytest.mark.parametrize("kind", SOCKET_MESSAGES)
async def test_every_socket_message_is_answered_by_the_senders_role(kind, shared_world, other_user, staff):
    """Editors get past the access check (what they are told then is the
    message's own answer); viewers, the link's too, are told they can only
    view, and nothing changes; a removed person, a stranger and staff (no
    member) cannot open the socket at all."""
    thread = shared_world["thread"]
    path = ws_path(dict((n, p) for n, p, _ in ROUTES)["thread-ws"], {"thread_id": thread.pk})
    sent = {k: (v.format(thread=thread.pk) if isinstance(v, str) else v) for k, v in SOCKET_MESSAGES[kind].items()}
    sent["HEADERS"] = {"HX-Request": "true"}
    for persona in ("editor", "viewer", "link_viewer", "removed", "stranger", "staff"):
        user = {"stranger": other_user, "staff": staff}.get(persona) or shared_world[persona]
        socket, connected = await connect(path, user, quiet=True)
        try:
            assert connected
            if persona not in ("removed", "stranger", "staff"):
                # The socket is accepted before it finishes opening (its
                # access is asked again once it hears the thread's events,
                # then its page is recorded as open: conversations.presence).
                await _until_recorded_open(thread, user)
            before = await sync_to_async(database_rows)()
            if persona in ("removed", "stranger", "staff"):
                frames, closed = await frames_until_closed(socket)
                assert closed == CLOSE_NOT_FOUND, f"{persona}'s socket: closed with {closed}"
                continue
            await socket.send_to(text_data=json.dumps(sent))
            answer = await socket.receive_from(timeout=5)
            refused = VIEW_ONLY_MESSAGE in answer
            if persona == "editor":
                assert not refused, f"the editor's {kind} was refused as a viewer's: {answer}"
            else:
                assert refused, f"the {persona}'s {kind} was not refused: {answer}"
                assert await sync_to_async(database_rows)() == before, f"the {persona}'s {kind} changed the database"
        finally:
            await disconnect(socket)
