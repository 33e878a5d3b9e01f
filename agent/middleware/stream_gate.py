"""The gate between one model attempt and the messages stream.

With `stream_mode="messages"` LangGraph streams every token of every model
call through a callback handler in the run's config, so a discarded
attempt's tokens would reach the browser. Each attempt therefore runs with
that handler replaced by an `_AttemptGate` that decides what gets through.
Two policies:

- "live" (default): tokens go out as the model produces them, which keeps the
  first answer token within milliseconds of the model (docs/adr/0072). Chunks
  with nothing visible (no text, no tool-call fragment) are held back until
  something visible arrives, so a blank attempt never reaches the stream at
  all. A discarded attempt that did stream something (a malformed reply with
  partial text: the only such case, since a blank reply has no tokens) is
  followed on the stream by a `RemoveMessage` carrying the id of its
  streamed message, so the consumer drops that partial text.
- "buffered": an attempt's chunks are held until it is accepted and then
  replayed in order; a discarded attempt never reaches the stream. Strict,
  but the person sees nothing until the whole reply is generated.

Either way the graph's state and the "updates" stream only ever contain the
accepted attempt.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.messages import RemoveMessage
from langchain_core.runnables.config import RunnableConfig, var_child_runnable_config
from langchain_core.tracers._streaming import _StreamingCallbackHandler
from langgraph.pregel._messages import StreamMessagesHandler, StreamMessagesHandlerV2


def _is_visible(chunk: Any) -> bool:
    message = getattr(chunk, "message", None)
    if message is None:
        return False
    return bool(getattr(message, "text", "") or getattr(message, "tool_call_chunks", None))


class _DiscardedAttempt(Exception):
    """Passed to the wrapped handler's on_llm_error so it forgets a discarded run."""


class _AttemptGate(BaseCallbackHandler, _StreamingCallbackHandler):
    """Stands in for LangGraph's StreamMessagesHandler during one model attempt.

    Inheriting `_StreamingCallbackHandler` keeps the chat model streaming
    (langchain-core streams only when such a handler is attached).
    """

    run_inline = True  # same ordering guarantees as the handler it wraps

    def __init__(self, inner: StreamMessagesHandler, *, live: bool):
        self.inner = inner
        self.live = live
        self._open = False  # live mode: something visible went out already
        self._held: list[tuple[str, Any, UUID, dict]] = []
        self._ends: list[tuple[Any, UUID, dict]] = []
        self._runs: list[UUID] = []
        self._streamed_ids: dict[UUID, list[str]] = {}

    # -- callbacks --------------------------------------------------------

    def on_chat_model_start(self, serialized, messages, *, run_id: UUID, **kwargs):
        self._runs.append(run_id)
        return self.inner.on_chat_model_start(serialized, messages, run_id=run_id, **kwargs)

    def on_llm_new_token(self, token, *, chunk=None, run_id: UUID, **kwargs):
        if self.live and (self._open or _is_visible(chunk)):
            self._open = True
            self._release_held()
            self._forward(token, chunk, run_id, kwargs)
        else:
            self._held.append((token, chunk, run_id, kwargs))

    def on_llm_end(self, response, *, run_id: UUID, **kwargs):
        # Held: the wrapped handler would emit the whole final message here,
        # before we know whether this attempt is kept.
        self._ends.append((response, run_id, kwargs))

    def on_llm_error(self, error, *, run_id: UUID, **kwargs):
        self.inner.on_llm_error(error, run_id=run_id, **kwargs)

    def tap_output_aiter(self, run_id, output):
        return self.inner.tap_output_aiter(run_id, output)

    def tap_output_iter(self, run_id, output):
        return self.inner.tap_output_iter(run_id, output)

    # -- decisions --------------------------------------------------------

    def _forward(self, token, chunk, run_id, kwargs):
        message = getattr(chunk, "message", None)
        if message is not None and run_id in self.inner.metadata:
            ids = self._streamed_ids.setdefault(run_id, [])
            self.inner.on_llm_new_token(token, chunk=chunk, run_id=run_id, **kwargs)
            # The handler assigns an id to id-less chunks as it emits them.
            if message.id and message.id not in ids:
                ids.append(message.id)
        else:
            self.inner.on_llm_new_token(token, chunk=chunk, run_id=run_id, **kwargs)

    def _release_held(self):
        held, self._held = self._held, []
        for token, chunk, run_id, kwargs in held:
            self._forward(token, chunk, run_id, kwargs)

    def accept(self) -> None:
        self._release_held()
        ends, self._ends = self._ends, []
        for response, run_id, kwargs in ends:
            self.inner.on_llm_end(response, run_id=run_id, **kwargs)

    def abandon(self) -> None:
        """The attempt raised: drop what is held and retract nothing."""
        self._held = []
        self._ends = []
        for run_id in self._runs:
            if run_id in self.inner.metadata:
                self.inner.on_llm_error(_DiscardedAttempt(), run_id=run_id)

    def discard(self) -> None:
        self._held = []
        self._ends = []
        for run_id in self._runs:
            meta = self.inner.metadata.get(run_id)
            if meta is not None:
                for message_id in self._streamed_ids.get(run_id, []):
                    # Relies on StreamMessagesHandler._emit (langgraph pinned in
                    # requirements.txt); tests/agent/test_middleware.py covers it.
                    self.inner._emit(meta, RemoveMessage(id=message_id))
            self.inner.on_llm_error(_DiscardedAttempt(), run_id=run_id)


def _swap(handlers: list, gate_for: Callable[[Any], Any]) -> list:
    return [gate_for(h) for h in handlers]


class _NoGate:
    """Stands in for a gate when nothing is being streamed (plain invoke)."""

    def accept(self) -> None:
        pass

    def abandon(self) -> None:
        pass

    def discard(self) -> None:
        pass


@contextlib.contextmanager
def gated_stream(*, live: bool) -> Iterator[_AttemptGate | _NoGate]:
    """Run the block with the messages-stream handler behind a fresh gate.

    The model node calls the model without an explicit config, so the config
    (and its callbacks) comes from langchain-core's context variable; setting
    a copy with the handler swapped affects this attempt only.
    """
    config = var_child_runnable_config.get()
    callbacks = (config or {}).get("callbacks")
    if not isinstance(callbacks, BaseCallbackManager):
        yield _NoGate()
        return
    gate: _AttemptGate | None = None

    def gate_for(handler):
        nonlocal gate
        # The v2 handler streams protocol events instead of token callbacks;
        # nothing in HAICO opts into it, so it is left as it is.
        if isinstance(handler, StreamMessagesHandler) and not isinstance(handler, StreamMessagesHandlerV2):
            if gate is None or gate.inner is not handler:
                gate = _AttemptGate(handler, live=live)
            return gate
        return handler

    manager = callbacks.copy()
    manager.handlers = _swap(manager.handlers, gate_for)
    manager.inheritable_handlers = _swap(manager.inheritable_handlers, gate_for)
    if gate is None:
        yield _NoGate()
        return
    # config holds callbacks here, so it is not None.
    token = var_child_runnable_config.set(cast(RunnableConfig, {**(config or {}), "callbacks": manager}))
    try:
        yield gate
    finally:
        var_child_runnable_config.reset(token)
