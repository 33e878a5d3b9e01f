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
"""

from __future__ import annotations

import langsmith
from langsmith.utils import tracing_is_enabled


async def _inline_while_untraced(default_aio_to_thread, ctx, func, /, *args, **kwargs):
    if tracing_is_enabled():
        return await default_aio_to_thread(ctx, func, *args, **kwargs)
    return ctx.run(func, *args, **kwargs)


def run_untraced_calls_inline() -> None:
    """Install the override for this process (idempotent)."""
    langsmith.set_runtime_overrides(aio_to_thread=_inline_while_untraced)
