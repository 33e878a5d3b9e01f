"""One turn of the real compiled agent with a scripted model, on a thread."""

import json

from asgiref.sync import sync_to_async
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext
from tests.support.fake_model import Reply, ScriptedChatModel
from workspace import selectors
from workspace.models import Preference


async def tool_results_of_a_turn(thread, script) -> list[ToolMessage]:
    """Run `script` (then a closing answer) as turn 1 of `thread`; the tool
    results its last model call was sent."""
    model = ScriptedChatModel(script=[*script, Reply(text="Done.")])
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    await agent.ainvoke(
        {"messages": [HumanMessage("Go on")]},
        {"configurable": {"thread_id": str(thread.pk)}},
        context=AgentContext(thread=thread, turn_index=1),
    )
    return [m for m in model.requests[-1] if isinstance(m, ToolMessage)]


def envelopes_of(results: list[ToolMessage]) -> list[dict]:
    """Each tool result's envelope (agent.tools.envelope), in order."""
    return [json.loads(result.content) for result in results]


@sync_to_async
def preferences_stored(thread) -> list[tuple[str, str, str]]:
    """(title, subtitle, kind) of the thread's preferences, oldest first."""
    return list(Preference.objects.filter(thread=thread).order_by("pk").values_list("title", "subtitle", "kind"))


@sync_to_async
def steps_stored(thread) -> list[tuple[str, bool, int]]:
    """(text, done, depth) of the thread's plan steps, in the plan's order."""
    return [(step.text, step.done, step.depth) for step in selectors.plan_steps(thread=thread)]


@sync_to_async
def document_stored(thread) -> tuple[str, int]:
    """The thread's document as stored: its text and version."""
    document = selectors.document_for(thread=thread)
    return document.content, document.version
