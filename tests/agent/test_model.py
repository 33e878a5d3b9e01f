"""The model factory reads its configuration from settings (docs/adr/0072)."""

import asyncio

import pytest

from agent import model as model_module
from agent.builder import AgentProvider
from agent.model import (
    ModelNotConfigured,
    ModelStreamSilent,
    available_models,
    counting_attempts,
    get_chat_model,
)
from conversations.turns.errors import RETRY, safe_error_message
from tests.support.model_server import model_server  # noqa: F401  (the local server as the app's model)
from tests.support.openai_server import HTTPFailure, Reply


@pytest.fixture
def no_model(settings):
    settings.HAICO_MODEL = ""
    settings.HAICO_MODELS = []
    settings.OPENAI_API_KEY = ""
    settings.OPENAI_BASE_URL = ""
    return settings


@pytest.fixture
def ollama(no_model):
    no_model.OPENAI_BASE_URL = "http://localhost:11434/v1"
    no_model.HAICO_MODEL = "llama3.1"
    no_model.HAICO_MODELS = ["qwen2.5", "llama3.1", "mistral"]
    return no_model


def test_nothing_configured_raises_a_message_saying_what_to_set(no_model):
    assert available_models() == []
    assert available_models() == []
    with pytest.raises(ModelNotConfigured) as caught:
        get_chat_model()
    message = str(caught.value)
    assert caught.value.message == message
    for needed in ("HAICO_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        assert needed in message
    assert "OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=ollama HAICO_MODEL=llama3.1" in message


def test_a_model_name_without_an_endpoint_is_not_configured(no_model):
    no_model.HAICO_MODEL = "gpt-4o-mini"
    assert available_models() == []
    with pytest.raises(ModelNotConfigured):
        get_chat_model()


def test_api_key_alone_with_a_model_is_configured(no_model):
    no_model.HAICO_MODEL = "gpt-4o-mini"
    no_model.OPENAI_API_KEY = "sk-test"

    llm = get_chat_model()

    assert available_models() != []
    assert llm.model_name == "gpt-4o-mini"
    assert llm.openai_api_base is None
    assert llm.openai_api_key.get_secret_value() == "sk-test"


def test_model_list_is_offered_with_the_default_first(ollama):
    assert available_models() == ["llama3.1", "qwen2.5", "mistral"]
    assert get_chat_model().model_name == "llama3.1"
    assert get_chat_model("mistral").model_name == "mistral"


def test_models_list_without_a_default_uses_its_first_entry(no_model):
    no_model.OPENAI_BASE_URL = "http://localhost:8000/v1"
    no_model.HAICO_MODELS = ["vllm-a", "vllm-b"]

    assert available_models() == ["vllm-a", "vllm-b"]
    assert get_chat_model().model_name == "vllm-a"


def test_unknown_model_name_is_refused(ollama):
    with pytest.raises(ValueError) as caught:
        get_chat_model("gpt-5-secret")
    assert "gpt-5-secret" in str(caught.value)
    assert "llama3.1, qwen2.5, mistral" in str(caught.value)


def test_client_uses_the_settings_for_endpoint_limits_and_retries(ollama):
    ollama.HAICO_MODEL_TIMEOUT = 12.5
    ollama.HAICO_MODEL_MAX_RETRIES = 4
    ollama.HAICO_MODEL_MAX_TOKENS = 2048

    llm = get_chat_model()

    assert llm.openai_api_base == "http://localhost:11434/v1"
    # Local servers ignore the key, but the SDK needs one.
    assert llm.openai_api_key.get_secret_value() == "not-needed"
    assert llm.request_timeout == 12.5
    assert llm.max_retries == 4
    assert llm.max_tokens == 2048
    assert llm.stream_usage is True
    assert llm.root_client.max_retries == 4
    assert str(llm.root_client.base_url).rstrip("/") == "http://localhost:11434/v1"


def test_the_agent_without_a_model_raises_not_configured(no_model):
    with pytest.raises(ModelNotConfigured):
        AgentProvider().graph(model=None, checkpointer=None)


def test_the_agent_refuses_an_unknown_model(ollama):
    with pytest.raises(ValueError):
        AgentProvider().graph(model="not-offered", checkpointer=None)


# --- counting the SDK's own retries (conversations.activity tells them) ---


@pytest.fixture
def scripted_endpoint(model_server, settings):  # noqa: F811  (the fixture imported above)
    """Three retries, so one call can fail twice and still answer."""
    settings.HAICO_MODEL_MAX_RETRIES = 3
    return model_server


def _failures_then_an_answer():
    return [HTTPFailure(429, "slow down", retry_after=0), HTTPFailure(503, "overloaded", retry_after=0), Reply(text="Hi.")]


def test_the_sdks_retries_of_one_call_are_counted_with_why(scripted_endpoint):
    scripted_endpoint.script(_failures_then_an_answer())
    with counting_attempts() as attempts:
        reply = get_chat_model().invoke("hello")
    assert reply.content == "Hi."
    assert attempts.reasons == ["busy", "server_error"]
    assert attempts.details[0].startswith("HTTP 429: ") and "slow down" in attempts.details[0]
    assert attempts.details[1].startswith("HTTP 503: ") and "overloaded" in attempts.details[1]


async def test_the_sdks_retries_of_a_streamed_call_are_counted_too(scripted_endpoint):
    scripted_endpoint.script(_failures_then_an_answer())
    with counting_attempts() as attempts:
        text = "".join([chunk.content async for chunk in get_chat_model().astream("hello")])
    assert text == "Hi." and attempts.reasons == ["busy", "server_error"]


def test_calls_outside_a_count_are_not_counted_by_another(scripted_endpoint):
    scripted_endpoint.script(_failures_then_an_answer())
    with counting_attempts() as attempts:
        pass
    get_chat_model().invoke("hello")
    assert attempts.reasons == []


# -- a streamed reply that goes quiet (agent.model._within_content_silence) --


async def _stream(*gaps):
    """Chunks 0, 1, 2 …, each after its gap in seconds."""
    for number, gap in enumerate(gaps):
        await asyncio.sleep(gap)
        yield number


async def test_a_reply_silent_past_the_limit_is_given_up_as_the_model_not_answering_in_time(monkeypatch):
    monkeypatch.setattr(model_module, "CONTENT_SILENCE_SECONDS", 0.1)
    received = []
    with pytest.raises(ModelStreamSilent):
        async for chunk in model_module._within_content_silence(_stream(0, 0, 1.0)):
            received.append(chunk)
    assert received == [0, 1]
    assert safe_error_message(ModelStreamSilent("x")) == "The model did not answer in time." + RETRY


async def test_the_limit_times_the_provider_only_not_what_the_turn_does_with_a_chunk(monkeypatch):
    monkeypatch.setattr(model_module, "CONTENT_SILENCE_SECONDS", 0.1)
    received = []
    async for chunk in model_module._within_content_silence(_stream(0, 0.05, 0.05)):
        await asyncio.sleep(0.2)  # handling a chunk takes longer than the limit
        received.append(chunk)
    assert received == [0, 1, 2]


async def test_a_stop_arriving_as_a_chunk_is_ready_always_cancels_the_reader():
    """What a Stop does to a turn reading a reply whose chunks are all queued."""

    async def queued():
        for number in range(100_000):
            await asyncio.sleep(0)
            yield number

    async def read():
        async for _chunk in model_module._within_content_silence(queued()):
            await asyncio.sleep(0)

    for _ in range(20):
        reader = asyncio.ensure_future(read())
        await asyncio.sleep(0.001)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(reader, timeout=2)
