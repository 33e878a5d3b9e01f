"""A thread's live fragments to the other server processes, over Redis pub/sub.

With the Redis channel layer, a group send costs four round trips to Redis
(channels-redis drops the group's expired members, reads the members, drops
each member's expired messages, then stores the message for each), and a
member gets it from a blocking pop of its own. A running turn sends a
fragment (a token) many times a second, and each round trip is time a tab
on another server waits for it. A PUBLISH is one round trip, and Redis
pushes the message at once to every process subscribed (docs/adr/0094).

Pub/sub keeps nothing: a process whose connection is down when a fragment
is published never gets it. That is already a case the pages handle: each
fragment carries its publisher's sequence number, and a page that sees a gap
fetches again what it shows (docs/adr/0009), as it does when the layer drops
a message over capacity. Access events (a person removed) stay on the
channel layer, which keeps them until they are read.

The connections are the channel layer's own (its hosts, options and key
prefix), so a fragment goes where the layer's messages go.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable

import msgpack
from channels_redis.core import RedisChannelLayer
from redis.exceptions import ConnectionError as RedisConnectionError

from . import outages

logger = logging.getLogger("haico.conversations.live")

# After a failed read the subscriber tries again this much later (Redis restarting).
RETRY_SECONDS = 1.0
# The most fragments that wait for one Redis host (200 streaming turns send
# some 6 000 a second; Redis takes them in a few milliseconds when it answers).
MAX_WAITING = 20_000


def carries(layer) -> bool:
    """Whether fragments to other processes go by pub/sub with this layer."""
    return isinstance(layer, RedisChannelLayer)


def channel_name(layer: RedisChannelLayer, group: str) -> str:
    """The pub/sub channel of `group`'s fragments."""
    return f"{layer.prefix}:fragments:{group}"


class Publishing:
    """This process's fragments to the other processes, in order, as many in
    one round trip to Redis as are waiting when it leaves (docs/adr/0168).

    A Redis host has one send in flight at a time: a fragment published
    alone when nothing waits, else a pipeline of all that wait; those sent
    meanwhile go in the next. Redis runs a pipeline's commands in order, so
    a thread's fragments (its group always hashes to the same host) reach
    the other processes in the order they were sent, whether or not the
    sender waits for each to be taken."""

    def __init__(self) -> None:
        self._hosts: dict[tuple[int, int], _HostPipeline] = {}

    def send(self, layer: RedisChannelLayer, group: str, message: dict) -> asyncio.Future:
        """Queue `message` for every process subscribed to `group`'s
        fragments. The future gives how many subscribers Redis handed it to
        (this process's own relay among them), or what sending it raised."""
        return self._host(layer, group).send(channel_name(layer, group), _packed(message))

    async def publish(self, layer: RedisChannelLayer, group: str, message: dict) -> int:
        """Send `message` now and wait for Redis to take it; how many
        subscribers it handed it to. With nothing queued for its host it
        goes as one PUBLISH of its own, the quickest way there; else behind
        what is queued, in the next pipeline."""
        return await self._host(layer, group).publish(channel_name(layer, group), _packed(message))

    def _host(self, layer: RedisChannelLayer, group: str) -> _HostPipeline:
        index = layer.consistent_hash(group)
        host = self._hosts.get((id(layer), index))
        if host is None or host.layer is not layer:
            host = self._hosts[(id(layer), index)] = _HostPipeline(layer, index)
        return host


def _packed(message: dict) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


class _HostPipeline:
    """The fragments waiting for one Redis host, and the task sending them."""

    def __init__(self, layer: RedisChannelLayer, index: int) -> None:
        self.layer = layer
        self.index = index
        self._waiting: list[tuple[str, bytes, asyncio.Future]] = []
        # The task sending what waits, or _PUBLISHING while `publish` sends
        # one alone: either way what is sent meanwhile waits behind it.
        self._sender: asyncio.Task | object | None = None

    async def publish(self, channel: str, data: bytes) -> int:
        if self._sender is not None or self._waiting:
            # Shielded: the other fragments of its pipeline wait for the same answer.
            return await asyncio.shield(self.send(channel, data))
        self._sender = _PUBLISHING
        try:
            return await self.layer.connection(self.index).publish(channel, data)
        finally:
            self._sender = None
            if self._waiting:
                self._sender = asyncio.get_running_loop().create_task(self._send_waiting(), context=contextvars.Context())

    def send(self, channel: str, data: bytes) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        taken = loop.create_future()
        if len(self._waiting) >= MAX_WAITING:
            # Redis is not answering: what would wait longer fails now, as it
            # would when sent (the other processes' pages fetch again what
            # they show), instead of piling up in memory.
            taken.set_exception(RedisConnectionError("too many fragments wait for Redis"))
            return taken
        self._waiting.append((channel, data, taken))
        if self._sender is None:
            # From an empty context: it serves every thread's publisher, not the caller's.
            self._sender = loop.create_task(self._send_waiting(), context=contextvars.Context())
        return taken

    async def _send_waiting(self) -> None:
        batch: list[tuple[str, bytes, asyncio.Future]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    async with self.layer.connection(self.index).pipeline(transaction=False) as pipeline:
                        for channel, data, _ in batch:
                            pipeline.publish(channel, data)
                        counts = await pipeline.execute()
                except Exception as error:
                    _settle(batch, error=error)
                else:
                    _settle(batch, counts=counts)
                batch = []
        finally:
            self._sender = None
            # Cancelled (the loop is closing): no one waits for ever.
            stopped = RedisConnectionError("the fragments' sender stopped")
            waiting, self._waiting = self._waiting, []
            _settle(batch + waiting, error=stopped)


# `_HostPipeline._sender` while a fragment is published alone.
_PUBLISHING = object()


def _settle(batch: list[tuple[str, bytes, asyncio.Future]], *, counts=None, error: Exception | None = None) -> None:
    for position, (_, _, taken) in enumerate(batch):
        if taken.done():
            continue  # cancelled by whoever held it
        if error is not None:
            taken.set_exception(error)
        else:
            taken.set_result(counts[position])


class Subscriber:
    """One process's subscriptions to its groups' fragments: one Redis
    connection per Redis host in use, each read by a task of its own that
    hands every message, in order, to `hand_over`."""

    def __init__(self, layer: RedisChannelLayer, hand_over: Callable[[dict], Awaitable[None]]):
        self.layer = layer
        self.hand_over = hand_over
        self._pubsubs: dict[int, object] = {}
        self._readers: dict[int, asyncio.Task] = {}

    async def subscribe(self, group: str) -> None:
        index = self.layer.consistent_hash(group)
        pubsub = self._pubsubs.get(index)
        if pubsub is None:
            pubsub = self._pubsubs[index] = self.layer.connection(index).pubsub()
        await pubsub.subscribe(channel_name(self.layer, group))
        if index not in self._readers:
            # From an empty context, as the relay's other tasks (conversations.live).
            self._readers[index] = asyncio.get_running_loop().create_task(self._read(pubsub), context=contextvars.Context())

    async def unsubscribe(self, group: str) -> None:
        pubsub = self._pubsubs.get(self.layer.consistent_hash(group))
        if pubsub is not None:
            await pubsub.unsubscribe(channel_name(self.layer, group))

    async def close(self) -> None:
        readers, self._readers = list(self._readers.values()), {}
        pubsubs, self._pubsubs = list(self._pubsubs.values()), {}
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        for pubsub in pubsubs:
            try:
                await pubsub.aclose()
            except Exception:
                logger.warning("could not close a fragment subscription", exc_info=True)

    async def _read(self, pubsub) -> None:
        while True:
            try:
                # Blocks until a message comes; on a lost connection redis-py
                # connects again and subscribes to the same channels.
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if asyncio.current_task().cancelling():
                    raise
                outages.note(logger, error, "the relay could not read the fragments of other processes; trying again")
                await asyncio.sleep(RETRY_SECONDS)
                continue
            outages.answered(outages.REDIS)
            if message is None or message.get("type") != "message":
                continue
            try:
                event = msgpack.unpackb(message["data"], raw=False)
            except Exception:
                logger.warning("a fragment that is not one (%d bytes) was dropped", len(message["data"]))
                continue
            await self.hand_over(event)
