"""agent.tracing: LangSmith's traceable wrappers (around every middleware
hook of create_agent) run their set-up on the event loop while nothing is
traced, and on LangSmith's worker thread when something is (docs/adr/0089)."""

import threading

import langsmith
from langsmith import traceable

from agent.tracing import run_untraced_calls_inline


def _threads_of_setup(monkeypatch) -> list[int]:
    """The threads LangSmith's set-up and end of a traced call run in."""
    from langsmith import run_helpers

    seen: list[int] = []
    real_setup = run_helpers._setup_run

    def recording_setup(*args, **kwargs):
        seen.append(threading.get_ident())
        return real_setup(*args, **kwargs)

    monkeypatch.setattr(run_helpers, "_setup_run", recording_setup)
    return seen


@traceable(name="bench-hook")
async def _hook(value: int) -> int:
    return value + 1


async def test_an_untraced_call_sets_up_on_the_event_loop(monkeypatch):
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    monkeypatch.delenv("LANGCHAIN_TRACING_V2", raising=False)
    run_untraced_calls_inline()
    seen = _threads_of_setup(monkeypatch)
    assert await _hook(1) == 2
    assert seen == [threading.get_ident()]


async def test_a_traced_call_keeps_langsmiths_worker_thread(monkeypatch):
    run_untraced_calls_inline()
    seen = _threads_of_setup(monkeypatch)
    with langsmith.tracing_context(enabled=True, client=_NoUpload()):
        assert await _hook(1) == 2
    assert len(seen) == 1 and seen[0] != threading.get_ident()


class _NoUpload:
    """A LangSmith client that sends nothing anywhere."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None
