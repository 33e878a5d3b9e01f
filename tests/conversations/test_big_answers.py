"""A multi-megabyte answer through the real channels-redis layer
(docs/adr/0043): the answer is cut at HAICO_ANSWER_MAX_CHARS with a note,
no message to a page or through Redis is larger than the live layer's
limit, every tab (this process's and another's) ends the turn, and the
answer too big to push is what the page then fetches."""

import asyncio
import uuid

import msgpack
import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.test import Client

from agent.answer_cap import capped_answer, cut_note
from conversations import live_bus
from conversations.live import MESSAGE_MAX_BYTES, RESYNC_CHAT, group_name, message_size
from conversations.models import Turn
from tests.support.fake_model import Reply

from .helpers import frames_until_turn_end, is_turn_end

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis]

ANSWER_MAX_CHARS = 200_000
# About 6 MB of mostly two-byte characters, streamed 64 000 characters at a time.
HUGE = "".join(f"Paragraph {n}: {'éàü ôîç ñøå ' * 12}\n\n" for n in range(28_000))


@pytest.fixture
def redis_layer(settings, redis_url):
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # A prefix of its own: nothing else on this Redis database is touched.
            "CONFIG": {"hosts": [redis_url], "prefix": f"haico-test-{uuid.uuid4().hex[:8]}"},
        }
    }
    settings.HAICO_ANSWER_MAX_CHARS = ANSWER_MAX_CHARS
    yield get_channel_layer()


async def _until_turn_end_through_redis(subscription, timeout: float = 60.0) -> list[bytes]:
    """What another server process would get of the thread's fragments (by
    Redis pub/sub, conversations.live_bus), as Redis carries them."""
    messages = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        message = await asyncio.wait_for(
            subscription.get_message(ignore_subscribe_messages=True, timeout=None), max(0.1, deadline - loop.time())
        )
        if message is None or message["type"] != "message":
            continue
        messages.append(message["data"])
        if is_turn_end(msgpack.unpackb(message["data"])["html"]):
            return messages


async def test_a_multi_megabyte_answer_ends_the_turn_for_every_tab_cut_and_in_messages_that_fit(
    owner, thread, script, sockets, redis_layer
):
    model = script(Reply(text=HUGE, token_chars=64_000))
    tab = await sockets(thread.pk, owner)
    other_process = redis_layer.connection(0).pubsub()
    await other_process.subscribe(live_bus.channel_name(redis_layer, group_name(thread.pk)))

    await tab.send_json_to({"message": "Tell me everything", "HEADERS": {}})
    frames = await frames_until_turn_end(tab, timeout=60)
    carried = await _until_turn_end_through_redis(other_process)
    through_redis = [msgpack.unpackb(data) for data in carried]

    # The model's stream was stopped near the cap, not read to its end.
    assert model.streamed_chars < ANSWER_MAX_CHARS + 64_000 * 2
    # No frame and no Redis message is over the limit (Redis carries them msgpack'd).
    assert max(message_size(frame) for frame in frames) <= MESSAGE_MAX_BYTES
    assert max(len(data) for data in carried) <= MESSAGE_MAX_BYTES + 1024
    # Both ended the turn: idle controls; the answer, too big to push, is fetched instead.
    for html in (frames[-1], through_redis[-1]["html"]):
        assert 'data-state="idle"' in html and "is-running" not in html
    assert RESYNC_CHAT in "".join(frames) and RESYNC_CHAT in "".join(m["html"] for m in through_redis)
    # What streamed was the start of the answer, cut with the note.
    streamed = "".join(frames)
    assert "Paragraph 0: éàü" in streamed and cut_note(ANSWER_MAX_CHARS) in streamed

    expected = capped_answer(HUGE, ANSWER_MAX_CHARS)
    row = await database_sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert row.status == Turn.Status.COMPLETE and row.answer == expected

    # What the page fetches: the turn as stored, cut, and idle controls.
    client = Client()
    await sync_to_async(client.force_login)(owner)
    response = await sync_to_async(client.get)(f"/threads/{thread.pk}/chat/from/1/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="turn-1"' in html and 'hx-swap-oob="true"' in html
    assert cut_note(ANSWER_MAX_CHARS) in html and "Paragraph 0: éàü" in html
    assert (
        'data-state="idle"' in html
        and '<button id="chat-send" type="button" class="btn btn-primary" hx-swap-oob="true">Send</button>' in html
    )

    await other_process.aclose()
    await redis_layer.flush()
