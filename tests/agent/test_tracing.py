"""agent.tracing: LangSmith's traceable wrappers (around every middleware
hook of create_agent) run their set-up on the event loop while nothing is
traced, and on LangSmith's worker thread when something is (docs/adr/0089);
the middleware hooks skip the wrapper while nothing is traced (docs/adr/0093)."""

import threading

import langsmith
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langsmith import traceable

from agent.tracing import run_untraced_calls_inline
from tests.support.fake_model import Reply, ScriptedChatModel


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


class _Noting(AgentMiddleware):
    """A middleware whose model-call hook notes that it ran."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    async def awrap_model_call(self, request, handler):
        self.calls += 1
        return await handler(request)


async def _run_agent_with(middleware) -> str:
    graph = create_agent(model=ScriptedChatModel(script=[Reply(text="Done.")]), middleware=[middleware])
    result = await graph.ainvoke({"messages": [("user", "go")]})
    return result["messages"][-1].content


async def test_an_untraced_agent_calls_its_middleware_hooks_without_langsmiths_wrapper(monkeypatch):
    monkeypatch.delenv("LANGSMITH_TRACING", raising=False)
    monkeypatch.delenv("LANGCHAIN_TRACING_V2", raising=False)
    seen = _threads_of_setup(monkeypatch)
    middleware = _Noting()
    assert await _run_agent_with(middleware) == "Done."
    assert middleware.calls == 1
    assert seen == []


async def test_a_traced_agent_keeps_its_middleware_hooks_spans(monkeypatch):
    seen = _threads_of_setup(monkeypatch)
    middleware = _Noting()
    with langsmith.tracing_context(enabled=True, client=_NoUpload()):
        assert await _run_agent_with(middleware) == "Done."
    assert middleware.calls == 1
    assert len(seen) >= 1
