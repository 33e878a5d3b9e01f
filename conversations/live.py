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
(docs/adr/0007).

The open pages of this process are handed their fragments directly (the
consumers register with `join`); the channel layer carries them to other
processes only, and only when there may be any: with the in-memory layer
(one process) a send goes to the layer only if something other than our
consumers listens there. Each layer message carries this process's id (a
consumer skips its own process's, which it already has) and a per-group
sequence number, so a consumer can tell when one went missing
(docs/adr/0009).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from workspace import panels
from workspace.events import Change
from workspace.models import Thread
from workspace.text import encodable

from .selectors import family_ids, feedback_counts, turn_versions_for

logger = logging.getLogger("haico.conversations.live")

FRAGMENT_EVENT = "thread.fragment"
# A send to a group waits this long after the previous one, so a burst of
# tokens goes out as one message.
WINDOW_SECONDS = 0.025
# A group's sender waits this long for more before it ends: a streaming turn
# keeps one sender instead of starting one per token.
IDLE_SECONDS = 2.0
# Channel-layer sends in flight at once, all groups together: each holds a
# Redis connection (settings.REDIS_MAX_CONNECTIONS must stay above this).
LAYER_SENDS_AT_ONCE = 64
CHAT_FRAGMENTS = "conversations/fragments/turn.html"
ACTIVITY_TEMPLATE = "conversations/panels/activity.html"
LIVE_PATCHES = "conversations/fragments/live.html"
FEEDBACK_CONTROL = "conversations/fragments/feedback.html#control"


@functools.lru_cache(maxsize=4096)
def group_name(thread_id) -> str:
    """The channel group of a thread (ASCII, well under the 100-character limit)."""
    return f"thread.{uuid.UUID(str(thread_id)).hex}"


@dataclass
class _Outbox:
    # (one consumer, or None for the whole group, html), in order.
    items: list[tuple[object | None, str]] = field(default_factory=list)
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

    def join(self, thread_id, consumer) -> None:
        """`consumer` (an open page in this process) gets the thread's fragments."""
        group = group_name(thread_id)
        self._members.setdefault(group, set()).add(consumer)
        self._member_channels.setdefault(group, set()).add(consumer.channel_name)

    def leave(self, thread_id, consumer) -> None:
        group = group_name(thread_id)
        members = self._members.get(group)
        if members is not None:
            members.discard(consumer)
            self._member_channels[group].discard(consumer.channel_name)
            if not members:
                del self._members[group], self._member_channels[group]

    # -- entry points ------------------------------------------------------

    def publish(self, thread_id, html: str) -> None:
        """Send `html` to every open tab of the thread, after what is already queued."""
        if html:
            self._submit(group_name(thread_id), None, html)

    def publish_to_consumer(self, thread_id, consumer, html: str) -> None:
        """Send `html` to one consumer of this process, after everything
        already queued for its thread (a page that joined mid-turn gets the
        turn so far behind the fragments that were on their way)."""
        if html:
            self._submit(group_name(thread_id), consumer, html)

    def _submit(self, group: str, consumer, html: str) -> None:
        # One string no socket (or Redis) can encode must not close every
        # page of the thread: lone surrogates become U+FFFD here, once.
        html = encodable(html)
        loop = self.loop
        if loop is None or loop.is_closed():
            # No server loop in this process (a management command, the
            # test client): send now, synchronously.
            async_to_sync(self._send)(group, [(consumer, html)])
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._enqueue(group, consumer, html)
        else:
            loop.call_soon_threadsafe(self._enqueue, group, consumer, html)

    # -- in the loop -------------------------------------------------------

    def _enqueue(self, group: str, consumer, html: str) -> None:
        outbox = self._outboxes.get(group)
        if outbox is None:
            outbox = self._outboxes[group] = _Outbox()
        outbox.items.append((consumer, html))
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

    async def _send(self, group: str, items: list[tuple[object | None, str]]) -> None:
        """Consecutive group items go out as one message; a consumer's own item alone."""
        batch: list[str] = []
        for consumer, html in [*items, (False, "")]:
            if consumer is None:
                batch.append(html)
                continue
            if batch:
                await self._to_group(group, "".join(batch))
                batch = []
            if consumer:
                await self._to_consumer(consumer, html)

    async def _to_group(self, group: str, html: str) -> None:
        for consumer in list(self._members.get(group, ())):
            await self._to_consumer(consumer, html)
        layer = get_channel_layer()
        if not self._others_listen(layer, group):
            return
        seq = self._seq[group] = self._seq.get(group, 0) + 1
        try:
            async with self._layer_slots or asyncio.Semaphore(1):
                await layer.group_send(group, {"type": FRAGMENT_EVENT, "html": html, "origin": self.origin, "seq": seq})
        except Exception:
            # Visible, never silent: the other processes' pages notice the gap
            # in the sequence numbers (conversations.consumers) and reload.
            logger.exception("could not send %d characters to %s", len(html), group)

    def _others_listen(self, layer, group: str) -> bool:
        """Whether the layer may reach something our consumers are not: other
        processes (any other layer), or other listeners of an in-memory one."""
        if not isinstance(layer, InMemoryChannelLayer):
            return True
        listening = layer.groups.get(group)
        if not listening:
            return False
        ours = self._member_channels.get(group, ())
        return len(listening) > len(ours) or any(name not in ours for name in listening)

    async def _to_consumer(self, consumer, html: str) -> None:
        try:
            await consumer.deliver(html)
        except Exception:
            logger.exception("could not send %d characters to a page of %s", len(html), consumer)


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
    deletion, and its Mode and Model selectors (values set in place)."""
    html = panels.render_changes(thread, changes)
    if any(change.surface == "thread" for change in changes):
        if thread.is_deleted:
            html += render_to_string(f"{CHAT_FRAGMENTS}#notice", {"message": "This thread was deleted.", "oob": True})
        else:
            html += render_to_string(f"{CHAT_FRAGMENTS}#thread_title", {"title": thread.title})
    if any(change.surface == "mode" for change in changes):
        html += render_mode_patch(thread)
    if any(change.surface == "model" for change in changes) and thread.chat_model:
        html += render_value_patch("chat-model", thread.chat_model)
    return html


def on_changes(changes: list[Change]) -> None:
    """workspace.events subscriber: runs in the writer's thread right after commit."""
    by_thread: dict = {}
    for change in changes:
        by_thread.setdefault(change.thread_id, []).append(change)
    for thread_id, thread_changes in by_thread.items():
        if any(change.surface in ("thread", "mode", "model") for change in thread_changes):
            thread = Thread.objects.filter(pk=thread_id).first()
            if thread is None:
                continue
        else:
            # The workspace's patches only need the thread's id; a query for
            # the row would cost as much as rendering them.
            thread = Thread(pk=thread_id)
        publisher.publish(thread_id, render_changes(thread, thread_changes))


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
    in every open tab of the thread (only its owner leaves feedback there)."""
    try:
        count = feedback_counts(thread=Thread(pk=thread_id), user=user).get(turn_index, 0)
        publisher.publish(thread_id, render_feedback_count(thread_id=thread_id, turn_index=turn_index, count=count))
    except Exception:
        # Stored; a tab that missed it shows the count when the region closes or the page reloads.
        logger.exception("could not push the feedback count of turn %s of %s", turn_index, thread_id)


def render_turn_versions(*, turn_index: int, versions) -> str:
    """A turn's "‹ i/n ›" arrows (conversations.selectors.TurnVersions), to put in place."""
    nav = render_to_string(f"{CHAT_FRAGMENTS}#versions", {"turn_index": turn_index, "versions": versions})
    return render_swap_patch(nav)


def publish_turn_versions(*, thread_id, turn_index: int) -> None:
    """A branch ran its own turn `turn_index` (guard.turn_begin's on-commit
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
