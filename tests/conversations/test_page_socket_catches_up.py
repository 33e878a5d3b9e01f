"""A page names the workspace writes it was rendered with (`?seen=` on its
socket): a write committed between the page's render and its socket
joining the thread's pushes reached only the pages already joined, so the
new socket tells its page to read the workspace again
(conversations.consumers)."""

import re

import pytest
from channels.db import database_sync_to_async

from conversations.sharing import thread_member_add
from tests.support.web import ws_url
from workspace.services import plan as plan_services

from .helpers import open_socket

pytestmark = pytest.mark.django_db(transaction=True)

RESYNC = 'data-live-patch="resync"'


def _seen_on_page(client, thread) -> str:
    html = client.get(ws_url(thread)).content.decode()
    return re.search(rf'ws-connect="/ws/threads/{thread.pk}/\?seen=(\d+)"', html).group(1)


async def _frames(socket, seconds: float = 0.5) -> list[str]:
    """What the socket sends until it is quiet for `seconds`."""
    frames = []
    while not await socket.receive_nothing(timeout=seconds):
        frames.append(await socket.receive_from())
    return frames


async def test_a_step_added_while_the_owners_page_loaded_is_read_again_once_its_socket_opens(owner, owner_client, thread):
    seen = await database_sync_to_async(_seen_on_page)(owner_client, thread)
    await database_sync_to_async(plan_services.todo_add)(thread=thread, text="Call Dr Ruiz")
    socket = await open_socket(thread.pk, owner, query=f"person={owner.pk}&seen={seen}")
    try:
        assert any(RESYNC in frame for frame in await _frames(socket))
    finally:
        await socket.disconnect()


async def test_an_editors_page_catches_up_too(owner, other_user, client, thread):
    await database_sync_to_async(thread_member_add)(thread=thread, who=other_user.username, role="editor", by=owner)
    await database_sync_to_async(client.force_login)(other_user)
    seen = await database_sync_to_async(_seen_on_page)(client, thread)
    await database_sync_to_async(plan_services.todo_add)(thread=thread, text="Owner's step")
    socket = await open_socket(thread.pk, other_user, query=f"seen={seen}")
    try:
        assert any(RESYNC in frame for frame in await _frames(socket))
    finally:
        await socket.disconnect()


async def test_a_page_with_nothing_written_since_it_was_rendered_is_not_asked_to_read_again(owner, owner_client, thread):
    await database_sync_to_async(plan_services.todo_add)(thread=thread, text="Call Dr Ruiz")
    seen = await database_sync_to_async(_seen_on_page)(owner_client, thread)
    assert int(seen) > 0
    socket = await open_socket(thread.pk, owner, query=f"seen={seen}")
    try:
        assert not any(RESYNC in frame for frame in await _frames(socket))
    finally:
        await socket.disconnect()


@pytest.mark.parametrize("seen", ["", "abc", "-1", "１２", "9" * 40])
async def test_a_garbled_seen_opens_the_socket_and_asks_nothing(owner, thread, seen):
    await database_sync_to_async(plan_services.todo_add)(thread=thread, text="Call Dr Ruiz")
    socket = await open_socket(thread.pk, owner, query=f"seen={seen}")
    try:
        assert not any(RESYNC in frame for frame in await _frames(socket))
    finally:
        await socket.disconnect()
