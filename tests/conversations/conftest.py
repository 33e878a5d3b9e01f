"""Fixtures for the WebSocket turn: a checkpointer per test (closed), a clean
in-memory channel layer, a configured (scripted) model, and sockets that
authenticate through the real ASGI stack (session cookie, origin check)."""

import asyncio

import pytest
from channels.testing import WebsocketCommunicator

from tests.support.admin import populated  # noqa: F401  (the admin tests' rows of every model)
from tests.support.fake_model import Reply
from tests.support.model_server import model_server  # noqa: F401  (the real ChatOpenAI against the local server)
from tests.support.turns import (
    run_turn,
    turn_environment,  # noqa: F401  (autouse: every test here)
)

from .helpers import Script, open_socket


@pytest.fixture
def model_settings(settings):
    """A configured endpoint so the chat accepts messages; the scripted model
    replaces the real client through the registry's agent provider."""
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    settings.OPENAI_API_KEY = ""
    settings.HAICO_MODEL = "scripted-default"
    settings.HAICO_MODELS = ["scripted-default", "scripted-other"]
    return settings


@pytest.fixture
def script(monkeypatch, model_settings):
    return Script(monkeypatch)


@pytest.fixture
async def sockets():
    """Opens sockets and always disconnects them."""
    opened: list[WebsocketCommunicator] = []

    async def open_(thread_id, user=None, *, presence=False):
        communicator = await open_socket(thread_id, user, presence=presence)
        opened.append(communicator)
        return communicator

    yield open_
    for communicator in opened:
        try:
            await communicator.disconnect(timeout=2)
        except (Exception, asyncio.CancelledError):
            pass  # the application already ended (e.g. it closed the socket)


@pytest.fixture
async def two_answered_turns(thread, script):
    """`thread` after two turns answered in full ("Answer one.", "Answer two."); later turns answer "Another answer."."""
    script(Reply(text="Answer one."), Reply(text="Answer two."), default=Reply(text="Another answer."))
    await run_turn(thread, "first message")
    await run_turn(thread, "second message")
    return thread
