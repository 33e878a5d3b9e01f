"""Helpers shared by the tool tests: call a tool the way the tools node does
(with the run's context as its runtime) and read the envelope back, and run
ORM reads from async tests."""

import json

from asgiref.sync import sync_to_async
from langchain.tools import ToolRuntime

from agent.context import AgentContext, Seen
from agent.tools.registry import build_tools

REASON = "Keeping the shared workspace in step with what you asked for."


def tools_by_name() -> dict:
    return {tool.name: tool for tool in build_tools()}


def runtime_for(thread, turn_index: int = 0, seen_version: int | None = None, person=None) -> ToolRuntime:
    """What LangGraph's tools node injects as a tool's `runtime` during a run;
    `seen_version` is the document version the run's latest model call was
    shown (the prompt middleware records it; None: no model call yet);
    `person` whose message the turn answers."""
    return ToolRuntime(
        state={"messages": []},
        context=AgentContext(thread=thread, turn_index=turn_index, seen=Seen(document_version=seen_version), person=person),
        config={},
        stream_writer=lambda _chunk: None,
        tool_call_id="test-call",
        store=None,
    )


async def call(
    thread,
    name: str,
    reason: str | None = REASON,
    *,
    turn_index: int = 0,
    seen_version: int | None = None,
    person=None,
    **args,
) -> dict:
    """Invoke tool `name` on `thread` with `args` and return the parsed envelope."""
    if reason is not None:
        args["action_and_reasoning"] = reason
    runtime = runtime_for(thread, turn_index, seen_version, person)
    content = await tools_by_name()[name].ainvoke({**args, "runtime": runtime})
    return json.loads(content)


async def db(fn, *args, **kwargs):
    """Run a synchronous ORM read from an async test."""
    return await sync_to_async(fn, thread_sensitive=True)(*args, **kwargs)
