"""The most one answer may hold (settings.HAICO_ANSWER_MAX_CHARS, docs/adr/0043).

A model, or a server that speaks its protocol, can stream an answer of any
length; the output-token limit (HAICO_MODEL_MAX_TOKENS) only binds servers
that honour it. Past the cap nothing more of the answer is useful to the
person, and all of it would be rendered, stored, pushed to every tab and sent
back to the model with every later turn. So the answer is cut at the cap,
and ends with a note saying so.

`AnswerCapMiddleware` does it where the reply is made: while the model
streams, a callback counts the answer's characters and, past the cap, raises
out of the model call, which stops reading the model's stream (the
connection to the provider is closed); the call then returns the answer so
far, cut, as the model's reply. A reply that arrives whole (no streaming) is
cut the same way. Either way the history holds the cut answer, and the turn
ends normally. The turn runner cuts what it streams to the tabs with the same
`capped_answer`, so the live answer and the stored one agree.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, cast

from django.conf import settings
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import AIMessage
from langchain_core.runnables.config import RunnableConfig, var_child_runnable_config
from langgraph.config import get_stream_writer

from .events import Diagnostic

logger = logging.getLogger("haico.agent")

DEFAULT_ANSWER_MAX_CHARS = 200_000
# On a reply cut by this module: the cap it was cut at.
ANSWER_CAPPED_KEY = "haico_answer_capped"
_FENCES = ("```", "~~~")


def answer_max_chars() -> int:
    return max(1, int(getattr(settings, "HAICO_ANSWER_MAX_CHARS", DEFAULT_ANSWER_MAX_CHARS)))


def cut_note(max_chars: int) -> str:
    count = f"{max_chars:,}".replace(",", " ")
    return f"… (the answer was cut here: longer than {count} characters)"


def capped_answer(text: str, max_chars: int) -> str:
    """`text` if it fits in `max_chars`, else its first `max_chars`
    characters and the note that it was cut (after closing a code block the
    cut left open, so the note is not shown as code)."""
    if len(text) <= max_chars:
        return text
    kept = text[:max_chars]
    fences = sum(1 for line in kept.splitlines() if line.lstrip(" ").startswith(_FENCES))
    if fences % 2:
        kept += "\n```"
    return f"{kept}\n\n{cut_note(max_chars)}"


class AnswerTooLong(Exception):
    """Raised out of the model's stream once the answer passes the cap."""


class _AnswerMeter(BaseCallbackHandler):
    """Counts the answer text a model streams; past the cap it raises, which
    ends the model call (raise_error: langchain-core re-raises it)."""

    run_inline = True
    raise_error = True

    def __init__(self, max_chars: int):
        self.max_chars = max_chars
        self.parts: list[str] = []
        self.length = 0
        self.message_id: str | None = None

    def on_llm_new_token(self, token, *, chunk=None, run_id=None, **kwargs):
        message = getattr(chunk, "message", None)
        if self.message_id is None and message is not None and message.id:
            self.message_id = message.id
        text = token if isinstance(token, str) else ""
        if not text:
            return
        self.parts.append(text)
        self.length += len(text)
        if self.length > self.max_chars:
            raise AnswerTooLong(f"the answer passed {self.max_chars} characters")


@contextlib.contextmanager
def _metered(max_chars: int) -> Iterator[_AnswerMeter | None]:
    """Run the block with an answer meter among the model call's callbacks
    (the model node calls the model with the config in langchain-core's
    context variable; a copy with the meter added affects this call only).
    None when the call streams to no one: its reply is cut when it returns."""
    config = var_child_runnable_config.get()
    callbacks = (config or {}).get("callbacks")
    if not isinstance(callbacks, BaseCallbackManager):
        yield None
        return
    meter = _AnswerMeter(max_chars)
    manager = callbacks.copy()
    manager.add_handler(meter, inherit=True)
    # config holds callbacks here, so it is not None.
    token = var_child_runnable_config.set(cast(RunnableConfig, {**(config or {}), "callbacks": manager}))
    try:
        yield meter
    finally:
        var_child_runnable_config.reset(token)


def _reply_of(response: ModelResponse | AIMessage) -> AIMessage | None:
    messages = [response] if isinstance(response, AIMessage) else response.result
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            return message
    return None


def _cut_message(*, text: str, max_chars: int, message_id: str | None, base: AIMessage | None = None) -> AIMessage:
    meta = {**((base.response_metadata or {}) if base is not None else {}), "finish_reason": "stop", ANSWER_CAPPED_KEY: max_chars}
    update: dict[str, Any] = {"content": capped_answer(text, max_chars), "response_metadata": meta}
    if base is not None:
        return base.model_copy(update=update)
    return AIMessage(id=message_id, **update)


def _report(max_chars: int) -> None:
    message = f"The model's answer was longer than {max_chars} characters; it was cut there (HAICO_ANSWER_MAX_CHARS)."
    logger.warning(message)
    try:
        writer = get_stream_writer()
    except RuntimeError:  # outside a graph run
        return
    writer(Diagnostic(level="warning", message=message, kind="truncation"))


class AnswerCapMiddleware(AgentMiddleware):
    """Cuts a model's answer at `max_chars` (see the module's docstring)."""

    def __init__(self, *, max_chars: int):
        super().__init__()
        self.max_chars = max_chars

    @property
    def name(self) -> str:
        return "AnswerCap"

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        with _metered(self.max_chars) as meter:
            try:
                response = await handler(request)
            except AnswerTooLong:
                return self._stream_cut(meter)  # type: ignore[arg-type]  # only a meter raises it
        return self._cut_if_long(response)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        with _metered(self.max_chars) as meter:
            try:
                response = handler(request)
            except AnswerTooLong:
                return self._stream_cut(meter)  # type: ignore[arg-type]  # only a meter raises it
        return self._cut_if_long(response)

    def _stream_cut(self, meter: _AnswerMeter) -> ModelResponse:
        _report(self.max_chars)
        # The id of the streamed chunks: the tabs already hold this message's
        # text, and LangGraph's message stream does not send it again.
        reply = _cut_message(text="".join(meter.parts), max_chars=self.max_chars, message_id=meter.message_id)
        return ModelResponse(result=[reply])

    def _cut_if_long(self, response):
        reply = _reply_of(response)
        if reply is None or len(reply.text) <= self.max_chars:
            return response
        _report(self.max_chars)
        cut = _cut_message(text=reply.text, max_chars=self.max_chars, message_id=reply.id, base=reply)
        if isinstance(response, AIMessage):
            return cut
        return ModelResponse(
            result=[cut if message is reply else message for message in response.result],
            structured_response=response.structured_response,
        )
