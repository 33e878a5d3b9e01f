"""A running turn, for a page of another server process (docs/adr/0132).

A thread's turn runs in one process (turns.registry); its fragments reach
the other processes' pages with the thread's fragments (conversations.live).
A page that joins the thread while the turn runs has missed the turn so
far. Its own process answers it when it runs the turn (the draft:
registry.resync_fragments); when another process does, the page asks that
one, on a channel named after the boot id the turn's row records
(turns.process), and that process sends the turn so far to the page with
the thread's fragments: behind every fragment it sent before, ahead of every
one it sends after, numbered with them. As with a page of the turn's own
process, the snapshot replaces whatever those before it added, and those
after it append to it: no hole, and no text twice.

The channel is a name, not a group: nothing of it lives in the channel layer
until a message is sent to it, so a Redis restarted empty loses no
membership, and an ask sent once it is back is read when the process
running the turn reads again.

Nothing waits for the answer. A process that ended its turn meanwhile
answers nothing (the turn's end reaches the page with the thread's
fragments); one that died answers nothing either, and its turn is released
by the recovery (turns.slot), whose end is pushed to every page.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from channels.layers import get_channel_layer

from .. import outages
from ..live import publisher

logger = logging.getLogger("haico.conversations.turns")

ASK = "turn.so_far"
# After a failed read the process reads again this much later (Redis restarting).
RETRY_SECONDS = 1.0


def channel_of(boot: str) -> str:
    """The channel the process of boot id `boot` (turns.process) reads asks on."""
    return f"haico-turns.{boot}"


async def ask(*, boot: str, thread_id, page_channel: str) -> None:
    """Ask the process of `boot` for its turn of the thread so far, for the
    page of channel `page_channel`."""
    try:
        await get_channel_layer().send(channel_of(boot), {"type": ASK, "thread": str(thread_id), "page": page_channel})
    except Exception as error:
        # The page shows the turn from where it joined; its end, sent whole, completes it.
        outages.note(logger, error, "a page could not ask for the turn so far of thread %s", thread_id)


async def answer(boot: str, so_far: Callable[[str], list[str]]) -> None:
    """Read the asks of this process's channel for ever, and send each page
    that asks the turn so far of its thread (`so_far`: [] when this process
    runs none, or it is ending)."""
    layer = get_channel_layer()
    channel = channel_of(boot)
    while True:
        try:
            message = await layer.receive(channel)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if asyncio.current_task().cancelling():
                raise
            outages.note(logger, error, "the turns' asks could not be read; trying again")
            await asyncio.sleep(RETRY_SECONDS)
            continue
        thread_id, page = message.get("thread"), message.get("page")
        if message.get("type") != ASK or not isinstance(thread_id, str) or not isinstance(page, str):
            continue
        try:
            for html in so_far(thread_id):
                publisher.publish_to_page(thread_id, page, html)
        except Exception:
            logger.exception("could not send a page the turn so far of thread %s", thread_id)
