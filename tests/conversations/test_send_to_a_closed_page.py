"""A push that reaches a page just after it closed (its socket's disconnect
not handled yet): the server refuses the send, and that is a page gone,
not an error. Daphne raises autobahn's Disconnected for it, servers that
follow the ASGI specification an OSError; anything else still fails loudly."""

import logging

import pytest
from autobahn.exception import Disconnected

from conversations.consumers import ThreadConsumer
from conversations.live import publisher


def _consumer_whose_page_closed(error: Exception) -> ThreadConsumer:
    consumer = ThreadConsumer()

    async def refuse(message):
        raise error

    consumer.base_send = refuse
    return consumer


@pytest.mark.parametrize(
    "error",
    [Disconnected("Attempt to send on a closed protocol"), ConnectionResetError("gone")],
    ids=["daphne", "asgi-oserror"],
)
async def test_a_push_to_a_page_that_just_closed_is_dropped_quietly(error, caplog):
    consumer = _consumer_whose_page_closed(error)
    with caplog.at_level(logging.INFO):
        await publisher._to_consumer(consumer, "<div id='plan'>A step</div>")
    assert [r.levelname for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert not any(r.exc_info for r in caplog.records)
    assert "closed before a message reached it" in caplog.text


async def test_any_other_failure_to_send_is_still_logged_with_its_traceback(caplog):
    consumer = _consumer_whose_page_closed(ValueError("not a page closing"))
    with caplog.at_level(logging.INFO):
        await publisher._to_consumer(consumer, "<div id='plan'>A step</div>")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors and errors[0].exc_info is not None
