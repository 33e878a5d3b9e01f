"""The thread's WebSocket: one per open thread page (htmx ws extension).

Thin by design. It checks who is asking, joins the thread (with the live
layer of this process, and the channel group for other processes' pushes),
validates what the chat form sends (conversations.forms: ChatMessageForm,
RetryForm, ApprovalAnswerForm) and hands a turn to the turn registry,
which runs it as a server-owned task; this consumer only passes on what the
live layer gives it (`deliver`) or the layer brings (`thread.fragment`).

Close codes: 4401 not logged in, or the session ended (logged out, the
session deleted, or a password change elsewhere, each of which closes the
session's sockets at once, before the next push; an expired session, caught
before acting on the next message: conversations.sessions), 4410 the session's account has been deactivated
(closed at once, or when the page next sends or connects; the page says so
instead of "log in again", which its person cannot: docs/adr/0108), 4403 the account waits for staff approval
(conversations.approval), 4404 not your thread (or deleted, or no longer
shared with you: docs/adr/0084), 4409 someone other than the person the
page was rendered for is signed in now (docs/adr/0108), 4429 the person
has HAICO_MAX_OPEN_PAGES pages open already (docs/adr/0051). All are sent
after accepting, with a notice first, so the page can say why; the htmx ws
extension does not reconnect on them. 1011, after which the page
reconnects: Redis or the database stopped answering under the socket
(docs/adr/0103).

Messages (JSON; `ws-send` posts the form fields plus a HEADERS object):
  {"message": "...", "model": "...", "mode": "..."}
                                       start a turn (mode: the Mode
                                       selector's, stored if it differs);
                                       with "selection": {"start", "end",
                                       "text"} the passage of the document
                                       it asks about, checked against the
                                       saved document
                                       (conversations.forms.SelectionForm)
  {"action": "stop"}                   stop the running turn
  {"message": "...", "continue_thread": id, "continue_turn": N}
                                       branch that thread after turn N (a
                                       preview's "Continue from here") and
                                       run the message there
  {"action": "retry", "turn": N}       run turn N's message again as a new
                                       turn (N: the latest turn, which
                                       failed, was interrupted or cut off)
  {"action": "approval", "turn": N, "decision": "approve" | "reject"}
                                       answer the approval turn N waits
                                       for (docs/adr/0017); Stop on a
                                       waiting turn rejects and ends it
  {"action": "alive"}                  the page asks whether its socket
                                       still reaches the server (nothing
                                       else in it); answered ALIVE_ANSWER
                                       at once, with no database work
                                       (docs/adr/0157)
"""

import asyncio
import contextvars
import json
import logging
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user_model

from agent import catalogue
from agent.model import ModelNotConfigured
from workspace.errors import VIEW_ONLY_MESSAGE, UserFacingError
from workspace.selectors import Access, surface_writes_of, thread_and_access_for_user
from workspace.text import encodable

from . import outages, presence, ratelimit, staff_view, trajectory
from .approval import WAITING_MESSAGE, is_waiting
from .branching import discard_branch, make_branch_for_turn
from .errors import MessageAlreadyStored
from .forms import UNREADABLE_MESSAGE, ApprovalAnswerForm, ChatMessage, ChatMessageForm, RetryForm, checked_selection
from .live import RESYNC, RESYNC_WORKSPACE, fits_one_message, group_name, message_size, publisher
from .selectors import turn_of_sent_message
from .services import thread_set_mode
from .sessions import (
    ACCOUNT_DEACTIVATED,
    deactivated_account_of,
    session_group,
    session_of_deactivated_account,
    session_signs_in,
)
from .turns import approval_claims, fragments, registry
from .turns.message_checks import retry_message

logger = logging.getLogger("haico.conversations.ws")

# What the server raises for a send to a socket that has closed: daphne
# (autobahn's protocol) its own Disconnected, servers that follow the ASGI
# specification an OSError.
PAGE_GONE = (Disconnected, OSError)

# Channel layers forget a group member after a while (group_expiry); an open
# page renews its membership of its session's group well before that (the
# thread's group has this process's relay in it, conversations.live).
RENEW_GROUP_SECONDS = 3600

# After a password change, how long a page's session that does not sign in
# is asked again before the page ends: the browser that changed it writes its
# session's new hash as its request ends (ThreadConsumer.session_check).
SESSION_RENEWAL_SECONDS = 1.0
SESSION_RENEWAL_POLL_SECONDS = 0.1

CLOSE_UNAUTHENTICATED = 4401
CLOSE_WAITING = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_SOMEONE_ELSE = 4409
CLOSE_DEACTIVATED = 4410
CLOSE_TOO_MANY = 4429

NOT_FOUND_MESSAGE = "This thread does not exist or is not yours."
ROLE_LOWERED_MESSAGE = "The owner made you a viewer of this thread: reload the page to see it as a viewer."
ROLE_RAISED_MESSAGE = "The owner made you an editor of this thread: reload the page to edit it."
STAFF_NOT_FOUND_MESSAGE = "No such thread to view."
SENT_TO_A_GONE_THREAD = "That message was sent before, to a branch you can no longer open; nothing was sent again."
LOGIN_MESSAGE = "Your session has ended; log in again to use the chat."
DATABASE_AWAY = "The server's database did not answer just now"
DATABASE_AWAY_STOPPING = DATABASE_AWAY + "; the turn is stopping, and keeps what it wrote."
DATABASE_AWAY_NOT_DONE = {
    None: DATABASE_AWAY + ", so your message was not sent; it is still in the box: send it again in a moment.",
    "stop": DATABASE_AWAY + ", so Stop did not reach the turn: press Stop again in a moment.",
    "approval": DATABASE_AWAY + ", so your answer was not recorded: answer again in a moment.",
    "retry": DATABASE_AWAY + ", so the turn was not run again: press Retry again in a moment.",
}
# A message with its page's id may already be stored (this may be it sent
# again after a dropped connection): the page sends it again by itself,
# and it runs once whichever it is (docs/adr/0126).
DATABASE_AWAY_GOING_AGAIN = DATABASE_AWAY + "; your message goes again by itself once it does, and runs only once."
SOMEONE_ELSE_MESSAGE = "This browser is now signed in as someone else; log in again as yourself to use this chat."


def _opened_by_its_page_person(scope) -> bool:
    """A page names the person it was rendered for when it opens its socket
    (`?person=`, static/js/workspace.js), as its requests do. A page that
    opens its socket again after its session ended must not be live, or
    send, as someone else who has signed in in the same browser since
    (docs/adr/0108). A socket that names no one is judged by its session
    alone."""
    person = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("person", [""])[0]
    return not person or person == str(scope["user"].pk)


def _writes_seen_by_page(scope) -> int | None:
    """The thread's surface writes as the page was rendered with them
    (`?seen=`, templates/conversations/panels/chat.html); None when the
    page names none or garbles it (nothing is checked then)."""
    seen = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("seen", [""])[0]
    return int(seen) if seen.isascii() and seen.isdigit() and len(seen) <= 19 else None


def _present_and_behind(*, thread_id, user, channel_name, seen: int | None, latest: bool) -> tuple[bool, tuple | None, str]:
    """Marks the page present; whether the workspace was written since the
    page was rendered; with `latest`, how the thread's latest turn ended or
    where it runs (registry.ended_or_running_on), else None; and the check
    of the page's map (trajectory.map_check): one database hop for the four."""
    presence.presence_open(thread_id=thread_id, user=user, channel_name=channel_name)
    behind = seen is not None and surface_writes_of(thread_id) > seen
    return (
        behind,
        registry.ended_or_running_on(thread_id) if latest else None,
        trajectory.map_check(thread_id=thread_id),
    )


class PageSocketConsumer(AsyncWebsocketConsumer):
    """A page's socket that a stopped service ends cleanly (docs/adr/0103).

    Redis carries each socket's own channel and the database answers its
    messages: when one stops answering, channels ends the socket by raising,
    without `disconnect`, and the server logged a traceback per page and per
    reconnect. Here the failure is one line of the outage's
    (conversations.outages), what the page held in this process is let go
    of as a close lets go of it (kept, its membership of the thread's pages
    would keep its presence alive after the page closed), and
    SocketClosedForOutage ends the socket: the server closes it with 1011
    (or refuses the handshake), which the page reconnects after, and
    haico_site.logs keeps the server's traceback of it out of the log. A
    close the application sends could not say 1011: the server allows it
    only 1000 and 3000-4999, after which the page would not reconnect."""

    async def __call__(self, scope, receive, send):
        try:
            await super().__call__(scope, receive, send)
        except Exception as error:
            if outages.unreachable_service(error) is None:
                raise
            outages.note(logger, error, "a page's socket at %s was closed for it to reconnect", scope.get("path"))
            try:
                await self.disconnect(1011)
            except Exception as failure:
                outages.note(logger, failure, "a page's socket at %s was not let go of whole", scope.get("path"))
            raise outages.SocketClosedForOutage(str(error)) from error


class ThreadConsumer(PageSocketConsumer):
    thread = None
    access: Access | None = None
    group = None
    session_group = None
    _renewal = None
    _page_count_renewal = None
    _counted_windows: set = frozenset()
    _present_on = None  # the thread this socket is recorded as open on (conversations.presence)
    _catching_up = None
    _checking_session = None
    # While the socket's access or session is being checked: what is pushed
    # meanwhile, held back (None: pushes go straight to the page).
    _held: list[str] | None = None
    _holds = 0
    _session_over = False

    async def connect(self):
        publisher.attach()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            # A page reconnecting after a dropped connection, its account deactivated meanwhile.
            if await database_sync_to_async(deactivated_account_of)(self.scope.get("session") or {}):
                await self._refuse(ACCOUNT_DEACTIVATED, CLOSE_DEACTIVATED)
                return
            await self._refuse(LOGIN_MESSAGE, CLOSE_UNAUTHENTICATED)
            return
        if not _opened_by_its_page_person(self.scope):
            await self._refuse(SOMEONE_ELSE_MESSAGE, CLOSE_SOMEONE_ELSE)
            return
        thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        waiting, self.thread, self.access = await database_sync_to_async(_open_thread)(user=user, thread_id=thread_id)
        if waiting:
            await self._refuse(WAITING_MESSAGE, CLOSE_WAITING)
            return
        if self.thread is None:
            await self._refuse(NOT_FOUND_MESSAGE, CLOSE_NOT_FOUND)
            return
        limit = settings.HAICO_MAX_OPEN_PAGES
        if limit and await _cache_call(ratelimit.sockets_open, user.pk) >= limit:
            self.thread = None
            await self._refuse(
                f"You have {limit} HAICO pages open, the most at once; close one you no longer use, then reload "
                "this page to use its chat.",
                CLOSE_TOO_MANY,
            )
            return
        self._counted_windows = set()
        await self._count_page()
        self.group = group_name(self.thread.pk)
        self._seen: dict[str, int] = {}  # other processes' last sequence number
        self.session_key = self.scope["session"].session_key
        self.session_group = session_group(self.session_key)
        await self.channel_layer.group_add(self.session_group, self.channel_name)
        await self.accept()
        await publisher.join(self.thread.pk, self)
        if self.thread.owner_id != user.pk and await self._current_thread(level=Access.VIEW) is None:
            # Removed between the check above and the join: the access event
            # that says so may have gone out before this page could hear it.
            return
        registry.warm_up()
        # After joining the group: the presence push reaches this page too,
        # and a write committed from now on is pushed to it.
        # The latest turn read in the same hop, unless one runs here (its
        # fragments so far come from this process): a turn that starts after
        # the join above sends this page all of its fragments.
        behind, latest, map_check = await database_sync_to_async(_present_and_behind)(
            thread_id=self.thread.pk,
            user=user,
            channel_name=self.channel_name,
            seen=_writes_seen_by_page(self.scope),
            latest=not registry.runs_here(self.thread.pk),
        )
        if behind:
            # Written between the page's render and now: its push went to
            # the pages already joined. The page reads the workspace again.
            await self.send(text_data=RESYNC_WORKSPACE)
        self._present_on = self.thread.pk
        self._renewal = asyncio.ensure_future(self._renew_membership())
        self._page_count_renewal = asyncio.ensure_future(self._renew_page_count())
        await self._catch_up(latest, map_check)

    async def _catch_up(self, latest: tuple | None = None, map_check: str | None = None):
        """The turn so far, or how the latest turn ended. Behind any fragment
        already on its way to the thread, so nothing arrives twice or out of
        order; from the process running the turn, behind its fragments, when
        that is another (turns.elsewhere). `latest`: the latest turn as read
        after the page joined (registry.ended_or_running_on).

        Then the check of the page's map (`map_check`, as read after the
        join, else read here): a node pushed between the page's render and
        its join went to the pages already joined, whether or not a turn of
        this thread runs now; the page fetches its map if it lacks one
        (docs/adr/0156)."""
        for html in await registry.connect_fragments(self.thread.pk, page_channel=self.channel_name, latest=latest):
            publisher.publish_to_consumer(self.thread.pk, self, html)
        if map_check is None:
            map_check = await database_sync_to_async(trajectory.map_check)(thread_id=self.thread.pk)
        publisher.publish_to_consumer(self.thread.pk, self, map_check)

    async def _catch_up_after_a_loss(self):
        try:
            if self.thread is not None:
                await self._catch_up()
        except Exception as error:
            # The page reloads the rest (RESYNC); a turn's end, sent whole, completes its answer.
            outages.note(logger, error, "a page of thread %s could not catch up with the turn", self.thread.pk)

    async def send(self, text_data=None, bytes_data=None, close=False):
        # The server could not encode a lone surrogate and would drop the
        # connection: whatever a frame carries, the page gets it readable.
        if text_data is not None:
            text_data = encodable(text_data)
            if not fits_one_message(text_data):
                # Daphne would refuse the frame and the page never learn of
                # it: the page fetches what it missed instead (docs/adr/0043).
                logger.warning(
                    "a message of %d bytes to a page of thread %s was too big; it resyncs instead",
                    message_size(text_data),
                    self.thread.pk if self.thread else "-",
                )
                text_data = RESYNC
        try:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
        except PAGE_GONE:
            # The page closed while this was on its way (its disconnect not
            # handled yet): nothing is lost, a page opened again reads the
            # thread as it is now.
            logger.info("a page of thread %s closed before a message reached it", self.thread.pk if self.thread else "-")

    async def _refuse(self, message: str, code: int):
        await self.accept()
        await self._say_and_close(message, code)

    async def _say_and_close(self, message: str, code: int):
        # Marked as the close's reason, not the answer to a message on its
        # way: the close code decides what becomes of that (static/js/chat.js).
        await self.send(text_data=fragments.notice(message, closing=True))
        await self.close(code=code)

    async def disconnect(self, code):
        if self._page_count_renewal is not None:
            self._page_count_renewal.cancel()
        if self._catching_up is not None:
            self._catching_up.cancel()
        if self._checking_session is not None:
            self._held = None  # nothing held goes to a closed page
            self._checking_session.cancel()
        if self._counted_windows:
            await _cache_call(_uncount_page, self.scope["user"].pk, self._counted_windows)
            self._counted_windows = set()
        if self._present_on is not None:
            thread_id, self._present_on = self._present_on, None
            try:
                await database_sync_to_async(presence.presence_close)(channel_name=self.channel_name)
            except Exception as error:
                # The row is no longer refreshed: the recovery sweep removes it (docs/adr/0087).
                outages.note(logger, error, "could not record that a page of thread %s closed", thread_id)
        await self._leave_groups()

    async def _leave_groups(self):
        if self.group:
            self.group = None
            if self._renewal is not None:
                self._renewal.cancel()
            # This process's part first: it cannot fail, and the layer's may (Redis stopped).
            await publisher.leave(self.thread.pk, self)
            await _leave_session_group(self)

    # -- the person's open pages (HAICO_MAX_OPEN_PAGES, conversations.ratelimit) --

    async def _count_page(self):
        window = ratelimit.socket_window()
        if window not in self._counted_windows:
            await _cache_call(ratelimit.socket_count, self.scope["user"].pk, window, 1)
            self._counted_windows = {w for w in self._counted_windows if w >= window - 1} | {window}

    async def _renew_page_count(self):
        """Count this page in every window it stays open for, so a page whose
        server died stops counting within two windows."""
        offset = ratelimit.socket_renewal_offset()
        while True:
            await asyncio.sleep(ratelimit.seconds_to_socket_renewal(offset))
            await self._count_page()

    async def _renew_membership(self):
        while True:
            await asyncio.sleep(RENEW_GROUP_SECONDS)
            try:
                await self.channel_layer.group_add(self.session_group, self.channel_name)
            except Exception as error:
                outages.note(logger, error, "a page could not renew its membership of its session's group")

    async def _end_session(self):
        if self._session_over:  # told twice (a logout, then its session's deletion)
            return
        self._session_over = True
        # Nothing held for the page reaches it, even before the browser answers the close.
        self._held = None
        # Deactivated by staff, the person cannot log in again: they are told so (docs/adr/0108).
        if await database_sync_to_async(session_of_deactivated_account)(session_key=self.session_key):
            await self._say_and_close(ACCOUNT_DEACTIVATED, CLOSE_DEACTIVATED)
            return
        await self._say_and_close(LOGIN_MESSAGE, CLOSE_UNAUTHENTICATED)

    async def session_ended(self, event):
        """The session this socket was opened with logged out, or was deleted (conversations.sessions)."""
        await self._end_session()

    async def session_renewed(self, event):
        """The session lives on under a new key (a password change in this browser)."""
        await self.channel_layer.group_discard(self.session_group, self.channel_name)
        self.session_key = event["session_key"]
        self.session_group = session_group(self.session_key)
        await self.channel_layer.group_add(self.session_group, self.channel_name)

    async def session_check(self, event):
        """The account's password changed (conversations.sessions): this
        page's session may have ended with it. Nothing is pushed to the page
        until its session is known to still sign its person in, and it ends
        if it does not. In a task of its own: the browser that changed the
        password renews its session's key (`session_renewed`, which this
        socket must take meanwhile) and then writes the new hash into it,
        as its request ends; until then it looks ended too, so a session
        that does not sign in is asked again for SESSION_RENEWAL_SECONDS."""
        if self.thread is None or self._session_over:
            return
        if self._checking_session is None or self._checking_session.done():
            self._hold()
            self._checking_session = asyncio.get_running_loop().create_task(self._check_session(), context=contextvars.Context())

    async def _check_session(self):
        try:
            if not await self._signs_in_once_renewed():
                await self._end_session()
        except Exception as error:
            if outages.unreachable_service(error) is None:
                logger.exception("a page's session could not be checked after a password change")
            else:
                outages.note(logger, error, "a page's session could not be checked after a password change")
            # Not known to still sign its person in: the page is shown
            # nothing more (reloaded, its session is asked again).
            self._session_over = True
            self._held = None
            await self._say_and_close(LOGIN_MESSAGE, CLOSE_UNAUTHENTICATED)
        finally:
            await self._release()

    async def _signs_in_once_renewed(self) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SESSION_RENEWAL_SECONDS
        user = self.scope["user"]
        # self.session_key each time: `session_renewed` may change it meanwhile.
        while not await database_sync_to_async(session_signs_in)(session_key=self.session_key, user=user):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(SESSION_RENEWAL_POLL_SECONDS)
        return True

    # -- what is pushed to the page, held while its access is checked --

    def _hold(self):
        """From now until `_release`, what is pushed is kept back: the
        person's access (or session) may have ended, and a removed person
        must not see one more token (docs/adr/0084)."""
        self._holds += 1
        if self._held is None:
            self._held = []

    async def _release(self):
        """What was held goes to the page, in order, if it may still see the
        thread (nothing is lost for a person who keeps access); a page that
        lost it (`_lose_thread`, `_end_session`) gets none of it."""
        self._holds -= 1
        if self._holds > 0:
            return
        held = self._held
        if held is None:
            return
        if self.thread is None or self._session_over:
            self._held = None
            return
        # Pushes that arrive while these go out join the end of the list; a
        # check that begins meanwhile holds what is left.
        while held and self._holds == 0 and self.thread is not None and not self._session_over:
            await self.send(text_data=held.pop(0))
        if self._holds == 0:
            self._held = None

    async def _push(self, html: str):
        if self._session_over:
            return
        if self._held is not None:
            self._held.append(html)
            return
        await self.send(text_data=html)

    # -- from the browser --

    async def receive(self, text_data=None, bytes_data=None):
        if self.thread is None:
            return
        try:
            await self._receive(text_data)
        except Exception as error:
            if outages.unreachable_service(error) != outages.DATABASE:
                raise
            # The socket stays (closing it dropped the person's action without
            # a word): they are told what was not done, to do it again.
            outages.note(logger, error, "a message of a page of thread %s was not acted on", self.thread.pk)
            data = _parse(text_data)
            if _is_a_message_with_its_id(data):
                await self.send(text_data=fragments.notice(DATABASE_AWAY_GOING_AGAIN, again=True))
                return
            await self._notice(await self._not_done(data))

    async def _not_done(self, data: dict | None) -> str:
        """What the person is told when the database did not answer their
        message. A Stop still stops a turn this process runs, if the socket's
        person could edit when it last checked: it needs no database, and the
        turn keeps what it wrote (its end is stored once the database is back)."""
        action = (data or {}).get("action")
        if action == "stop" and (self.access or 0) >= Access.EDIT and registry.stop_if_running_here(self.thread.pk):
            return DATABASE_AWAY_STOPPING
        return DATABASE_AWAY_NOT_DONE.get(action if isinstance(action, str) else None, DATABASE_AWAY_NOT_DONE[None])

    async def _receive(self, text_data):
        data = _parse(text_data)
        # A network can drop a socket with no close frame (a laptop asleep, a
        # Wi-Fi change): the page asks now and then, and reconnects when no
        # answer comes. The answer says nothing of the thread, so it needs
        # neither the session's check nor the database (docs/adr/0157).
        if data == ALIVE_CHECK:
            await self.send(text_data=ALIVE_ANSWER)
            return
        # A chat message checked first (no database): its turn's reads go in
        # the session's hop below.
        form = ChatMessageForm(data) if data is not None and "action" not in data else None
        sent = form.chat_message() if form is not None and form.is_valid() else None
        # The session may have ended since the socket opened: a socket must
        # not outlive a logout or a password change made elsewhere.
        if sent is not None:
            signed_in, before = await database_sync_to_async(_signed_in_and_before_a_turn)(
                session_key=self.session_key,
                user=self.scope["user"],
                thread_id=self.thread.pk,
                client_message_id=sent.client_message_id,
            )
        else:
            signed_in = await database_sync_to_async(session_signs_in)(session_key=self.session_key, user=self.scope["user"])
        if not signed_in:
            await self._end_session()
            return
        if sent is not None:
            await self._start_turn(sent, before=before)
            return
        if data is None:
            await self._notice(UNREADABLE_MESSAGE)
            return
        if data.get("action") == "stop":
            await self._stop()
            return
        if data.get("action") == "retry":
            form = RetryForm(data)
            if not form.is_valid():
                await self._notice(form.first_error())
                return
            await self._retry(form.cleaned_data["turn"])
            return
        if data.get("action") == "approval":
            form = ApprovalAnswerForm(data)
            if not form.is_valid():
                await self._notice(form.first_error())
                return
            await self._answer_approval(form.cleaned_data["turn"], form.cleaned_data["decision"])
            return
        if "action" in data:
            await self._notice("Unknown action.")
            return
        if form is not None:  # a message with no action, not valid
            await self._notice(form.first_error())

    async def _notice(self, message: str):
        await self.send(text_data=fragments.notice(message))

    async def _current_thread(self, level: Access = Access.EDIT, *, read: tuple | None = None):
        """The thread again, if the person still has `level` on it: it may
        have been deleted, or the person removed or made a viewer, since the
        socket opened (docs/adr/0084). Every message the socket takes is a
        write, so EDIT unless said otherwise. `read`: the thread and access
        as the caller read them in its own hop (thread_and_access_for_user)."""
        if read is None:
            read = await database_sync_to_async(thread_and_access_for_user)(user=self.scope["user"], thread_id=self.thread.pk)
        thread, self.access = read
        if thread is None:
            await self._lose_thread()
            return None
        if self.access < level:
            await self._notice(VIEW_ONLY_MESSAGE)
            return None
        return thread

    async def _lose_thread(self):
        await self._say_and_close(NOT_FOUND_MESSAGE, CLOSE_NOT_FOUND)
        # Nothing more reaches this socket, even before the browser answers the close.
        await self._leave_groups()
        self.thread = None

    async def thread_access(self, event):
        """Someone's access to the thread changed (a person removed, a role
        changed, the link revoked: conversations.sharing): this socket's
        person is asked again, and loses the thread at once if they lost it."""
        if self.thread is None or self.group is None:
            return
        if event.get("user_id") not in (None, self.scope["user"].pk):
            return
        before = self.access or 0
        # Until the check answers, the answer streaming in is held, not shown.
        self._hold()
        try:
            thread = await self._current_thread(level=Access.VIEW)
        finally:
            await self._release()
        if thread is None:
            return
        if self.access < before:
            await self.send(text_data=fragments.access_notice(ROLE_LOWERED_MESSAGE, access="viewer"))
        elif self.access > before:
            await self.send(text_data=fragments.access_notice(ROLE_RAISED_MESSAGE, access="editor"))

    async def _stop(self):
        thread = await self._current_thread()
        if thread is None:
            return
        if not await registry.request_stop(thread=thread, person=self.scope["user"]):
            # The page thought one was: it shows how the latest turn really
            # ended, and idle controls (a push it missed, docs/adr/0043).
            ended = await database_sync_to_async(registry.ended_html)(thread.pk)
            # The notice last: the turn's end clears notices said while it ran.
            await self.send(text_data=(ended or fragments.controls(running=False)) + fragments.notice("No turn is running."))

    async def _retry(self, turn: int):
        thread = await self._current_thread()
        if thread is None:
            return
        try:
            message, model, stored = await database_sync_to_async(retry_message)(thread=thread, turn=turn)
        except UserFacingError as exc:
            await self._notice(exc.message)
            return
        # The passage the turn asked about goes again, if the document still has it there.
        # A passage it no longer has there goes without it, and the message says so for good.
        selection, note = await database_sync_to_async(checked_selection)(thread=thread, raw=stored)
        try:
            # A model no longer offered to this person runs with their default (registry.start_turn).
            await registry.start_turn(
                thread=thread,
                user_message=message,
                model_name=model or None,
                retry_of=turn,
                selection=selection,
                selection_note=note,
                user=self.scope["user"],
            )
        except UserFacingError as exc:
            await self._notice(exc.message)

    async def _answer_approval(self, turn: int, decision: str):
        decisions = {"approve": approval_claims.APPROVED, "reject": approval_claims.REJECTED}
        thread = await self._current_thread()
        if thread is None:
            return
        try:
            await registry.answer_approval(thread=thread, turn=turn, decision=decisions[decision], person=self.scope["user"])
        except UserFacingError as exc:  # nothing waits (answered in another tab), or not a turn number
            await self._notice(exc.message)

    async def _start_turn(self, sent: ChatMessage, *, before: tuple):
        """`before`: what the message's turn needs read (`_before_a_turn`),
        read in the session check's hop."""
        read, stored, models = before
        thread = await self._current_thread(read=read)
        if thread is None:
            return
        if sent.client_message_id and await self._acknowledged_again(sent.client_message_id, stored=stored):
            return
        if not models:
            # Not a turn: no agent would see it, so nothing is stored (no
            # snapshot, no turn number) and the text stays in the box.
            await self.send(text_data=fragments.unsent(sent.text, ModelNotConfigured().message))
            return
        model = None
        if sent.model is not None:
            # Only a model this person may use (agent.catalogue), whatever the page sent.
            chosen = catalogue.find(models, sent.model)
            if chosen is None:
                then = "Choose another model in the Model selector and send again; your message is still in the box."
                message = await database_sync_to_async(catalogue.not_offered_message)(
                    self.scope["user"], sent.model, models, then=then
                )
                await self._notice(message)
                return
            model = chosen.key
        if sent.continue_from is not None:
            await self._continue_from(sent, model=model)
            return
        if sent.mode is not None and sent.mode != thread.mode:
            # The selector's own save may still be on its way: the message
            # says which mode it was sent in, and the thread remembers it.
            thread = await database_sync_to_async(thread_set_mode)(thread=thread, mode=sent.mode)
        # A selection the document no longer has as selected is left out; the
        # message says so under it, for good (not a notice the turn's end clears).
        selection, note = await _checked_selection(thread=thread, raw=sent.selection)
        try:
            turn_index = await registry.start_turn(
                thread=thread,
                user_message=sent.text,
                model_name=model,
                mode=sent.mode,
                selection=selection,
                selection_note=note,
                user=self.scope["user"],
                client_message_id=sent.client_message_id,
                models=models,
            )
        except MessageAlreadyStored:  # the same message, arrived twice at once
            await self._acknowledged_again(sent.client_message_id)
            return
        except UserFacingError as exc:  # TurnAlreadyRunning, or a message the guard refuses
            await self._notice(exc.message)
            return
        # Only the sender's composer is cleared, and only once the message is stored.
        await self.send(text_data=fragments.ack(turn_index))

    async def _acknowledged_again(self, client_message_id: str, *, stored: tuple | None | bool = False) -> bool:
        """The message was stored before (its page sent it again after a
        connection dropped with no ack, docs/adr/0126): the page is told the
        turn it began, as if just stored, and nothing else is done: no second
        turn, no mode or model changed again. `stored`: turn_of_sent_message
        as the caller read it (False: read here)."""
        if stored is False:
            stored = await database_sync_to_async(turn_of_sent_message)(
                person=self.scope["user"], client_message_id=client_message_id
            )
        if stored is None:
            return False
        thread_id, turn_index = stored
        if thread_id == self.thread.pk:
            await self.send(text_data=fragments.ack(turn_index))
            return True
        # "Continue from here" ran it in a new branch: the tab goes there, as it did the first time.
        branch, access = await database_sync_to_async(thread_and_access_for_user)(user=self.scope["user"], thread_id=thread_id)
        if branch is None:
            await self._notice(SENT_TO_A_GONE_THREAD)
            return True
        await self.send(text_data=fragments.ack(turn_index) + trajectory.navigate_html(branch))
        return True

    async def _continue_from(self, sent: ChatMessage, *, model: str | None):
        """A message sent from a turn's preview ("Continue from here"). Only
        now is the branch made, so looking at a turn never leaves an empty
        thread; the turn runs in the branch and this tab goes there, where
        it finds the turn so far (docs/adr/0016)."""
        user = self.scope["user"]
        try:
            source, turn = await database_sync_to_async(trajectory.continue_point)(
                user=user, thread_id=sent.continue_from[0], turn_index=sent.continue_from[1]
            )
            # Hidden until its turn begins (docs/adr/0045).
            branch = await database_sync_to_async(make_branch_for_turn)(
                source=source, after_turn=turn, user=user, reason=f"Continued from turn {turn}"
            )
        except UserFacingError as exc:  # not a turn of theirs; the branch refused or undone
            await self._notice(exc.message)
            return
        # The selection was made in this thread's document; the branch starts
        # from the document as it was after that turn.
        selection, note = await database_sync_to_async(checked_selection)(thread=branch, raw=sent.selection)
        try:
            turn_index = await registry.start_turn(
                thread=branch,
                user_message=sent.text,
                model_name=model,
                mode=sent.mode,
                selection=selection,
                selection_note=note,
                user=self.scope["user"],
                activate_branch=True,
                client_message_id=sent.client_message_id,
            )
        except BaseException as exc:
            # A branch without the turn it was made for would be an empty copy.
            await database_sync_to_async(discard_branch)(branch.pk)
            if isinstance(exc, MessageAlreadyStored):  # the other copy's branch has it
                await self._acknowledged_again(sent.client_message_id)
                return
            if not isinstance(exc, UserFacingError):
                raise
            await self._notice(exc.message)
            return
        await self.send(text_data=fragments.ack(turn_index) + trajectory.navigate_html(branch, note=note))

    # -- from the live layer --

    async def deliver(self, html: str):
        """This process's pushes, handed over directly (conversations.live)."""
        await self._push(html)

    async def thread_fragment(self, event):
        """Another process's pushes, handed over by this process's relay
        (conversations.live), which keeps our own process's back. A gap in a
        process's sequence numbers means a message was lost on the way: the
        page reloads the workspace it shows (the chat's end-of-turn fragments
        replace a turn whole, so a lost token there heals itself).

        What the page reloads shows a running turn as it was drawn: a token
        lost mid-answer would stay a hole until the turn's end. So the page
        catches up with the turn as when it connected (`_catch_up`), in a
        task of its own: the relay that hands this over serves every page
        of the thread. A message for one page (`to`: the turn so far it
        asked for, turns.elsewhere) is taken by that page only; the others
        count its number all the same."""
        origin, seq = event.get("origin"), event.get("seq")
        to = event.get("to")
        html = event["html"] if to is None or to == self.channel_name else ""
        if origin is not None and isinstance(seq, int):
            last = self._seen.get(origin)
            self._seen[origin] = seq
            if last is not None and seq != last + 1:
                logger.warning("thread %s: %d message(s) from process %s lost", self.thread.pk, seq - last - 1, origin)
                await self._push(html + RESYNC)
                if self._catching_up is None or self._catching_up.done():
                    # From an empty context: the relay's task may carry a
                    # writer's worker thread's (as StaffThreadConsumer._changed).
                    self._catching_up = asyncio.get_running_loop().create_task(
                        self._catch_up_after_a_loss(), context=contextvars.Context()
                    )
                return
        if html:
            await self._push(html)


class StaffThreadConsumer(PageSocketConsumer):
    """The staff read-only view's socket (conversations.staff_view): it joins
    the thread like an owner's page, but only listens. Whatever the thread's
    pages are sent, it answers by sending its page the view's content again,
    once the thread has been quiet for REFRESH_SECONDS or at most that long
    after the first change (a streaming answer refreshes it about once a
    second, not per token). Nothing it is sent does anything.

    Close codes: 4401 not logged in (or the session ended), 4404 not staff
    allowed to view threads, or no such thread; like the owner's socket,
    after a notice."""

    REFRESH_SECONDS = 1.0
    thread_id = None
    group = None
    session_group = None
    _refresh = None
    _session_over = False

    async def connect(self):
        publisher.attach()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self._refuse(LOGIN_MESSAGE, CLOSE_UNAUTHENTICATED)
            return
        if not _opened_by_its_page_person(self.scope):
            await self._refuse(SOMEONE_ELSE_MESSAGE, CLOSE_SOMEONE_ELSE)
            return
        thread_id = self.scope["url_route"]["kwargs"]["thread_id"]
        allowed = await database_sync_to_async(staff_view.may_view)(user)
        thread = await database_sync_to_async(staff_view.thread_for_staff)(thread_id) if allowed else None
        if thread is None:
            await self._refuse(STAFF_NOT_FOUND_MESSAGE, CLOSE_NOT_FOUND)
            return
        self.thread_id = thread.pk
        self.group = group_name(thread.pk)
        self.session_key = self.scope["session"].session_key
        self.session_group = session_group(self.session_key)
        await self.channel_layer.group_add(self.session_group, self.channel_name)
        await self.accept()
        await publisher.join(thread.pk, self)

    async def _refuse(self, message: str, code: int):
        await self.accept()
        await self.send(text_data=fragments.notice(message))
        await self.close(code=code)

    async def disconnect(self, code):
        if self.group:
            self.group = None
            if self._refresh is not None:
                self._refresh.cancel()
            await publisher.leave(self.thread_id, self)
            await _leave_session_group(self)

    async def receive(self, text_data=None, bytes_data=None):
        """Read-only: nothing a staff page sends changes anything."""

    async def thread_access(self, event):
        """People's access to the thread changed; staff's comes from their permissions."""

    async def session_ended(self, event):
        if self._session_over:  # told twice (a logout, then its session's deletion)
            return
        self._session_over = True
        await self.send(text_data=fragments.notice(LOGIN_MESSAGE))
        await self.close(code=CLOSE_UNAUTHENTICATED)

    async def session_renewed(self, event):
        await self.channel_layer.group_discard(self.session_group, self.channel_name)
        self.session_key = event["session_key"]
        self.session_group = session_group(self.session_key)
        await self.channel_layer.group_add(self.session_group, self.channel_name)

    # -- the thread changed --

    async def deliver(self, html: str):
        """This process's pushes to the thread (conversations.live)."""
        self._changed()

    async def thread_fragment(self, event):
        """Another process's pushes, handed over by this process's relay."""
        self._changed()

    def _changed(self):
        if self._refresh is None or self._refresh.done():
            # From an empty context: a push's delivery may run in one a
            # writer's worker thread handed over (sync_to_async's), where
            # this task's own database calls would be refused as nested.
            self._refresh = asyncio.get_running_loop().create_task(self._send_content(), context=contextvars.Context())

    async def _send_content(self):
        await asyncio.sleep(self.REFRESH_SECONDS)
        user = self.scope["user"]
        signed_in = await database_sync_to_async(session_signs_in)(session_key=self.session_key, user=user)
        if not signed_in:
            await self.session_ended({})
            return
        # Staff rights may have been taken away since the page opened.
        allowed = await database_sync_to_async(_still_may_view)(user.pk)
        html = await database_sync_to_async(staff_view.render_live_content)(thread_id=self.thread_id) if allowed else ""
        if not html:
            await self.send(text_data=fragments.notice(STAFF_NOT_FOUND_MESSAGE))
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.send(text_data=encodable(html))


def _still_may_view(user_id) -> bool:
    return staff_view.may_view(get_user_model().objects.filter(pk=user_id).first())


async def _leave_session_group(consumer) -> None:
    try:
        await consumer.channel_layer.group_discard(consumer.session_group, consumer.channel_name)
    except Exception as error:
        # The layer forgets the member after its group_expiry.
        outages.note(logger, error, "a closed page could not leave its session's group")


async def _cache_call(function, *args):
    # The cache (Redis, or memory), not the database: off the consumers' shared database thread.
    return await sync_to_async(function, thread_sensitive=False)(*args)


def _uncount_page(user_id, windows) -> None:
    current = ratelimit.socket_window()
    for window in windows:
        if window >= current - 1:
            ratelimit.socket_count(user_id, window, -1)


def _signed_in_and_before_a_turn(*, session_key, user, thread_id, client_message_id: str) -> tuple[bool, tuple | None]:
    """Whether the session still signs the person in (sessions.session_signs_in)
    and, when it does, `_before_a_turn`: one database hop for a chat message."""
    if not session_signs_in(session_key=session_key, user=user):
        return False, None
    return True, _before_a_turn(user=user, thread_id=thread_id, client_message_id=client_message_id)


def _before_a_turn(*, user, thread_id, client_message_id: str) -> tuple:
    """(the thread and the person's access, thread_and_access_for_user; the
    turn an earlier copy of the message began, turn_of_sent_message, or None;
    the models the person may use, agent.catalogue), in one database hop."""
    read = thread_and_access_for_user(user=user, thread_id=thread_id)
    stored = turn_of_sent_message(person=user, client_message_id=client_message_id) if client_message_id else None
    return read, stored, catalogue.choices_for(user)


async def _checked_selection(*, thread, raw) -> tuple:
    """checked_selection; in a database hop only for a selection it reads the
    document for (none sent: no hop)."""
    if raw in (None, "", {}):
        return checked_selection(thread=thread, raw=raw)
    return await database_sync_to_async(checked_selection)(thread=thread, raw=raw)


def _open_thread(*, user, thread_id):
    """(whether the account waits for approval, the thread or None, the
    person's access to it), in one database hop."""
    if is_waiting(user):
        return True, None, None
    return (False, *thread_and_access_for_user(user=user, thread_id=thread_id))


# The page's liveness check and its answer (static/js/live.js). Anything
# else with this action (a field more) is not one: it gets "Unknown action."
# like any action the consumer does not know.
ALIVE_CHECK = {"action": "alive"}
ALIVE_ANSWER = "<!-- alive -->"


def _is_a_message_with_its_id(data: dict | None) -> bool:
    return bool(data) and "action" not in data and isinstance(data.get("client_message_id"), str)


def _parse(text_data) -> dict | None:
    if not isinstance(text_data, str):
        return None
    try:
        data = json.loads(text_data)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        return None
    return data if isinstance(data, dict) else None
