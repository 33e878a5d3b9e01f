"""The turn a tool call belongs to, published by the turn runner.

Tools are built once per thread but an artifact must be tagged with the turn
that produced it. A ContextVar carries the index without threading it through
LangGraph: asyncio tasks copy the context they are created in, and asgiref's
`sync_to_async` runs the tool body inside a copy of the caller's context, so
the value set around `agent.astream(...)` is what the tool body reads.
Concurrent turns (other threads, other users) each see their own value.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_current_turn_index: ContextVar[int] = ContextVar("haico_current_turn_index", default=0)


@contextmanager
def bind_turn_index(turn_index: int) -> Iterator[None]:
    """Make `get_turn_index()` return `turn_index` inside the block."""
    token = _current_turn_index.set(int(turn_index))
    try:
        yield
    finally:
        _current_turn_index.reset(token)


def get_turn_index() -> int:
    """The bound turn index, or 0 outside any turn (e.g. a tool called from a shell)."""
    return _current_turn_index.get()
