"""The scripted model drives a real create_agent loop, streamed and not."""

from langchain.agents import create_agent
from langchain_core.tools import tool

from tests.support.fake_model import Reply, ScriptedChatModel, tool_call


@tool
def add(a: int, b: int, action_and_reasoning: str) -> str:
    """Add two numbers."""
    return str(a + b)


async def test_scripted_model_streams_tool_call_then_answer():
    model = ScriptedChatModel(script=[Reply(text="Adding.", tool_calls=[tool_call("add", a=2, b=3)]), Reply(text="It is 5.")])
    agent = create_agent(model=model, tools=[add])
    tokens, tool_results = [], []
    async for mode, payload in agent.astream({"messages": [("user", "2+3?")]}, stream_mode=["updates", "messages"]):
        if mode == "messages":
            chunk, meta = payload
            if meta.get("langgraph_node") == "model" and chunk.content:
                tokens.append(chunk.content)
        elif "tools" in payload:
            tool_results += [m.content for m in payload["tools"]["messages"]]
    assert tool_results == ["5"]
    assert "".join(tokens) == "Adding.It is 5."
    assert len(model.requests) == 2
