"""The staff read-only view stays up to date (conversations.staff_view,
conversations.consumers.StaffThreadConsumer): its socket only listens, and
whatever changes the thread — the owner's edits, a turn — is sent to it as
the page's content again, a burst of changes as one refresh. Nothing it is
sent changes anything, and only staff allowed to view threads get it."""

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from conversations.consumers import CLOSE_NOT_FOUND, CLOSE_SOMEONE_ELSE, CLOSE_UNAUTHENTICATED, StaffThreadConsumer
from conversations.models import ModerationAction
from conversations.turns import registry
from tests.conversations.helpers import _session_cookie, frames_until_turn_end
from tests.support.fake_model import Reply
from tests.support.web import database_rows
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def quick_refresh(monkeypatch):
    monkeypatch.setattr(StaffThreadConsumer, "REFRESH_SECONDS", 0.2)


async def _staff_socket(thread, user, query=""):
    from haico_site.asgi import application

    headers = [
        (b"origin", b"http://127.0.0.1:8000"),
        (b"host", b"127.0.0.1:8000"),
        (b"cookie", await sync_to_async(_session_cookie)(user)),
    ]
    socket = WebsocketCommunicator(
        application, f"/ws/staff/threads/{thread.pk}/" + (f"?{query}" if query else ""), headers=headers
    )
    connected, _ = await socket.connect(timeout=5)
    assert connected
    return socket


async def _close(socket):
    try:
        await socket.disconnect(timeout=2)
    except (Exception, asyncio.CancelledError):
        pass


async def test_the_owners_edits_reach_the_staff_view_as_its_content_once_per_burst(owner, staff, thread):
    socket = await _staff_socket(thread, staff)
    try:
        assert await socket.receive_nothing(timeout=0.3)  # nothing until the thread changes
        for title in ("Peer-reviewed only", "No blogs", "Short paragraphs"):
            await sync_to_async(preference_services.preference_add)(thread=thread, title=title, kind="hard", respect_lock=False)
        html = await socket.receive_from(timeout=3)
        assert html.startswith('\n<div id="staff-workspace" class="workspace-grid staff-view-grid" hx-swap-oob="true">')
        for title in ("Peer-reviewed only", "No blogs", "Short paragraphs"):
            assert title in html
        # Read-only content, as the page's: nothing to edit with.
        for control in ("<form", "<textarea", "<select", "hx-post", "ws-send", "data-pref-act"):
            assert control not in html
        assert await socket.receive_nothing(timeout=0.5)  # the three changes were one refresh
    finally:
        await _close(socket)


async def test_a_turn_reaches_the_staff_view_when_it_ends(owner, staff, thread, script, sockets):
    answer = "The answer staff should see. " + " ".join(f"word{n}" for n in range(80))
    script(Reply(text=answer, token_delay=0.01))
    owner_tab = await sockets(thread.pk, owner)
    socket = await _staff_socket(thread, staff)
    loop = asyncio.get_running_loop()
    try:
        started = loop.time()
        await owner_tab.send_to(text_data=json.dumps({"message": "a question", "HEADERS": {"HX-Request": "true"}}))
        await frames_until_turn_end(owner_tab)
        frames, last_at = [], started
        while True:
            try:
                frames.append(await socket.receive_from(timeout=2))
                last_at = loop.time()
            except TimeoutError:
                break
        assert frames and "The answer staff should see." in frames[-1] and "word79" in frames[-1]
        assert "a question" in frames[-1]
        # Refreshed at most once per REFRESH_SECONDS (0.2 s here) while it
        # streamed, not per token (80 of them): each refresh waits that long
        # after the one before, so the count is bounded by how long the turn
        # took, which is longer on a loaded machine.
        assert len(frames) <= (last_at - started) / StaffThreadConsumer.REFRESH_SECONDS + 1
        assert len(frames) < 80 <= len(answer.split())
    finally:
        await _close(socket)


async def test_what_a_staff_socket_sends_changes_nothing(owner, staff, thread, script):
    script(Reply(text="never"))
    socket = await _staff_socket(thread, staff)
    try:
        before = await sync_to_async(database_rows)()
        for message in (
            {"message": "start a turn"},
            {"action": "stop"},
            {"action": "approval", "turn": 1, "decision": "approve"},
        ):
            await socket.send_to(text_data=json.dumps(message))
        assert await socket.receive_nothing(timeout=0.5)
        assert await sync_to_async(database_rows)() == before
        assert registry.resync_fragments(thread.pk) == []
    finally:
        await _close(socket)


async def test_staff_without_the_permission_to_view_threads_and_the_owner_are_refused(owner, thread, django_user_model):
    moderator = await sync_to_async(django_user_model.objects.create_user)(
        username="moderator", password="x-long-password", is_staff=True
    )
    for user in (moderator, owner):
        from haico_site.asgi import application

        headers = [
            (b"origin", b"http://127.0.0.1:8000"),
            (b"host", b"127.0.0.1:8000"),
            (b"cookie", await sync_to_async(_session_cookie)(user)),
        ]
        socket = WebsocketCommunicator(application, f"/ws/staff/threads/{thread.pk}/", headers=headers)
        await socket.connect(timeout=5)
        notice = await socket.receive_from(timeout=3)
        assert "No such thread to view." in notice and "Lit review" not in notice
        assert (await socket.receive_output(timeout=3))["code"] == CLOSE_NOT_FOUND
        await _close(socket)
    assert not await ModerationAction.objects.aexists()


async def test_a_staff_page_reopening_its_socket_with_someone_else_signed_in_is_refused(owner, staff, thread):
    # The page was rendered for the owner; a staff member signed in in the same browser since.
    socket = await _staff_socket(thread, staff, query=f"person={owner.pk}")
    try:
        assert "signed in as someone else" in await socket.receive_from(timeout=3)
        assert (await socket.receive_output(timeout=3))["code"] == CLOSE_SOMEONE_ELSE
    finally:
        await _close(socket)
    # Named as the staff member, the same socket joins the thread's view.
    socket = await _staff_socket(thread, staff, query=f"person={staff.pk}")
    try:
        assert await socket.receive_nothing(timeout=0.3)
    finally:
        await _close(socket)


async def test_a_staff_socket_whose_session_ended_is_closed_at_the_next_change(owner, staff, thread):
    from django.contrib.sessions.models import Session

    socket = await _staff_socket(thread, staff)
    try:
        await Session.objects.all().adelete()  # logged out elsewhere (or the session expired)
        await sync_to_async(preference_services.preference_add)(thread=thread, title="Private", kind="hard", respect_lock=False)
        notice = await socket.receive_from(timeout=3)
        assert "Your session has ended" in notice and "Private" not in notice
        assert (await socket.receive_output(timeout=3))["code"] == CLOSE_UNAUTHENTICATED
    finally:
        await _close(socket)
