"""LangSmith's `traceable` without its thread hops while nothing is traced
(docs/adr/0089).

`create_agent` wraps every middleware's `awrap_model_call` and
`awrap_tool_call` in `langsmith.traceable`, traced or not. Its async wrapper
starts and ends each call on a worker thread of the loop's default executor
(two hops per middleware per call, ~20 per agent step with ours) and runs
the call in a task of its own. With tracing off, what those hops run is a
few dictionary look-ups: it runs here, on the loop, the way LangSmith's
documented runtime override allows. With tracing on, LangSmith's own path
is kept (it may read files or start its client there).

The middleware hooks go further: while nothing is traced they are called
without LangSmith's wrapper at all (docs/adr/0093). "Traced" is LangSmith's
own test (`tracing_is_enabled`: a tracing context, a run under way, or the
environment); a tracer handed to one run through its callbacks alone still
traces the model and tool calls, without the hooks' spans.
"""

from __future__ import annotations

import functools
import inspect

import langsmith
from langchain.agents import factory as langchain_factory
from langsmith.utils import tracing_is_enabled


async def _inline_while_untraced(default_aio_to_thread, ctx, func, /, *args, **kwargs):
    if tracing_is_enabled():
        return await default_aio_to_thread(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def run_untraced_calls_inline() -> None:
    """Install the override for this process (idempotent)."""
    langsmith.set_runtime_overrides(aio_to_thread=_inline_while_untraced)


def _untraced_unless_tracing(**traceable_kwargs):
    """`langsmith.traceable` for the middleware hooks of `create_agent`: each
    call goes through LangSmith's wrapper only while tracing is on, and
    straight to the hook otherwise. The wrapper's set-up (a run tree looked
    for, a tracing context entered and left) cost about as much as the hook
    itself, on each of the dozen hooks of every model and tool call
    (docs/adr/0093)."""
    decorate = langsmith.traceable(**traceable_kwargs)

    def wrap(hook):
        traced = decorate(hook)
        if inspect.iscoroutinefunction(hook):

            async def async_hook(*args, **kwargs):
                if tracing_is_enabled():
                    return await traced(*args, **kwargs)
                return await hook(*args, **kwargs)

            return functools.wraps(hook)(async_hook)

        def sync_hook(*args, **kwargs):
            if tracing_is_enabled():
                return traced(*args, **kwargs)
            return hook(*args, **kwargs)

        return functools.wraps(hook)(sync_hook)

    return wrap


def trace_middleware_hooks_only_while_tracing() -> None:
    """Install `_untraced_unless_tracing` as the `traceable` that
    `create_agent` wraps middleware hooks in (idempotent)."""
    langchain_factory.traceable = _untraced_unless_tracing
