"""Helpers shared by the tool tests: call a tool the way the tools node does
and read the envelope back, and run ORM reads from async tests."""

import json

from asgiref.sync import sync_to_async

from agent.tools.registry import build_tools

REASON = "Keeping the shared workspace in step with what you asked for."


def tools_by_name(thread) -> dict:
    return {tool.name: tool for tool in build_tools(thread)}


async def call(thread, name: str, reason: str | None = REASON, **args) -> dict:
    """Invoke tool `name` on `thread` with `args` and return the parsed envelope."""
    if reason is not None:
        args["action_and_reasoning"] = reason
    content = await tools_by_name(thread)[name].ainvoke(args)
    return json.loads(content)


async def db(fn, *args, **kwargs):
    """Run a synchronous ORM read from an async test."""
    return await sync_to_async(fn, thread_sensitive=True)(*args, **kwargs)
