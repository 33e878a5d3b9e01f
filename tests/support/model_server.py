"""The real model path for a test: the local OpenAI-compatible server
(tests.support.openai_server) configured as the app's model endpoint, and
the turn registry's agent provider building the real ChatOpenAI for it.

Registered for tests/conversations in its conftest; a module that wants
other settings overrides `model_server` and asks for it."""

import pytest

from agent.builder import AgentProvider
from conversations.turns import registry
from tests.support.openai_server import OpenAICompatibleServer


@pytest.fixture
def model_server(settings, monkeypatch):
    """The server answering as the model "scripted": tool-call arguments in
    7-character chunks, a one-second timeout and one retry."""
    with OpenAICompatibleServer(models=["scripted"], args_chunk_chars=7) as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "test-key"
        settings.HAICO_MODEL = "scripted"
        settings.HAICO_MODELS = ["scripted"]
        settings.HAICO_MODEL_TIMEOUT = 1.0
        settings.HAICO_MODEL_MAX_RETRIES = 1
        # The process's provider builds the real ChatOpenAI for this server.
        monkeypatch.setattr(registry, "agents", AgentProvider())
        yield server
