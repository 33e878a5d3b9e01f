"""A page that joins a thread while another server process runs its turn
gets the turn so far from that process, with the thread's fragments: then
what it shows is the answer from its start, no piece missing and none twice
(conversations.turns.elsewhere, docs/adr/0132).

The other process is a publisher of its own (its fragments reach this
process's pages through the channel layer, as another server's do) and the
loop that answers its asks; the turn's row names it by its boot id."""

import asyncio
import re

import pytest
from channels.db import database_sync_to_async

from conversations.live import Publisher, group_name
from conversations.models import Turn
from conversations.turns import elsewhere

from .helpers import open_socket

pytestmark = pytest.mark.django_db(transaction=True)

OTHER_BOOT = "0123456789abcdef"
TARGET = "turn-1-answer-content"
# What the other process's snapshot looks like here: the answer so far, in place.
SNAPSHOT = re.compile(r'<div id="so-far">(.*?)</div>', re.S)
APPEND = re.compile(rf'<div id="{TARGET}" hx-swap-oob="beforeend">(.*?)</div>', re.S)


class OtherProcess:
    """A process running turn 1 of the thread: it streams words, and answers
    a page's ask with the answer so far, as turns.registry does."""

    def __init__(self, thread_id, monkeypatch):
        self.thread_id = thread_id
        self.publisher = Publisher()
        self.publisher.attach()
        monkeypatch.setattr(elsewhere, "publisher", self.publisher)
        self.draft: list[str] = []
        self.asked = 0
        self._tasks = [asyncio.ensure_future(elsewhere.answer(OTHER_BOOT, self._so_far))]

    def _so_far(self, thread_id) -> list[str]:
        assert thread_id == str(self.thread_id)
        self.asked += 1
        return [f'<div id="so-far">{"".join(self.draft)}</div>']

    def stream(self, words: int, pause: float = 0.01) -> None:
        async def run():
            for i in range(words):
                word = f"w{i} "
                self.draft.append(word)
                self.publisher.publish_append(self.thread_id, TARGET, word)
                await asyncio.sleep(pause)

        self._tasks.append(asyncio.ensure_future(run()))

    async def streamed(self) -> None:
        await self._tasks[-1]

    def close(self) -> None:
        for task in self._tasks:
            task.cancel()


def _running_on_the_other_process(thread) -> None:
    Turn.objects.create(thread=thread, index=1, user_message="Write it", status=Turn.Status.RUNNING, boot=OTHER_BOOT)


async def _texts(socket, quiet: float = 0.5, *, resyncs: bool = False):
    """("so-far" or "append", text) of every element the socket is sent, in
    order, until it is quiet for `quiet` seconds; with `resyncs`, and how
    many times the page was told it missed something (else never)."""
    parts = []
    told = 0
    while not await socket.receive_nothing(timeout=quiet):
        frame = await socket.receive_from()
        told += 'data-live-patch="resync"' in frame
        assert resyncs or not told, "a page was told it missed something"
        for match in re.finditer(rf"{SNAPSHOT.pattern}|{APPEND.pattern}", frame, re.S):
            parts.append(("so-far", match.group(1)) if match.group(1) is not None else ("append", match.group(2)))
    return (parts, told) if resyncs else parts


def _shown(parts: list[tuple[str, str]]) -> str:
    """What the page's answer element holds after those parts: a snapshot
    replaces it, an append adds to its end."""
    shown = ""
    for kind, text in parts:
        shown = text if kind == "so-far" else shown + text
    return shown


@pytest.fixture
async def other_process(thread, monkeypatch):
    other = OtherProcess(thread.pk, monkeypatch)
    yield other
    other.close()


async def test_a_page_joining_mid_turn_shows_the_answer_from_its_start_then_follows_it(owner, thread, other_process):
    await database_sync_to_async(_running_on_the_other_process)(thread)
    other_process.stream(words=60)
    await asyncio.sleep(0.2)  # a good part streamed before the page joins
    socket = await open_socket(thread.pk, owner)
    try:
        await other_process.streamed()
        parts = await _texts(socket)
    finally:
        await socket.disconnect()
    assert other_process.asked == 1
    assert [kind for kind, _ in parts].count("so-far") == 1
    assert _shown(parts) == "".join(other_process.draft)
    assert _shown(parts).startswith("w0 w1 ")


async def test_only_the_page_that_asked_takes_the_answer_and_the_others_see_no_gap(owner, thread, other_process):
    await database_sync_to_async(_running_on_the_other_process)(thread)
    first = await open_socket(thread.pk, owner)
    try:
        other_process.stream(words=40)
        await asyncio.sleep(0.15)
        late = await open_socket(thread.pk, owner)
        try:
            await other_process.streamed()
            first_parts, late_parts = await _texts(first), await _texts(late)
        finally:
            await late.disconnect()
    finally:
        await first.disconnect()
    # Each page joined with an ask; each got its own answer, once.
    assert other_process.asked == 2
    assert [kind for kind, _ in first_parts].count("so-far") == 1
    assert [kind for kind, _ in late_parts].count("so-far") == 1
    whole = "".join(other_process.draft)
    assert _shown(first_parts) == whole
    assert _shown(late_parts) == whole


async def test_a_page_that_missed_a_fragment_of_the_turn_catches_up_with_it(owner, thread, other_process):
    """A message lost on its way (Redis's pub/sub keeps nothing for a
    connection that is down) shows as a gap in the other process's numbers:
    the page reloads what it shows, and asks for the turn so far again, so
    its answer keeps no hole until the turn's end."""
    await database_sync_to_async(_running_on_the_other_process)(thread)
    socket = await open_socket(thread.pk, owner)
    try:
        other_process.stream(words=10)
        await other_process.streamed()
        # One word lost on the way: streamed, numbered, never received.
        other_process.draft.append("lost ")
        other_process.publisher._seq[group_name(thread.pk)] += 1
        other_process.stream(words=10)
        await other_process.streamed()
        parts, resyncs = await _texts(socket, resyncs=True)
    finally:
        await socket.disconnect()
    assert resyncs == 1
    assert other_process.asked == 2
    assert _shown(parts) == "".join(other_process.draft)
    assert "lost " in _shown(parts)
