"""The chat model, built from settings (docs/adr/0062, docs/adr/0072).

One factory for every OpenAI-compatible endpoint: OpenAI itself, Ollama's /v1,
vLLM, LM Studio, a llama.cpp server. Nothing here reads the process
environment directly; everything comes from Django settings so tests can
override it and the whole app agrees on one configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import ssl
from collections.abc import Iterator
from contextvars import ContextVar

import httpx
import openai
from django.conf import settings
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_openai import ChatOpenAI
from pydantic import PrivateAttr

from workspace.text import encodable

from .secrets import REDACTED, redact, remember_secret

# Local OpenAI-compatible servers ignore the key, but the OpenAI SDK refuses
# to build a client without one.
PLACEHOLDER_API_KEY = "not-needed"

logger = logging.getLogger("haico.agent")


class ModelNotConfigured(Exception):
    """No model is configured: the turn answers with this message instead of a reply."""

    default_message = (
        "No language model is configured, so the assistant cannot answer yet. "
        "Set HAICO_MODEL to the model name and point the app at an OpenAI-compatible "
        "server with OPENAI_BASE_URL and/or OPENAI_API_KEY, then restart the server. "
        "For example, with a local Ollama: OPENAI_BASE_URL=http://localhost:11434/v1 "
        "OPENAI_API_KEY=ollama HAICO_MODEL=llama3.1 — or for OpenAI: "
        "OPENAI_API_KEY=sk-… HAICO_MODEL=gpt-4o-mini. "
        "HAICO_MODELS (comma-separated) adds more models to the chat's model selector."
    )

    def __init__(self, message: str | None = None):
        self.message = message or self.default_message
        super().__init__(self.message)


# Set on a streamed reply whose tool-call arguments were not valid JSON:
# {tool call id: what was wrong}. LangChain repairs a cut-off argument string
# into a partial object ('{"text": "hal' becomes {"text": "hal"}), which
# would run the tool with half an argument; agent.middleware.replies refuses those
# calls instead (docs/adr/0012).
INVALID_TOOL_ARGS_KEY = "haico_invalid_tool_args"


def json_problem(error: ValueError) -> str:
    """What was wrong with arguments json.loads refused. Not every refusal is a
    JSONDecodeError: a number past int's digit limit is a plain ValueError."""
    if isinstance(error, json.JSONDecodeError):
        return f"not valid JSON ({error.msg} at character {error.pos})"
    return f"not valid JSON ({error})"


# How much of an error response's body the operator's detail keeps.
BODY_EXCERPT_CHARS = 300


class ModelAttempts:
    """The attempts of one model call, as the activity log tells them
    (conversations.activity): the OpenAI SDK's own retries (it retries
    429, 5xx, timeouts and connection errors silently, `max_retries`), seen
    by the HTTP client's event hooks below, and the model-call middleware's
    re-asks (agent.middleware.retry)."""

    def __init__(self):
        self.reasons: list[str] = []
        self.details: list[str] = []
        self._request_open = False
        self._outcome: tuple[int, str] | None = None  # the open request's response

    # -- the HTTP client's hooks --

    def request_sent(self) -> None:
        if self._request_open:
            # Another request within one call of the model: the SDK retried.
            self._retried(self._outcome)
        self._request_open, self._outcome = True, None

    def response_received(self, status: int, body: str) -> None:
        self._outcome = (status, body)

    def _retried(self, outcome) -> None:
        if outcome is None:
            self.reasons.append("no_answer")
        else:
            status = outcome[0]
            self.reasons.append("busy" if status == 429 else "server_error" if status >= 500 else "status")
        self.details.append(_outcome_text(outcome) + "; retried")

    # -- the middleware --

    def call_started(self) -> None:
        """The middleware calls the model (again): its requests start afresh."""
        self._request_open, self._outcome = False, None

    def asked_again(self, reason: str, detail: str) -> None:
        self.reasons.append(reason)
        self.details.append(detail)

    def gave_up(self) -> None:
        """The call raised: how its last request ended, for the detail."""
        if self._request_open:
            self.details.append(_outcome_text(self._outcome) + "; gave up")
            self._request_open = False


def _outcome_text(outcome) -> str:
    if outcome is None:
        return "no response (timed out, or the connection failed)"
    status, body = outcome
    return f"HTTP {status}: {body}" if body else f"HTTP {status}"


_attempts: ContextVar[ModelAttempts | None] = ContextVar("haico_model_attempts", default=None)


@contextlib.contextmanager
def counting_attempts() -> Iterator[ModelAttempts]:
    """Count the attempts of the model call made inside the block."""
    attempts = ModelAttempts()
    token = _attempts.set(attempts)
    try:
        yield attempts
    finally:
        _attempts.reset(token)


def _excerpt(text: str, secret: str = "") -> str:
    if len(secret) >= 4:
        text = text.replace(secret, REDACTED)
    text = " ".join(redact(encodable(text)).split())
    return text if len(text) <= BODY_EXCERPT_CHARS else text[: BODY_EXCERPT_CHARS - 1] + "…"


def _on_request(request) -> None:
    attempts = _attempts.get()
    if attempts is not None:
        attempts.request_sent()


def _on_response(response, secret: str = "") -> None:
    attempts = _attempts.get()
    if attempts is None:
        return
    body = ""
    if response.status_code >= 400:
        try:
            response.read()
            body = _excerpt(response.text, secret)
        except Exception:
            logger.debug("could not read an error response's body", exc_info=True)
    attempts.response_received(response.status_code, body)


async def _on_request_async(request) -> None:
    _on_request(request)


async def _on_response_async(response, secret: str = "") -> None:
    attempts = _attempts.get()
    if attempts is None:
        return
    body = ""
    if response.status_code >= 400:
        try:
            await response.aread()
            body = _excerpt(response.text, secret)
        except Exception:
            logger.debug("could not read an error response's body", exc_info=True)
    attempts.response_received(response.status_code, body)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The one TLS context of this process's model clients, made as the
    clients would each make their own (certificates checked against
    certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when set). Reading the
    bundle cost about 40 ms of CPU, and each chat model has two clients: a
    server read it twice at every start and again for each model it built
    (docs/adr/0163). Set SSL_CERT_FILE before the process starts: the
    context is made once."""
    return httpx.create_ssl_context()


def _http_clients(*, secret: str = "") -> dict:
    """The SDK's own HTTP clients (its defaults), with the hooks that count
    its retries. One pair per chat model; the agent is compiled once per
    model (docs/adr/0008). `secret`, the provider's API key, is blanked out
    of any error body the hooks keep: some providers echo the key they were
    sent (docs/adr/0062)."""

    def on_response(response) -> None:
        _on_response(response, secret)

    async def on_response_async(response) -> None:
        await _on_response_async(response, secret)

    return {
        "http_client": openai.DefaultHttpxClient(
            verify=tls_context(), event_hooks={"request": [_on_request], "response": [on_response]}
        ),
        "http_async_client": openai.DefaultAsyncHttpxClient(
            verify=tls_context(), event_hooks={"request": [_on_request_async], "response": [on_response_async]}
        ),
    }


class _ToolArgsCheck:
    """Collects a streamed reply's raw tool-call argument strings."""

    def __init__(self):
        self._args: dict[int, list[str]] = {}
        self._ids: dict[int, str] = {}

    def add(self, message) -> None:
        for chunk in getattr(message, "tool_call_chunks", None) or []:
            index = chunk.get("index") or 0
            self._args.setdefault(index, []).append(chunk.get("args") or "")
            if chunk.get("id") and index not in self._ids:
                self._ids[index] = chunk["id"]

    def problems(self) -> dict[str, str]:
        found = {}
        for index, parts in self._args.items():
            raw = "".join(parts)
            if not raw.strip():
                continue  # a call without arguments
            try:
                value = json.loads(raw)
            except ValueError as exc:
                found[self._ids.get(index, str(index))] = json_problem(exc)
                continue
            if not isinstance(value, dict):
                found[self._ids.get(index, str(index))] = "not a JSON object"
        return found


def _clean_chunk(chunk: ChatGenerationChunk) -> ChatGenerationChunk:
    """The chunk with lone surrogates in its text and tool arguments
    replaced (a provider can send them as JSON escapes)."""
    message = chunk.message
    if isinstance(message.content, str):
        message.content = encodable(message.content)
    for part in getattr(message, "tool_call_chunks", None) or []:
        if isinstance(part.get("args"), str):
            part["args"] = encodable(part["args"])
    if isinstance(chunk.text, str):
        chunk.text = encodable(chunk.text)
    return chunk


# How long a streamed reply may send nothing but keep-alives before it is
# given up (the read timeout, HAICO_MODEL_TIMEOUT, counts any bytes).
CONTENT_SILENCE_SECONDS = 120.0


class ModelStreamSilent(TimeoutError):
    """A streamed reply sent no content for CONTENT_SILENCE_SECONDS."""


async def _within_content_silence(chunks):
    """`chunks`, each within CONTENT_SILENCE_SECONDS of the one before
    (ModelStreamSilent past it). langchain-openai's own limit of this kind
    (`stream_chunk_timeout`, turned off in `get_chat_model`) waits for each
    chunk through asyncio.wait_for, which on Python 3.11 loses a task's
    cancellation when it arrives as a chunk is handed over: a Stop pressed
    while a long answer's chunks were still queued was then ignored until
    the provider finished the reply. asyncio.timeout never runs the wait in
    another task, so a cancellation always reaches the turn."""
    iterator = chunks.__aiter__()
    try:
        while True:
            try:
                async with asyncio.timeout(CONTENT_SILENCE_SECONDS):
                    chunk = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise ModelStreamSilent(f"The model sent nothing for {CONTENT_SILENCE_SECONDS:.0f} seconds.") from None
            yield chunk
    finally:
        await iterator.aclose()


class HaicoChatOpenAI(ChatOpenAI):
    """ChatOpenAI that converts the tool list to OpenAI's format once, and
    checks what a streamed reply carries.

    `create_agent` binds the tools again before every model call (middleware
    may change them per call); ours are the same objects for every call of
    the process, and converting sixteen schemas each time was ~2 % of a busy
    server's time (docs/adr/0009).

    A streamed reply's tool-call arguments are checked as the JSON they were
    sent as (INVALID_TOOL_ARGS_KEY), and lone surrogates in its text are
    replaced, so a bad character cannot break a socket or the checkpoint."""

    _bound: dict = PrivateAttr(default_factory=dict)

    def _stream(self, *args, **kwargs):
        check = _ToolArgsCheck()
        for chunk in super()._stream(*args, **kwargs):
            check.add(chunk.message)
            yield _clean_chunk(chunk)
        problems = check.problems()
        if problems:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", additional_kwargs={INVALID_TOOL_ARGS_KEY: problems}))

    async def _astream(self, *args, **kwargs):
        check = _ToolArgsCheck()
        async for chunk in _within_content_silence(super()._astream(*args, **kwargs)):
            check.add(chunk.message)
            yield _clean_chunk(chunk)
        problems = check.problems()
        if problems:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", additional_kwargs={INVALID_TOOL_ARGS_KEY: problems}))

    def _create_chat_result(self, *args, **kwargs) -> ChatResult:
        result = super()._create_chat_result(*args, **kwargs)
        for generation in result.generations:
            if isinstance(generation.message.content, str):
                generation.message.content = encodable(generation.message.content)
        return result

    def bind_tools(self, tools, **kwargs):
        # The cache holds the tools themselves, so their ids stay theirs.
        key = (tuple(id(tool) for tool in tools), repr(sorted(kwargs.items())))
        cached = self._bound.get(key)
        if cached is None:
            cached = self._bound[key] = (list(tools), super().bind_tools(tools, **kwargs))
        return cached[1]


def available_models() -> list[str]:
    """The models the chat may offer, default first; empty when nothing is configured."""
    if not _endpoint_configured():
        return []
    models = [m for m in getattr(settings, "HAICO_MODELS", []) or [] if m]
    default = getattr(settings, "HAICO_MODEL", "") or ""
    if default and default not in models:
        models.insert(0, default)
    elif default:
        models.remove(default)
        models.insert(0, default)
    return models


def default_model_name() -> str | None:
    models = available_models()
    return models[0] if models else None


def _endpoint_configured() -> bool:
    # A model name alone is not enough: without a key or a base URL the SDK
    # would talk to api.openai.com with no credentials.
    return bool(getattr(settings, "OPENAI_API_KEY", "") or getattr(settings, "OPENAI_BASE_URL", ""))


def get_chat_model(model=None) -> HaicoChatOpenAI:
    """A ChatOpenAI for `model`: a catalogue choice (agent.catalogue.ModelChoice,
    its provider's URL and key), or the name of one of the environment's
    models (default: HAICO_MODEL).

    Raises ModelNotConfigured when no model is set up, ValueError for a name
    the settings do not offer (the chat's model selector sends a name; it
    must not be able to pick an arbitrary one).
    """
    from .catalogue import ModelChoice

    if isinstance(model, ModelChoice):
        name, base_url, api_key = model.model, model.base_url or None, model.api_key or PLACEHOLDER_API_KEY
    else:
        models = available_models()
        if not models:
            raise ModelNotConfigured()
        name = model or models[0]
        if name not in models:
            raise ValueError(f"Unknown model {name!r}; choose one of: {', '.join(models)}.")
        base_url = settings.OPENAI_BASE_URL or None
        api_key = settings.OPENAI_API_KEY or PLACEHOLDER_API_KEY
    remember_secret(api_key)
    # pydantic fields, taken by alias (max_tokens) and converted (api_key to a SecretStr).
    return HaicoChatOpenAI(  # type: ignore[call-arg]
        model=name,
        base_url=base_url,
        api_key=api_key,  # type: ignore[arg-type]
        timeout=settings.HAICO_MODEL_TIMEOUT,
        # The OpenAI SDK retries connection errors, 408/409/429 and 5xx with
        # exponential backoff and honours Retry-After.
        max_retries=settings.HAICO_MODEL_MAX_RETRIES,
        max_tokens=settings.HAICO_MODEL_MAX_TOKENS or None,
        # Token usage in streamed replies too; langchain-openai leaves it off
        # by default whenever a custom base URL is set.
        stream_usage=True,
        # Replaced by _within_content_silence (HaicoChatOpenAI._astream).
        stream_chunk_timeout=None,
        **_http_clients(secret=api_key),
    )
