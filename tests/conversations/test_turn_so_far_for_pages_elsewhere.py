"""Pages that join while another server process runs the turn get the turn
so far from it (docs/adr/0132): many at once, a person without access
gets nothing of it, pages that close before their answer cost the others
nothing, and a row naming a boot id nobody runs any more gets no answer.
The other process is the harness of test_turn_from_another_process.py (a
publisher of its own and its answering loop; the turn's row names its
boot id)."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from conversations.models import Turn
from haico_site.asgi import application
from workspace.models import Thread

from .helpers import _session_cookie, open_socket
from .test_turn_from_another_process import OtherProcess, _running_on_the_other_process, _shown, _texts

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
async def other_process(thread, monkeypatch):
    other = OtherProcess(thread.pk, monkeypatch)
    yield other
    other.close()


async def test_fifteen_pages_joining_at_once_mid_answer_each_show_the_whole_answer_once(owner, thread, other_process):
    """15 pages open the thread on this server at once while the other
    process streams: each asks once, gets its own snapshot exactly once
    (never another page's), is never told it missed something, and shows
    the whole answer, nothing twice."""
    await database_sync_to_async(_running_on_the_other_process)(thread)
    other_process.stream(words=150, pause=0.01)
    await asyncio.sleep(0.3)
    pages = await asyncio.gather(*(open_socket(thread.pk, owner) for _ in range(15)))
    try:
        await other_process.streamed()
        results = [await _texts(page) for page in pages]
    finally:
        for page in pages:
            await page.disconnect()
    assert other_process.asked == 15
    whole = "".join(other_process.draft)
    for parts in results:
        assert [kind for kind, _ in parts].count("so-far") == 1
        assert _shown(parts) == whole


async def test_a_page_of_another_person_never_receives_the_turn_so_far(owner, other_user, thread, other_process):
    """The owner's page and a page of another person (no access to the
    thread, a thread of their own open on this server) open its socket while
    the other process streams: the stranger's socket is refused, receives no
    word of the answer and never asks for the turn; their own thread's page
    receives nothing of it either."""
    await database_sync_to_async(_running_on_the_other_process)(thread)
    theirs = await database_sync_to_async(Thread.objects.create)(owner=other_user, title="Theirs")
    own_page = await open_socket(theirs.pk, other_user)
    other_process.stream(words=60)
    await asyncio.sleep(0.2)
    headers = [(b"origin", b"http://127.0.0.1:8000"), (b"host", b"127.0.0.1:8000")]
    headers.append((b"cookie", await sync_to_async(_session_cookie)(other_user)))
    stranger = WebsocketCommunicator(application, f"/ws/threads/{thread.pk}/", headers=headers)
    await stranger.connect(timeout=5)
    owner_page = await open_socket(thread.pk, owner)
    received = []
    try:
        await other_process.streamed()
        while True:
            try:
                message = await stranger.receive_output(timeout=0.5)
            except TimeoutError:
                break
            received.append(str(message))
            if message.get("type") == "websocket.close":
                break
        own_frames = []
        while not await own_page.receive_nothing(timeout=0.5):
            own_frames.append(await own_page.receive_from())
        owner_parts = await _texts(owner_page)
    finally:
        await owner_page.disconnect()
        await own_page.disconnect()
    assert other_process.asked == 1  # the owner's page only
    assert not any("w1 " in m or "w10" in m for m in received), received
    assert not any("w1 " in f or "turn-1-answer" in f for f in own_frames), own_frames
    assert _shown(owner_parts) == "".join(other_process.draft)


async def test_a_page_that_closes_before_its_answer_costs_the_other_pages_nothing(owner, thread, other_process):
    """Pages that join mid-answer and close at once, before the other
    process's snapshot for them arrives: the page open all along is never
    told it missed something and shows the whole answer once."""
    await database_sync_to_async(_running_on_the_other_process)(thread)
    steady = await open_socket(thread.pk, owner)
    try:
        other_process.stream(words=80)
        await asyncio.sleep(0.2)
        for _ in range(5):
            quick = await open_socket(thread.pk, owner)
            await quick.disconnect()
        await other_process.streamed()
        parts = await _texts(steady)
    finally:
        await steady.disconnect()
    assert other_process.asked >= 5
    assert _shown(parts) == "".join(other_process.draft)


async def test_a_page_joining_after_the_other_process_restarted_gets_no_stale_turn(owner, thread, other_process):
    """The row names a boot id no process reads any more (the other server
    restarted: a new boot): a page that joins connects, is not held up and
    is told nothing of a turn it cannot be given (the recovery releases
    that turn); nobody is asked."""
    await database_sync_to_async(
        lambda: Turn.objects.create(thread=thread, index=1, user_message="x", status=Turn.Status.RUNNING, boot="deadbeefdeadbeef")
    )()
    page = await open_socket(thread.pk, owner)
    try:
        parts = await _texts(page)
    finally:
        await page.disconnect()
    assert parts == []
    assert other_process.asked == 0
