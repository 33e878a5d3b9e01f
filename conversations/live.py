"""The live layer: what changed, pushed to every open tab of the thread.

Two sources feed it. The write services announce their changes after
commit (workspace.events); `on_changes` renders the changed panels with
the same partials the page and the HTMX views use and publishes them to
the thread's channel group. The turn runner publishes the chat fragments
of a running turn. Consumers (conversations.consumers) relay what reaches
the group to their socket.

`Publisher` is the one way out. It is safe to call from any thread: the
write services run in worker threads (views, tools), the runner in the
event loop. Per thread group it keeps fragments in order and sends them
as few messages as it can: one send is in flight per group at a time, and
what arrives meanwhile (or within `WINDOW_SECONDS` of the last send) goes
out together with the next one, which keeps the message count per turn
small under load without delaying a token when the server is idle
(docs/adr/0007). Text for the end of one element (a streaming answer's
tokens, `publish_append`) that goes out in one send goes as one fragment,
however many tokens it holds: a page's work follows the messages it is
sent, not the model's speed (docs/adr/0104).

The open pages of this process are handed their fragments directly (the
consumers register with `join`), after the copy for the other processes is
sent. That copy goes by Redis pub/sub when the channel layer is Redis's
(conversations.live_bus: one round trip, pushed at once), through the layer
otherwise, and only when there may be other processes: with the in-memory
layer (one process) a send goes to the layer only if something other than
this process listens there. Each such message carries this process's id
and a per-group sequence number, so a page can tell when one went missing
(docs/adr/0009).

A process is in a thread's channel group once, however many of its pages
show the thread: one channel of its own (the relay) joins the groups its
pages show (and, with Redis, subscribes to their fragments) and hands what
arrives to those pages, as this process's own pushes are. A frame of a thread open in fifty tabs is then one message per
process, received once, not fifty wake-ups; the relay drops its own
process's frames (the pages have them) unread by any page (docs/adr/0091).

No message, to a page or through the layer, is larger than
MESSAGE_MAX_BYTES: queued fragments are packed into messages up to that
size, and a single fragment too big for one (a long answer rendered whole,
the document near its limit) is replaced by its `too_big` stand-in, a small
patch that makes the pages fetch the same thing over HTTP. A send that
fails is logged and followed by such a patch, so an open page never keeps
believing what is no longer so (docs/adr/0043).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import uuid
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from agent import catalogue
from workspace import panels
from workspace.events import Change
from workspace.models import Thread
from workspace.selectors import document_version
from workspace.text import encodable, utf8_size

from . import live_bus, outages
from .selectors import family_ids, feedback_counts, open_pages_by_person, open_pages_of, turn_versions_for

logger = logging.getLogger("haico.conversations.live")

FRAGMENT_EVENT = "thread.fragment"
# A send to a group waits this long after the previous one, so a burst of
# tokens goes out as one message.
WINDOW_SECONDS = 0.025
# A group's sender waits this long for more before it ends: a streaming turn
# keeps one sender instead of starting one per token.
IDLE_SECONDS = 2.0
# The relay's membership of its groups is renewed this often: channel layers
# forget a group member after a while (group_expiry, a day in settings).
RENEW_GROUP_SECONDS = 3600
# After a failed receive the relay tries again this much later (Redis restarting).
RELAY_RETRY_SECONDS = 1.0
# Channel-layer group sends in flight at once, all groups together: each
# holds a Redis connection (settings.REDIS_MAX_CONNECTIONS must stay above
# this). Fragments by pub/sub need one connection per Redis host (live_bus).
LAYER_SENDS_AT_ONCE = 64
# The most one message to a page (a WebSocket frame) or through the channel
# layer may carry, in UTF-8 bytes. Daphne refuses to send a WebSocket message
# over 1 MiB (the page never gets it), and a message this size is still a
# small fraction of what the layer and the page handle comfortably.
MESSAGE_MAX_BYTES = 256 * 1024
# The most text consecutive appends to one element are joined into, well
# under a message: a joined fragment never needs its stand-in.
APPEND_JOIN_MAX_CHARS = 64 * 1024
CHAT_FRAGMENTS = "conversations/fragments/turn.html"
ACTIVITY_TEMPLATE = "conversations/panels/activity.html"
LIVE_PATCHES = "conversations/fragments/live.html"
FEEDBACK_CONTROL = "conversations/fragments/feedback.html#control"


def _patch(kind: str) -> str:
    return f'<div hx-swap-oob="beforeend:#live-inbox"><template data-live-patch="{kind}"></template></div>'


# The page asks for the whole workspace again (workspace/live/) ...
RESYNC_WORKSPACE = _patch("resync")
# ... or for the chat from the latest turn it shows on (static/js/live.js).
RESYNC_CHAT = _patch("chat")
# Both: what a page is sent in place of a push that did not fit or may have been lost.
RESYNC = RESYNC_WORKSPACE + RESYNC_CHAT


def document_resync(version: int) -> str:
    """The stand-in for a push of the document alone, too big for one
    message: it names the document's version, so a page that already has
    it (the tab whose save wrote it, from the save's answer) reads nothing
    again; any other page reads the workspace (static/js/document_editor.js,
    docs/adr/0043). Nothing of the chat changed: the chat is not read."""
    return (
        '<div hx-swap-oob="beforeend:#live-inbox"><template data-live-patch="resync" '
        f'data-surfaces="document" data-version="{int(version)}"></template></div>'
    )


def message_size(html: str) -> int:
    """The size of `html` on the wire (UTF-8 bytes)."""
    return utf8_size(html)


def fits_one_message(html: str) -> bool:
    return message_size(html) <= MESSAGE_MAX_BYTES


@functools.lru_cache(maxsize=4096)
def group_name(thread_id) -> str:
    """The channel group of a thread (ASCII, well under the 100-character limit)."""
    return f"thread.{uuid.UUID(str(thread_id)).hex}"


@dataclass(frozen=True)
class Append:
    """HTML for the end of the page's element `target_id` (publish_append)."""

    target_id: str
    html: str

    def fragment(self) -> str:
        return f'<div id="{self.target_id}" hx-swap-oob="beforeend">{self.html}</div>'


def joined_appends(items: list[tuple[object | None, str | Append, str]]) -> list[tuple[object | None, str, str]]:
    """`items` as fragments, each run of appends to the same element for the
    same recipients joined into one (up to APPEND_JOIN_MAX_CHARS): what the
    page does with the joined one is what it did with them one by one."""
    out: list[tuple[object | None, str, str]] = []
    run: list[str] = []  # the html of the appends being joined, all to one element for one recipient
    run_item: tuple[object | None, str, str] = (None, "", RESYNC)  # (recipient, element, stand-in)
    run_chars = 0
    for consumer, html, too_big in items:
        if isinstance(html, Append) and run and run_item[:2] == (consumer, html.target_id):
            if run_chars + len(html.html) <= APPEND_JOIN_MAX_CHARS:
                run.append(html.html)
                run_chars += len(html.html)
                continue
        if run:
            out.append((run_item[0], Append(run_item[1], "".join(run)).fragment(), run_item[2]))
            run = []
        if isinstance(html, Append):
            run, run_item, run_chars = [html.html], (consumer, html.target_id, too_big), len(html.html)
        else:
            out.append((consumer, html, too_big))
    if run:
        out.append((run_item[0], Append(run_item[1], "".join(run)).fragment(), run_item[2]))
    return out


@dataclass(frozen=True)
class PageElsewhere:
    """A page of another process, by its channel name (`publish_to_page`)."""

    channel_name: str


@dataclass
class _Outbox:
    # (one consumer, or None for the whole group, html or an Append, its stand-in if too big), in order.
    items: list[tuple[object | None, str | Append, str]] = field(default_factory=list)
    task: asyncio.Task | None = None
    last_sent: float = float("-inf")
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class Publisher:
    def __init__(self):
        self.origin = uuid.uuid4().hex[:12]
        self.loop: asyncio.AbstractEventLoop | None = None
        self._outboxes: dict[str, _Outbox] = {}
        self._seq: dict[str, int] = {}
        self._members: dict[str, set] = {}  # group -> this process's consumers in it
        self._member_channels: dict[str, set] = {}  # group -> their channel names
        self._layer_slots: asyncio.Semaphore | None = None
        self._publishing = live_bus.Publishing()
        # group -> whether another process took its last fragment (`_note_reach`)
        self._reached_others: dict[str, bool] = {}
        self._relay = _Relay(self)

    def attach(self) -> None:
        """Send from the running loop (the server's). Called by every async
        entry point; a new loop (a test's) starts afresh."""
        loop = asyncio.get_running_loop()
        if loop is not self.loop:
            self.loop = loop
            self._outboxes = {}
            self._members = {}
            self._member_channels = {}
            self._layer_slots = asyncio.Semaphore(LAYER_SENDS_AT_ONCE)
            self._publishing = live_bus.Publishing()
            self._reached_others = {}
            self._relay = _Relay(self)

    async def join(self, thread_id, consumer) -> None:
        """`consumer` (an open page in this process) gets the thread's
        fragments and events, this process's and, through the relay, the
        other processes' (`thread_fragment`, `thread_access`)."""
        group = group_name(thread_id)
        self._members.setdefault(group, set()).add(consumer)
        self._member_channels.setdefault(group, set()).add(consumer.channel_name)
        await self._relay.follow(group)

    async def leave(self, thread_id, consumer) -> None:
        group = group_name(thread_id)
        members = self._members.get(group)
        if members is not None:
            members.discard(consumer)
            self._member_channels[group].discard(consumer.channel_name)
            if not members:
                del self._members[group], self._member_channels[group]
        await self._relay.unfollow(group)

    def members(self, group: str) -> list:
        """This process's open pages of `group` now."""
        return list(self._members.get(group, ()))

    def anyone_listens(self, thread_id) -> bool:
        """Whether a push to the thread may reach a page: one of this
        process's, or, through the channel layer, anything else (another
        process's pages; any other listener of an in-memory layer)."""
        group = group_name(thread_id)
        return bool(self._members.get(group)) or self._others_listen(get_channel_layer(), group)

    def open_channels(self) -> set[str]:
        """The channel names of every page of this process that joined a thread."""
        return set().union(*self._member_channels.values())

    # -- entry points ------------------------------------------------------

    def publish(self, thread_id, html: str, *, too_big: str = RESYNC) -> None:
        """Send `html` to every open tab of the thread, after what is already
        queued; `too_big` instead if `html` alone does not fit one message."""
        if html:
            self._submit(group_name(thread_id), None, html, too_big)

    def publish_append(self, thread_id, target_id: str, html: str) -> None:
        """Add `html` (escaped) at the end of the element `target_id` of every
        open tab of the thread, after what is already queued; appends to one
        element that go out together are joined into one fragment."""
        if html:
            self._submit(group_name(thread_id), None, Append(target_id, html), RESYNC)

    def publish_parts(self, thread_id, parts: list[tuple[str, str]]) -> None:
        """Send each (html, its stand-in if too big) of `parts`, in order, to
        every open tab of the thread, in one message where they fit: a part
        too big is replaced by its stand-in, and the parts after it still
        arrive (a turn's answer, then its end: conversations.turns.slot)."""
        group = group_name(thread_id)
        items: list[tuple[object | None, str | Append, str]] = [
            (None, encodable(html), too_big) for html, too_big in parts if html
        ]
        if not items:
            return
        loop = self.loop
        if loop is None or loop.is_closed():
            async_to_sync(self._send)(group, items)
            return
        for _consumer, html, too_big in items:
            self._submit(group, None, html, too_big)

    def publish_to_consumer(self, thread_id, consumer, html: str, *, too_big: str = RESYNC) -> None:
        """Send `html` to one consumer of this process, after everything
        already queued for its thread (a page that joined mid-turn gets the
        turn so far behind the fragments that were on their way)."""
        if html:
            self._submit(group_name(thread_id), consumer, html, too_big)

    def publish_to_page(self, thread_id, channel_name: str, html: str, *, too_big: str = RESYNC) -> None:
        """Send `html` to one page of the thread, of whichever process, after
        everything already queued for the thread: it goes with the thread's
        fragments to the other processes, in their order and numbered with
        them, and only the page named takes it (conversations.consumers).
        For a page that joined while this process runs the thread's turn,
        the turn so far (conversations.turns.elsewhere)."""
        if html:
            self._submit(group_name(thread_id), PageElsewhere(channel_name), html, too_big)

    def _submit(self, group: str, consumer, html: str | Append, too_big: str) -> None:
        # One string no socket (or Redis) can encode must not close every
        # page of the thread: lone surrogates become U+FFFD here, once.
        html = Append(html.target_id, encodable(html.html)) if isinstance(html, Append) else encodable(html)
        loop = self.loop
        if loop is None or loop.is_closed():
            # No server loop in this process (a management command, the
            # test client): send now, synchronously.
            async_to_sync(self._send)(group, [(consumer, html, too_big)])
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._enqueue(group, consumer, html, too_big)
        else:
            loop.call_soon_threadsafe(self._enqueue, group, consumer, html, too_big)

    # -- in the loop -------------------------------------------------------

    def _enqueue(self, group: str, consumer, html: str | Append, too_big: str = RESYNC) -> None:
        outbox = self._outboxes.get(group)
        if outbox is None:
            outbox = self._outboxes[group] = _Outbox()
        outbox.items.append((consumer, html, too_big))
        if outbox.task is None:
            outbox.task = asyncio.get_running_loop().create_task(self._drain(group, outbox))
        else:
            outbox.wake.set()

    async def _drain(self, group: str, outbox: _Outbox) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                if not outbox.items:
                    outbox.wake.clear()
                    try:
                        async with asyncio.timeout(IDLE_SECONDS):
                            await outbox.wake.wait()
                    except TimeoutError:
                        if not outbox.items:
                            return
                wait = outbox.last_sent + WINDOW_SECONDS - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                items, outbox.items = outbox.items, []
                await self._send(group, items)
                outbox.last_sent = loop.time()
        finally:
            outbox.task = None
            if self._outboxes.get(group) is outbox and not outbox.items:
                del self._outboxes[group]
                # Kept while a page here shows the thread: a turn that
                # pauses longer than IDLE_SECONDS goes on as it was.
                self.forget_reach(group)

    async def _send(self, group: str, items: list[tuple[object | None, str | Append, str]]) -> None:
        """Consecutive items for the same recipients (the group, or one
        consumer) go out packed into as few messages as fit
        MESSAGE_MAX_BYTES, in order."""
        batch: list[str] = []
        size = 0
        target = None
        for consumer, html, too_big in joined_appends(items):
            html, html_size = _fitting(group, html, too_big)
            if batch and (consumer is not target or size + html_size > MESSAGE_MAX_BYTES):
                await self._deliver(group, target, "".join(batch))
                batch, size = [], 0
            target = consumer
            batch.append(html)
            size += html_size
        if batch:
            await self._deliver(group, target, "".join(batch))

    async def _deliver(self, group: str, consumer, html: str) -> None:
        if consumer is None:
            await self._to_group(group, html)
        elif isinstance(consumer, PageElsewhere):
            await self._to_page(group, consumer.channel_name, html)
        else:
            await self._to_consumer(consumer, html)

    async def _to_page(self, group: str, channel_name: str, html: str) -> None:
        """`html` for one page: handed over if it is one of ours (our relay
        drops our own frames), else with the thread's fragments, for it alone."""
        for consumer in list(self._members.get(group, ())):
            if consumer.channel_name == channel_name:
                await self._to_consumer(consumer, html)
                return
        await self._to_other_processes(get_channel_layer(), group, html, to=channel_name)

    async def _to_group(self, group: str, html: str) -> None:
        layer = get_channel_layer()
        if self._others_listen(layer, group):
            if live_bus.carries(layer) and not self._reached_others.get(group, False):
                # No other process is known to take the group's fragments
                # (none took the last one, or none was sent yet): this
                # process's pages first, and the copy for the others (in
                # order, live_bus) is not waited for. A tab that opens the
                # thread on another server meanwhile gets it all the same,
                # and Redis's answer sends the next fragment first again
                # (docs/adr/0168, docs/adr/0171).
                self._publish_unawaited(layer, group, html)
            else:
                # The other processes' copy first, before this process's
                # pages are handed theirs: a page's send does not yield to
                # the loop, so a publish started alongside would reach Redis
                # only after every local socket's send, and a tab on another
                # server, which has the longer way to go, would wait for
                # them all as well (docs/adr/0094).
                await self._to_other_processes(layer, group, html)
        for consumer in list(self._members.get(group, ())):
            await self._to_consumer(consumer, html)

    async def _to_other_processes(self, layer, group: str, html: str, *, to: str | None = None) -> None:
        if not await self._to_layer(layer, group, html, to=to):
            # The other processes' pages would notice the gap in the sequence
            # numbers only with the next message; this one tells them now,
            # if the layer takes it (conversations.consumers).
            await self._to_layer(layer, group, RESYNC)

    def _message(self, group: str, html: str, *, to: str | None = None) -> dict:
        seq = self._seq[group] = self._seq.get(group, 0) + 1
        message = {"type": FRAGMENT_EVENT, "group": group, "html": html, "origin": self.origin, "seq": seq}
        if to is not None:
            message["to"] = to  # one page's (publish_to_page): the others only count its number
        return message

    async def _to_layer(self, layer, group: str, html: str, *, to: str | None = None) -> bool:
        message = self._message(group, html, to=to)
        try:
            if live_bus.carries(layer):
                self._note_reach(group, await self._publishing.publish(layer, group, message))
            else:
                async with self._layer_slots or asyncio.Semaphore(1):
                    await layer.group_send(group, message)
        except Exception as error:
            outages.note(logger, error, "could not send %d characters to %s", len(html), group)
            return False
        outages.answered(outages.REDIS)
        return True

    def _publish_unawaited(self, layer, group: str, html: str) -> None:
        taken = self._publishing.send(layer, group, self._message(group, html))
        taken.add_done_callback(lambda done: self._published(layer, group, html, done))

    def _published(self, layer, group: str, html: str, taken: asyncio.Future) -> None:
        error = taken.exception()
        if error is None:
            self._note_reach(group, taken.result())
            outages.answered(outages.REDIS)
            return
        outages.note(logger, error, "could not send %d characters to %s", len(html), group)
        if html != RESYNC:
            # As `_to_other_processes`: the other processes' pages are told now.
            self._publish_unawaited(layer, group, RESYNC)

    def _note_reach(self, group: str, taken_by: int) -> None:
        """Whether a process other than this one took the group's fragment:
        Redis counts the subscribers it handed it to, this process's relay
        among them while a page of the thread is open here. Only which copy
        goes first depends on it (`_to_group`). Kept while the group is in
        use here, so an answer that comes later leaves nothing behind."""
        if self._in_use(group):
            self._reached_others[group] = taken_by > (1 if group in self._relay.groups else 0)

    def forget_reach(self, group: str) -> None:
        """Drop what Redis said of the group once it is no longer in use here
        (its sender ended, or the relay left it)."""
        if not self._in_use(group):
            self._reached_others.pop(group, None)

    def _in_use(self, group: str) -> bool:
        """The group has a sender here, or a page here shows its thread."""
        return group in self._outboxes or group in self._relay.groups

    def _others_listen(self, layer, group: str) -> bool:
        """Whether the layer may reach something our consumers are not: other
        processes (any other layer), or other listeners of an in-memory one."""
        if not isinstance(layer, InMemoryChannelLayer):
            return True
        listening = layer.groups.get(group)
        if not listening:
            return False
        return any(name != self._relay.channel for name in listening)

    async def _to_consumer(self, consumer, html: str) -> None:
        try:
            await consumer.deliver(html)
        except Exception:
            logger.exception("could not send %d characters to a page of %s", len(html), consumer)
            if html == RESYNC:
                return
            try:
                # A page that missed this must not go on showing what it replaced.
                await consumer.deliver(RESYNC)
            except Exception:
                logger.warning("could not tell a page of %s to reload what it missed", consumer)


class _Relay:
    """This process's one member of the channel groups its pages show: what
    another process sends a thread's group reaches this process once and is
    handed to each of its pages of the thread here. A fragment is handed over
    in order, in the relay's task (`thread_fragment`, which notices a gap in
    a process's sequence numbers); any other event (`thread_access`) is
    passed on to each page's own channel. This process's own fragments are
    dropped here, so no page sees them twice: they were handed over directly."""

    def __init__(self, publisher: Publisher):
        self.publisher = publisher
        self.channel: str | None = None
        self.groups: set[str] = set()  # the groups the channel is in
        self._lock = asyncio.Lock()
        self._receiver: asyncio.Task | None = None
        self._renewal: asyncio.Task | None = None
        # With Redis, other processes' fragments come by pub/sub (conversations.live_bus).
        self._fragments: live_bus.Subscriber | None = None

    async def follow(self, group: str) -> None:
        """Be in `group` (a page of this process shows its thread)."""
        if group in self.groups:
            return
        async with self._lock:
            if group in self.groups or not self.publisher.members(group):
                return
            layer = get_channel_layer()
            if self.channel is None:
                # The layer's own prefix: a process's channels share one
                # Redis key that one receive at a time reads (channels-redis);
                # a prefix of its own would wait for the pages' reads to time out.
                self.channel = await layer.new_channel()
            if live_bus.carries(layer):
                if self._fragments is None:
                    self._fragments = live_bus.Subscriber(layer, self._hand_over_fragment)
                # Subscribed before the group is joined: nothing published
                # after the page joined is missed.
                await self._fragments.subscribe(group)
            await layer.group_add(group, self.channel)
            self.groups.add(group)
            if self._receiver is None:
                # From an empty context: the relay outlives the page whose
                # connect started it and must not carry that page's context
                # (asgiref's markers of whose sync thread it may use).
                loop = asyncio.get_running_loop()
                self._receiver = loop.create_task(self._receive(layer), context=contextvars.Context())
                self._renewal = loop.create_task(self._renew(layer), context=contextvars.Context())

    async def unfollow(self, group: str) -> None:
        """Leave `group` if no page of this process shows its thread any more;
        stop receiving once no page is open."""
        async with self._lock:
            if group not in self.groups or self.publisher.members(group):
                return
            self.groups.discard(group)
            self.publisher.forget_reach(group)
            try:
                await get_channel_layer().group_discard(group, self.channel)
                if self._fragments is not None:
                    await self._fragments.unsubscribe(group)
            except Exception as error:
                # What still arrives for the group finds no page and is dropped.
                outages.note(logger, error, "the relay could not leave %s", group)
            if not self.groups:
                for task in (self._receiver, self._renewal):
                    if task is not None:
                        task.cancel()
                self._receiver = self._renewal = None
                fragments, self._fragments = self._fragments, None
                if fragments is not None:
                    await fragments.close()

    async def _receive(self, layer) -> None:
        while True:
            try:
                message = await layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if asyncio.current_task().cancelling():
                    # A cancelled receive can end in another error
                    # (channels-redis checks its lock as it unwinds): stop all the same.
                    raise
                outages.note(logger, error, "the relay could not receive; trying again")
                await asyncio.sleep(RELAY_RETRY_SECONDS)
                # Redis may have restarted empty, the groups' members gone
                # while this process's pages stayed open.
                await self._rejoin(layer)
                continue
            await self._hand_over(layer, message)

    async def _hand_over(self, layer, message: dict) -> None:
        kind = message.get("type")
        group = message.get("group")
        if kind == FRAGMENT_EVENT:
            await self._hand_over_fragment(message)
            return
        # Anything else (an access change) is rare: each page takes it in its
        # own task, in turn with what its socket receives, as if it were a
        # member of the group itself.
        for page in self.publisher.members(group):
            try:
                await layer.send(page.channel_name, message)
            except Exception:
                logger.exception("could not hand a %s of %s to a page", kind, group)

    async def _hand_over_fragment(self, message: dict) -> None:
        if message.get("type") != FRAGMENT_EVENT or message.get("origin") == self.publisher.origin:
            return
        group = message.get("group")
        for page in self.publisher.members(group):
            try:
                await page.thread_fragment(message)
            except Exception:
                logger.exception("could not hand a fragment of %s to a page", group)

    async def _renew(self, layer) -> None:
        while True:
            await asyncio.sleep(RENEW_GROUP_SECONDS)
            await self._rejoin(layer)

    async def _rejoin(self, layer) -> None:
        """Add the channel to its groups again (adding is idempotent)."""
        for group in list(self.groups):
            try:
                await layer.group_add(group, self.channel)
            except Exception as error:
                outages.note(logger, error, "the relay could not renew its membership of %s", group)
            else:
                outages.answered(outages.REDIS)


def _fitting(group: str, html: str, too_big: str) -> tuple[str, int]:
    """`html` if it fits one message, else its stand-in; with its size."""
    size = message_size(html)
    if size <= MESSAGE_MAX_BYTES:
        return html, size
    stand_in = too_big or RESYNC
    logger.info("a push of %d bytes to %s is too big for one message; its pages fetch it instead", size, group)
    return stand_in, message_size(stand_in)


publisher = Publisher()


# --- change events -> pushes --------------------------------------------------


def render_value_patch(target: str, value: str) -> str:
    """Set the value of the page's element `target` (a selector) in place."""
    return render_to_string(f"{LIVE_PATCHES}#value", {"target": target, "value": value})


def render_swap_patch(html: str, *, unless: str = "") -> str:
    """Put `html`'s elements in place of the page's elements with their ids,
    where the page has them (and they do not match the selector `unless`)."""
    return render_to_string(f"{LIVE_PATCHES}#swap", {"html": mark_safe(html), "unless": unless})


def render_mode_patch(thread: Thread) -> str:
    return render_value_patch("chat-mode", thread.mode)


def render_changes(thread: Thread, changes: list[Change]) -> str:
    """What brings an open page of `thread` up to date with `changes`: the
    workspace's patches (workspace.panels), the thread's title or its
    deletion, and its Mode selector (its value set in place). Not the Model
    selector: each person is offered their own models (`publish_model_choice`).

    RESYNC when the document's patch or a new artifact's panel cannot fit
    one message: what the publisher would send in place of the whole push,
    told before anything is rendered, so an autosave of a long document or
    a big new table does not render what would be thrown away
    (docs/adr/0043, docs/adr/0141)."""
    html = panels.render_changes_within(thread, changes, max_bytes=MESSAGE_MAX_BYTES)
    if html is None or (not fits_one_message(html) and any(change.surface == "document" for change in changes)):
        logger.info("the push of %s is surely too big for one message; its pages fetch it instead", thread.pk)
        if {change.surface for change in changes} == {"document"}:
            return document_resync(document_version(thread=thread))
        return RESYNC
    if any(change.surface == "thread" for change in changes):
        if thread.is_deleted:
            html += render_to_string(f"{CHAT_FRAGMENTS}#notice", {"message": "This thread was deleted.", "oob": True})
        else:
            html += render_to_string(f"{CHAT_FRAGMENTS}#thread_title", {"title": thread.title})
    if any(change.surface == "mode" for change in changes):
        html += render_mode_patch(thread)
    return html


def on_changes(changes: list[Change]) -> None:
    """workspace.events subscriber: runs in the writer's thread right after commit."""
    by_thread: dict = {}
    for change in changes:
        by_thread.setdefault(change.thread_id, []).append(change)
    for thread_id, thread_changes in by_thread.items():
        if not publisher.anyone_listens(thread_id):
            # No page would get the patches: a page opened later is drawn
            # from the database, and one opening now checks on joining
            # whether it is behind (conversations.consumers).
            continue
        if any(change.surface in ("thread", "mode", "model") for change in thread_changes):
            thread = Thread.objects.filter(pk=thread_id).first()
            if thread is None:
                continue
        else:
            # The workspace's patches only need the thread's id; a query for
            # the row would cost as much as rendering them.
            thread = Thread(pk=thread_id)
        publisher.publish(thread_id, render_changes(thread, thread_changes))
        if any(change.surface == "model" for change in thread_changes) and thread.chat_model:
            publish_model_choice(thread)


def publish_model_choice(thread: Thread) -> None:
    """The thread's model as each open page's Model selector shows it: the
    one chosen, where that page's person is offered it, else their default,
    as the page shows once reloaded (conversations.chat.chosen_model). One
    person's models are not another's: an editor's page is never sent a
    model only the owner is offered (docs/adr/0084)."""
    from .chat import chosen_model  # here: the chat's modules import this one

    try:
        for person, channel_names in open_pages_by_person(thread_id=thread.pk).items():
            models = catalogue.choices_for(person)
            if len(models) < 2:
                continue  # the page has no Model selector
            html = render_value_patch("chat-model", chosen_model(thread, models))
            for channel_name in channel_names:
                publisher.publish_to_page(thread.pk, channel_name, html)
    except Exception:
        # Stored; a page that missed it shows the model when reloaded.
        logger.exception("could not push the model of %s", thread.pk)


# --- the chat's per-turn controls ----------------------------------------------


def render_feedback_count(*, thread_id, turn_index: int, count: int) -> str:
    """A turn's closed Feedback control with the number of entries left on
    it; a tab that has the region open keeps it as it is."""
    control = render_to_string(
        FEEDBACK_CONTROL, {"thread_id": thread_id, "turn_index": turn_index, "count": count, "focus": False}
    )
    return render_swap_patch(control, unless=".is-open")


def publish_feedback_count(*, thread_id, user, turn_index: int) -> None:
    """services.feedback_leave / feedback_remove's on-commit hook: the count
    in the open tabs of the person who left (or removed) it, and no one
    else's: one person's feedback is theirs alone (docs/adr/0084)."""
    try:
        pages = open_pages_of(thread_id=thread_id, user=user)
        if not pages:
            return
        count = feedback_counts(thread=Thread(pk=thread_id), user=user).get(turn_index, 0)
        html = render_feedback_count(thread_id=thread_id, turn_index=turn_index, count=count)
        for channel_name in pages:
            publisher.publish_to_page(thread_id, channel_name, html)
    except Exception:
        # Stored; a tab that missed it shows the count when the region closes or the page reloads.
        logger.exception("could not push the feedback count of turn %s of %s", turn_index, thread_id)


def render_turn_versions(*, turn_index: int, versions) -> str:
    """A turn's "‹ i/n ›" arrows (conversations.selectors.TurnVersions), to put in place."""
    nav = render_to_string(f"{CHAT_FRAGMENTS}#versions", {"turn_index": turn_index, "versions": versions})
    return render_swap_patch(nav)


def publish_turn_versions(*, thread_id, turn_index: int) -> None:
    """A branch ran its own turn `turn_index` (slot.turn_begin's on-commit
    hook): every thread of its family that now has several versions of that
    turn gets its arrows, in every open tab."""
    try:
        members = Thread.objects.filter(pk__in=family_ids(thread_id=thread_id), turn_index__gte=turn_index)
        for member in members.only("id", "owner_id", "turn_index", "is_deleted", "created_at"):
            versions = turn_versions_for(thread=member).get(turn_index)
            if versions is not None:
                publisher.publish(member.pk, render_turn_versions(turn_index=turn_index, versions=versions))
    except Exception:
        logger.exception("could not push the versions of turn %s of the family of %s", turn_index, thread_id)


# --- the activity log ---------------------------------------------------------


def render_activity_push(entry) -> str:
    """A new activity log entry for an open page: put at the top of the log
    (a closed log counts it as unread, static/js/activity.js)."""
    return render_to_string(f"{ACTIVITY_TEMPLATE}#pushed", {"entry": entry}).strip()


def publish_activity(entry) -> None:
    """services.activity_log's on-commit hook."""
    try:
        publisher.publish(entry.thread_id, render_activity_push(entry))
    except Exception:
        # The entry is stored; a page that missed it shows it when the log is opened.
        logger.exception("could not push activity log entry %s", entry.pk)
