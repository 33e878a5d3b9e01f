"""Stop ends a turn within a moment whatever the provider does next: also
when it arrives while a long answer's chunks are still being handed over
and the provider then pauses (a slow model, a reasoning pause). A turn once
stayed running, every tab's Send disabled, until the provider sent again:
the chunk limit of langchain-openai waited through asyncio.wait_for, which
on Python 3.11 drops a cancellation arriving as a chunk completes
(agent.model._within_content_silence)."""

import asyncio
import json
import time

import pytest
from channels.db import database_sync_to_async

from conversations.models import Turn
from tests.conversations.helpers import frames_until_turn_end, open_socket
from tests.support.fake_model import Reply
from tests.support.openai_server import Misbehave

pytestmark = pytest.mark.django_db(transaction=True)

BURST = 4_000  # tokens streamed as fast as the server writes them
# Long enough that a turn ended "at once" (within half of it, which a
# loaded CI machine needs: 3.1 s was seen with five test processes on two
# cores) cannot be one that waited for the provider to send again.
PAUSE = 16.0


async def test_stop_pressed_as_a_long_burst_ends_and_the_provider_pauses_ends_the_turn_at_once(
    owner, thread, model_server, settings
):
    settings.HAICO_MODEL_TIMEOUT = 30.0
    words = "".join(f"word{i} " for i in range(6_000))
    model_server.script(
        [Misbehave(reply=Reply(text=words), pause_after_tokens=BURST * 2, pause_seconds=PAUSE), Reply(text="Next turn.")]
    )
    tab = await open_socket(thread.pk, owner)
    await tab.send_to(text_data=json.dumps({"message": "Write it all", "HEADERS": {"HX-Request": "true"}}))
    while not model_server.pauses:
        await asyncio.sleep(0.01)

    pressed = time.monotonic()
    await tab.send_to(text_data=json.dumps({"action": "stop"}))
    await frames_until_turn_end(tab, timeout=PAUSE + 5)
    took = time.monotonic() - pressed

    turn = await database_sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert took < PAUSE / 2, f"the turn ended {took:.1f} s after Stop"
    assert turn.status == Turn.Status.STOPPED
    assert turn.answer.startswith("word0 word1") and "word5999" not in turn.answer  # what streamed stays
    await tab.disconnect()
