"""Presence over the thread's real sockets (conversations.consumers,
conversations.presence, docs/adr/0087): a page opening or closing pushes
the top bar's presence to every open page of the thread within 2 seconds,
one presence per person however many tabs; a refused socket and the staff
view record nobody."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from conversations.consumers import CLOSE_NOT_FOUND
from conversations.models import OpenPage

from .helpers import _session_cookie, frame_containing, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

PRESENCE = 'id="presence"'
PUSH_WITHIN_SECONDS = 2.0


async def _presence_push(socket) -> str:
    frames = await frame_containing(socket, PRESENCE, timeout=PUSH_WITHIN_SECONDS)
    return next(html for html in frames if PRESENCE in html)


@database_sync_to_async
def _open_rows(thread):
    return sorted(OpenPage.objects.filter(thread=thread).values_list("user__username", flat=True))


async def _close(socket):
    try:
        await socket.disconnect(timeout=2)
    except (Exception, asyncio.CancelledError):
        pass


async def test_a_second_tab_opening_and_closing_pushes_the_owners_presence_to_the_first(owner, thread, sockets):
    first = await sockets(thread.pk, owner, presence=True)
    pushed = await _presence_push(first)  # its own connect
    assert 'aria-label="Open now: owner"' in pushed and 'hx-swap-oob="true"' in pushed

    second = await open_socket(thread.pk, owner, presence=True)
    pushed = await _presence_push(first)
    assert 'aria-label="Open now: owner"' in pushed
    assert await _open_rows(thread) == ["owner", "owner"]

    await second.disconnect(timeout=2)
    pushed = await _presence_push(first)
    # Still open in the first tab: one presence, still there.
    assert 'aria-label="Open now: owner"' in pushed
    assert pushed.count('class="presence-person"') == 1
    assert await _open_rows(thread) == ["owner"]


async def test_closing_the_last_tab_removes_the_row(owner, thread):
    socket = await open_socket(thread.pk, owner, presence=True)
    await _presence_push(socket)
    assert await _open_rows(thread) == ["owner"]
    await socket.disconnect(timeout=2)
    assert await _open_rows(thread) == []


async def test_another_users_socket_is_refused_and_never_shown_present(owner, other_user, thread, sockets):
    first = await sockets(thread.pk, owner, presence=True)
    await _presence_push(first)

    intruder = await open_socket(thread.pk, other_user, presence=True)
    output = await intruder.receive_output(timeout=2)
    while output["type"] != "websocket.close":
        output = await intruder.receive_output(timeout=2)
    assert output["code"] == CLOSE_NOT_FOUND
    await _close(intruder)

    assert await _open_rows(thread) == ["owner"]
    assert await first.receive_nothing(timeout=0.5)  # no push: nothing changed


async def test_staff_reading_the_thread_are_not_shown_present_to_the_owner(owner, staff, thread, sockets):
    from haico_site.asgi import application

    first = await sockets(thread.pk, owner, presence=True)
    await _presence_push(first)
    headers = [
        (b"origin", b"http://127.0.0.1:8000"),
        (b"host", b"127.0.0.1:8000"),
        (b"cookie", await sync_to_async(_session_cookie)(staff)),
    ]
    staff_socket = WebsocketCommunicator(application, f"/ws/staff/threads/{thread.pk}/", headers=headers)
    connected, _ = await staff_socket.connect(timeout=5)
    assert connected
    try:
        assert await first.receive_nothing(timeout=0.5)
        assert await _open_rows(thread) == ["owner"]
    finally:
        await _close(staff_socket)
    assert await first.receive_nothing(timeout=0.5)


async def test_a_threads_presence_reaches_only_the_pages_of_that_thread(owner, other_user, thread, sockets):
    from conversations.services import thread_create

    theirs = await database_sync_to_async(thread_create)(owner=other_user, title="Theirs")
    their_tab = await sockets(theirs.pk, other_user, presence=True)
    await _presence_push(their_tab)
    my_tab = await sockets(thread.pk, owner, presence=True)
    await _presence_push(my_tab)
    await sockets(thread.pk, owner, presence=True)
    await _presence_push(my_tab)

    assert await their_tab.receive_nothing(timeout=0.5)


async def test_a_dead_servers_pages_are_swept_and_the_open_tabs_told(owner, other_user, thread, sockets):
    from datetime import timedelta

    from django.utils import timezone

    from conversations import presence

    tab = await sockets(thread.pk, owner, presence=True)
    await _presence_push(tab)
    long_ago = timezone.now() - presence.STALE_AFTER - timedelta(seconds=1)
    await database_sync_to_async(OpenPage.objects.create)(
        thread=thread, user=other_user, channel_name="on-a-dead-server", instance="web-dead", boot="gone", seen_at=long_ago
    )

    assert await database_sync_to_async(presence.presence_sweep)() == 1

    pushed = await _presence_push(tab)
    assert 'aria-label="Open now: owner"' in pushed and "intruder" not in pushed
    assert await _open_rows(thread) == ["owner"]


async def test_the_servers_recovery_loop_keeps_its_open_pages_and_sweeps_a_dead_servers(
    owner, other_user, thread, sockets, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    from conversations import presence
    from conversations.turns import registry

    monkeypatch.setattr(registry, "RECOVERY_SECONDS", 0.2)
    monkeypatch.setattr(presence, "STALE_AFTER", timedelta(seconds=1))
    tab = await sockets(thread.pk, owner, presence=True)  # starts this process's recovery loop
    await _presence_push(tab)
    long_ago = timezone.now() - timedelta(minutes=5)
    await database_sync_to_async(OpenPage.objects.create)(
        thread=thread, user=other_user, channel_name="on-a-dead-server", instance="web-dead", boot="gone", seen_at=long_ago
    )

    pushed = await _presence_push(tab)

    assert 'aria-label="Open now: owner"' in pushed
    await asyncio.sleep(1.2)  # past STALE_AFTER: the owner's page is kept only if the loop refreshes it
    assert await _open_rows(thread) == ["owner"]
