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

from . import outages

logger = logging.getLogger("haico.conversations.live")

# After a failed read the subscriber tries again this much later (Redis restarting).
RETRY_SECONDS = 1.0


def carries(layer) -> bool:
    """Whether fragments to other processes go by pub/sub with this layer."""
    return isinstance(layer, RedisChannelLayer)


def channel_name(layer: RedisChannelLayer, group: str) -> str:
    """The pub/sub channel of `group`'s fragments."""
    return f"{layer.prefix}:fragments:{group}"


async def publish(layer: RedisChannelLayer, group: str, message: dict) -> None:
    """Send `message` to every process subscribed to `group`'s fragments."""
    client = layer.connection(layer.consistent_hash(group))
    await client.publish(channel_name(layer, group), msgpack.packb(message, use_bin_type=True))


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
