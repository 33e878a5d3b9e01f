"""A page's socket reads what it needs in few database hops (each wakes the
event loop from the database thread, docs/adr/0149): its connect reads the
latest turn in its presence hop, and a message reads its session, its thread, an
earlier copy's turn and the person's models in one hop before the claim's."""

import json

import pytest
from channels.db import database_sync_to_async

from conversations import consumers
from conversations.turns import registry
from tests.support.fake_model import Reply

from .helpers import frames_until_turn_end

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hops(monkeypatch):
    """The functions the consumer and the registry run in database hops, in
    order, by module."""
    names: dict[str, list[str]] = {"consumers": [], "registry": []}

    def counting(module):
        def hop(function, *args, **kwargs):
            names[module].append(getattr(function, "__name__", repr(function)))
            return database_sync_to_async(function, *args, **kwargs)

        return hop

    monkeypatch.setattr(consumers, "database_sync_to_async", counting("consumers"))
    monkeypatch.setattr(registry, "database_sync_to_async", counting("registry"))
    return names


async def test_a_connect_reads_the_latest_turn_in_its_presence_hop(owner, thread, script, sockets, hops):
    await sockets(thread.pk, owner)
    assert "_present_and_behind" in hops["consumers"]
    assert "_ended_or_running_on" not in hops["registry"]


async def test_a_message_reads_what_its_turn_needs_in_one_hop_before_the_claim(owner, thread, script, sockets, hops):
    script(Reply(text="Hello."))
    socket = await sockets(thread.pk, owner)
    hops["consumers"].clear()
    await socket.send_to(
        text_data=json.dumps(
            {"message": "hi", "client_message_id": "7f3c9a1e5b2d4c6f8a0b1c2d3e4f5a6b", "HEADERS": {"HX-Request": "true"}}
        )
    )
    await frames_until_turn_end(socket)
    assert hops["consumers"] == ["_signed_in_and_before_a_turn"]  # the session check's hop
    assert "_begin" in hops["registry"]
