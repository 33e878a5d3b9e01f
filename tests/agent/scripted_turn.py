"""One turn of the real compiled agent with a scripted model, on a thread."""

from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext
from tests.support.fake_model import Reply, ScriptedChatModel


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
