"""The turn environment every WebSocket/turn test runs in (autouse in
tests/conversations/conftest.py, and in tests/agent/test_checkpointer.py,
which opens the process's checkpointer)."""

import pytest
from channels.layers import get_channel_layer

from agent import checkpointer as checkpointers
from conversations.turns import registry


@pytest.fixture(autouse=True)
async def turn_environment():
    """Every turn started in a test ends inside it, and the saver opened in
    this test's event loop is closed in that loop (an open aiosqlite thread
    would keep pytest from exiting)."""
    layer = get_channel_layer()
    await layer.flush()
    yield
    await registry.stop_all_turns()
    await checkpointers.close_checkpointer()
    await layer.flush()


async def run_turn(thread, message: str, **options) -> int:
    """A turn of `thread` with `message` (and start_turn's other `options`),
    from its start to its end; returns its index."""
    index = await registry.start_turn(thread=thread, user_message=message, **options)
    await registry.wait_for_turn(thread.pk)
    return index
