"""A thread's socket lives only as long as its session (conversations.sessions):
logging out closes that session's sockets at once, with the page told why;
so does a session deleted by staff, and a password change (the person's own
elsewhere, or set by staff) closes the pages of every other session of the
account before anything more is pushed to them, while the page of the
session that changed it goes on; an account deactivated or deleted has its
pages closed at once; whatever ends a session is also caught at a socket's
next message, before anything is stored. Personas: the owner, an editor
(another user) on the owner's shared thread, staff."""

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.models import Session
from django.test import Client

from conversations.sessions import ACCOUNT_DEACTIVATED, SessionStore, deactivated_account_of, session_signs_in
from tests.conftest import PASSWORD
from tests.support.fake_model import Reply
from tests.support.sockets import frames_within
from workspace.models import WorkspaceSnapshot
from workspace.services import plan as plan_services

from .helpers import QuietPresenceSocket

pytestmark = pytest.mark.django_db(transaction=True)

NEW_PASSWORD = "a-brand-new-password-42"
SECRET_STEP = "Board memo: layoffs list v2"
ENDED = "Your session has ended; log in again to use the chat."


@sync_to_async
def _log_in(user) -> str:
    """A new signed-in session of `user` (a browser of theirs), by its key."""
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return session.session_key


def _browser(session_key) -> Client:
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = session_key
    return client


@pytest.fixture
async def session_sockets():
    opened: list[WebsocketCommunicator] = []

    async def open_(thread, session_key):
        from haico_site.asgi import application

        headers = [
            (b"origin", b"http://127.0.0.1:8000"),
            (b"host", b"127.0.0.1:8000"),
            (b"cookie", f"{settings.SESSION_COOKIE_NAME}={session_key}".encode()),
        ]
        communicator = QuietPresenceSocket(application, f"/ws/threads/{thread.pk}/", headers=headers)
        connected, _ = await communicator.connect(timeout=5)
        assert connected
        opened.append(communicator)
        return communicator

    yield open_
    for communicator in opened:
        try:
            await communicator.disconnect(timeout=2)
        except (Exception, asyncio.CancelledError):
            pass  # the application already ended (it closed the socket)


def _message(text):
    return json.dumps({"message": text, "HEADERS": {"HX-Request": "true"}})


async def _ended(socket):
    assert ENDED in await socket.receive_from(timeout=3)
    assert await socket.receive_output(timeout=3) == {"type": "websocket.close", "code": 4401}


async def _deactivated(socket):
    """Not "log in again", which a deactivated person cannot (docs/adr/0108)."""
    said = await socket.receive_from(timeout=3)
    assert ACCOUNT_DEACTIVATED in said and "log in" not in said.lower()
    assert await socket.receive_output(timeout=3) == {"type": "websocket.close", "code": 4410}


async def _still_open(socket):
    """The socket still answers (a stop with no turn running says so)."""
    await socket.send_to(text_data=json.dumps({"action": "stop"}))
    assert "No turn is running." in await socket.receive_from(timeout=3)


@sync_to_async
def _snapshots(thread):
    return list(WorkspaceSnapshot.objects.filter(thread=thread).values_list("user_message", flat=True))


async def test_logging_out_closes_that_sessions_sockets_at_once_and_no_others(owner, thread, script, session_sockets):
    mine, elsewhere = await _log_in(owner), await _log_in(owner)
    first_tab, second_tab = await session_sockets(thread, mine), await session_sockets(thread, mine)
    other_browser = await session_sockets(thread, elsewhere)

    response = await sync_to_async(_browser(mine).post)("/accounts/logout/")

    assert response.status_code == 302
    await _ended(first_tab)
    await _ended(second_tab)
    assert await other_browser.receive_nothing(timeout=0.2)
    await _still_open(other_browser)


async def test_logging_out_in_the_admin_closes_the_sessions_sockets_too(staff, thread, script, session_sockets):
    # Staff may open only their own threads; the admin's logout is the same logout.
    from conversations.services import thread_create

    theirs = await sync_to_async(thread_create)(owner=staff, title="Staff notes")
    key = await _log_in(staff)
    tab = await session_sockets(theirs, key)
    response = await sync_to_async(_browser(key).post)("/admin/logout/")
    assert response.status_code == 302
    await _ended(tab)


async def test_a_password_change_ends_other_sessions_sockets_at_their_next_message_and_keeps_its_own(
    owner, thread, script, session_sockets
):
    script(Reply(text="must not run"))
    stale, changing = await _log_in(owner), await _log_in(owner)
    stale_tab = await session_sockets(thread, stale)
    changing_tab = await session_sockets(thread, changing)

    response = await sync_to_async(_browser(changing).post)(
        "/accounts/password_change/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302

    await stale_tab.send_to(text_data=_message("sent from the old session"))
    await _ended(stale_tab)
    assert await _snapshots(thread) == []
    # The session that changed the password keeps its socket (Django updates its hash).
    await _still_open(changing_tab)


async def test_a_deactivated_account_ends_its_sockets_at_their_next_message(owner, thread, script, session_sockets):
    script(Reply(text="must not run"))
    tab = await session_sockets(thread, await _log_in(owner))
    owner.is_active = False
    await sync_to_async(owner.save)()

    await tab.send_to(text_data=_message("hello"))

    await _deactivated(tab)
    assert await _snapshots(thread) == []


@pytest.mark.parametrize("end", ["deactivated", "deleted"])
async def test_an_account_deactivated_or_deleted_by_staff_closes_its_listening_pages_at_once_and_no_one_elses(
    owner, other_user, thread, script, session_sockets, end
):
    from conversations import sharing

    await sync_to_async(sharing.thread_member_add)(thread=thread, who=other_user.username, role="viewer", by=owner)
    viewer_tab = await session_sockets(thread, await _log_in(other_user))
    owner_tab = await session_sockets(thread, await _log_in(owner))

    if end == "deactivated":
        other_user.is_active = False
        await sync_to_async(other_user.save)()
    else:
        await sync_to_async(other_user.delete)()

    # The viewer's page only listens: it is closed all the same, and says why.
    if end == "deactivated":
        await _deactivated(viewer_tab)
    else:
        await _ended(viewer_tab)
    await _still_open(owner_tab)


async def test_a_page_of_a_deactivated_account_reconnecting_is_told_it_was_deactivated(owner, thread, session_sockets):
    from haico_site.asgi import application

    key = await _log_in(owner)
    owner.is_active = False
    await sync_to_async(owner.save)()
    headers = [
        (b"origin", b"http://127.0.0.1:8000"),
        (b"host", b"127.0.0.1:8000"),
        (b"cookie", f"{settings.SESSION_COOKIE_NAME}={key}".encode()),
    ]
    socket = QuietPresenceSocket(application, f"/ws/threads/{thread.pk}/", headers=headers)
    connected, _ = await socket.connect(timeout=5)
    assert connected
    await _deactivated(socket)


async def test_only_a_session_of_the_deactivated_account_itself_says_so(owner, other_user):
    key = await _log_in(owner)
    owner.is_active = False
    await sync_to_async(owner.save)()
    session = await sync_to_async(SessionStore(key).load)()
    assert await sync_to_async(deactivated_account_of)(session)
    # A session a password change ended, or an active account's, says nothing.
    assert not await sync_to_async(deactivated_account_of)({**session, HASH_SESSION_KEY: "stale"})
    other_key = await _log_in(other_user)
    assert not await sync_to_async(deactivated_account_of)(await sync_to_async(SessionStore(other_key).load)())
    assert not await sync_to_async(deactivated_account_of)({})


async def test_a_deleted_session_ends_its_sockets_at_their_next_message(owner, thread, script, session_sockets):
    key = await _log_in(owner)
    tab = await session_sockets(thread, key)
    await sync_to_async(Session.objects.filter(session_key=key).delete)()

    await tab.send_to(text_data=json.dumps({"action": "stop"}))

    await _ended(tab)


async def test_checking_a_session_never_changes_it(owner):
    key = await _log_in(owner)
    assert await sync_to_async(session_signs_in)(session_key=key, user=owner)
    owner.set_password(NEW_PASSWORD)
    await sync_to_async(owner.save)()
    assert not await sync_to_async(session_signs_in)(session_key=key, user=owner)
    # Still there, as the browser left it: only Django's next request decides what to do with it.
    assert await sync_to_async(Session.objects.filter(session_key=key).exists)()
    assert not await sync_to_async(session_signs_in)(session_key=None, user=owner)


# --- a page that only listens ends with its session, before the next push ------


async def _frames_for(socket, seconds=2.5) -> tuple[list[str], int | None]:
    return await frames_within(socket, seconds)


async def _change_password_in(session_key):
    response = await sync_to_async(_browser(session_key).post)(
        "/accounts/password_change/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302


async def _staff_sets_password(staff, person):
    """Staff set the person's password in the admin ("Change password")."""
    client = Client()
    await sync_to_async(client.force_login)(staff)
    response = await sync_to_async(client.post)(
        f"/admin/auth/user/{person.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]


async def _add_step(thread):
    # Not a race: the change had time to reach the pages.
    await asyncio.sleep(0.3)
    await sync_to_async(plan_services.todo_add)(thread=thread, text=SECRET_STEP)


@pytest.mark.parametrize("how", ["own password change elsewhere", "password set by staff"])
async def test_a_password_change_closes_another_sessions_listening_page_before_the_next_push(
    owner, staff, thread, script, session_sockets, how
):
    stale, changing = await _log_in(owner), await _log_in(owner)
    stale_tab = await session_sockets(thread, stale)
    changing_tab = await session_sockets(thread, changing)

    if how == "own password change elsewhere":
        await _change_password_in(changing)
    else:
        await _staff_sets_password(staff, owner)
    await _add_step(thread)

    frames, closed = await _frames_for(stale_tab)
    assert closed == 4401 and any(ENDED in frame for frame in frames)
    assert not any(SECRET_STEP in frame for frame in frames)
    if how == "own password change elsewhere":
        # The session that changed it stays signed in (Django renews its hash), and its page goes on.
        frames, closed = await _frames_for(changing_tab, 1.0)
        assert closed is None and any(SECRET_STEP in frame for frame in frames)
        await _still_open(changing_tab)


async def test_an_editors_password_change_closes_their_old_sessions_page_of_a_shared_thread_and_not_the_owners(
    owner, other_user, thread, script, session_sockets
):
    from conversations import sharing

    await sync_to_async(sharing.thread_member_add)(thread=thread, who=other_user.username, role="editor", by=owner)
    stale, changing = await _log_in(other_user), await _log_in(other_user)
    stale_tab = await session_sockets(thread, stale)
    owner_tab = await session_sockets(thread, await _log_in(owner))

    await _change_password_in(changing)
    await _add_step(thread)

    frames, closed = await _frames_for(stale_tab)
    assert closed == 4401 and not any(SECRET_STEP in frame for frame in frames)
    frames, closed = await _frames_for(owner_tab, 1.0)
    assert closed is None and any(SECRET_STEP in frame for frame in frames)


async def test_a_session_deleted_by_staff_closes_its_listening_page_before_the_next_push_and_no_other(
    owner, thread, script, session_sockets
):
    key, other_key = await _log_in(owner), await _log_in(owner)
    tab = await session_sockets(thread, key)
    other_browser = await session_sockets(thread, other_key)

    await sync_to_async(Session.objects.filter(session_key=key).delete)()
    await _add_step(thread)

    frames, closed = await _frames_for(tab)
    assert closed == 4401 and any(ENDED in frame for frame in frames)
    assert not any(SECRET_STEP in frame for frame in frames)
    frames, closed = await _frames_for(other_browser, 1.0)
    assert closed is None and any(SECRET_STEP in frame for frame in frames)


async def test_a_save_of_the_account_that_leaves_its_password_closes_no_page(owner, thread, script, session_sockets):
    tab = await session_sockets(thread, await _log_in(owner))

    owner.first_name = "Olive"
    await sync_to_async(owner.save)()
    await _add_step(thread)

    frames, closed = await _frames_for(tab, 1.0)
    assert closed is None and any(SECRET_STEP in frame for frame in frames)
