"""The real ChatOpenAI against a local OpenAI-compatible server, through build_agent.

Nothing is faked on our side of the wire: settings point get_chat_model at the
test server, which answers in JSON or in server-sent events like a provider.
"""

import json

import pytest
from asgiref.sync import sync_to_async
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import AgentProvider
from agent.context import AgentContext
from agent.modes import mode_prompt
from agent.prompt import SYSTEM_PROMPT
from agent.tools.registry import build_tools
from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import OpenAICompatibleServer
from workspace import selectors
from workspace.models import Artifact

pytestmark = pytest.mark.django_db(transaction=True)

CHART_ARGS = {
    "chart_type": "bar",
    "title": "Q1 vs Q2 revenue",
    "description": "Revenue grew by half from Q1 to Q2.",
    "data": [{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}],
}


@pytest.fixture
def server(settings):
    with OpenAICompatibleServer(models=["scripted-model"]) as srv:
        settings.OPENAI_BASE_URL = srv.base_url
        settings.OPENAI_API_KEY = ""
        settings.HAICO_MODEL = "scripted-model"
        settings.HAICO_MODELS = []
        settings.HAICO_MODEL_MAX_RETRIES = 0
        yield srv


def _config(name):
    return {"configurable": {"thread_id": name}}


def _assert_tools_declared(body):
    tools = body["tools"]
    assert [t["function"]["name"] for t in tools] == list([tool.name for tool in build_tools()])
    assert len(tools) == 19
    for tool in tools:
        assert tool["type"] == "function"
        assert "action_and_reasoning" in tool["function"]["parameters"]["required"], tool["function"]["name"]


def _assert_system_first(body, *, contains):
    first = body["messages"][0]
    assert first["role"] == "system"
    assert first["content"].startswith(SYSTEM_PROMPT + "\n\n<workspace>\n<objective>\n")
    assert first["content"].endswith("</workspace>\n\n" + mode_prompt("execute"))
    assert contains in first["content"]
    assert [m["role"] for m in body["messages"]].count("system") == 1


async def test_json_round_trip_runs_the_tool_and_rebuilds_the_prompt(thread, server):
    server.script(
        [
            Reply(
                tool_calls=[
                    tool_call("set_objective", "Writing down what you want to achieve.", text="Compare quarterly revenue")
                ]
            ),
            Reply(text="I recorded the objective: comparing quarterly revenue."),
        ]
    )
    agent = AgentProvider().graph(model=None, checkpointer=InMemorySaver())

    result = await agent.ainvoke(
        {"messages": [HumanMessage("Let's compare revenue")]}, _config("wire-json"), context=AgentContext(thread=thread)
    )

    first, second = server.requests
    assert first["model"] == "scripted-model"
    assert not first.get("stream")
    assert first["max_completion_tokens"] == 4096
    _assert_system_first(first, contains="(no plan yet)")
    _assert_tools_declared(first)
    assert first["messages"][1] == {"role": "user", "content": "Let's compare revenue"}
    # The second call sees the tool's effect in its prompt, and the tool result in history.
    _assert_system_first(second, contains="<objective>\nCompare quarterly revenue\n</objective>")
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "set_objective"
    assert json.loads(second["messages"][3]["content"])["success"] is True
    assert await sync_to_async(selectors.objective_text_for)(thread=thread) == "Compare quarterly revenue"
    assert result["messages"][-1].content == "I recorded the objective: comparing quarterly revenue."


async def test_streamed_tool_call_and_answer_tokens(thread, server):
    answer = "I charted Q1 against Q2 in the centre panel."
    server.script(
        [
            Reply(tool_calls=[tool_call("chart_generator", "Drawing the two quarters side by side.", **CHART_ARGS)]),
            Reply(text=answer),
        ]
    )
    agent = AgentProvider().graph(model=None, checkpointer=InMemorySaver())

    events = []
    async for mode, payload in agent.astream(
        {"messages": [HumanMessage("chart Q1 vs Q2 revenue: 120, 180")]},
        _config("wire-sse"),
        context=AgentContext(thread=thread, turn_index=7),
        stream_mode=["updates", "messages"],
    ):
        events.append((mode, payload))

    first, second = server.requests
    assert first["stream"] is True and second["stream"] is True
    _assert_system_first(first, contains="(no plan yet)")
    _assert_tools_declared(first)
    # The artifact exists, tagged with the turn, and the next prompt points at it.
    artifact = await sync_to_async(Artifact.objects.get)(thread=thread)
    assert (artifact.artifact_type, artifact.title, artifact.turn_index) == ("bar_chart", "Q1 vs Q2 revenue", 7)
    _assert_system_first(
        second, contains=f'<latest_artifact id="{artifact.pk}" type="bar_chart" turn_index="7" title="Q1 vs Q2 revenue"/>'
    )

    model_chunks = [p[0] for mode, p in events if mode == "messages" and p[1]["langgraph_node"] == "model"]
    # The tool call's arguments arrived in several pieces and reassemble exactly.
    pieces = [c for chunk in model_chunks for c in chunk.tool_call_chunks]
    assert len(pieces) > 5
    assert pieces[0]["name"] == "chart_generator"
    assert json.loads("".join(p["args"] or "" for p in pieces)) == {
        **CHART_ARGS,
        "action_and_reasoning": "Drawing the two quarters side by side.",
    }
    # The answer streamed token by token, in order.
    tokens = [c.content for c in model_chunks if c.content]
    assert len(tokens) > 10
    assert "".join(tokens) == answer
    # Updates carry each whole step once: tool call, tool result, answer.
    updates = [
        (node, msg)
        for mode, p in events
        if mode == "updates"
        for node, value in p.items()
        for msg in ((value or {}).get("messages") or [])
    ]
    assert [(node, msg.type) for node, msg in updates] == [("model", "ai"), ("tools", "tool"), ("model", "ai")]
    assert updates[0][1].tool_calls[0]["args"]["data"] == CHART_ARGS["data"]
    assert json.loads(updates[1][1].content)["artifact_id"] == artifact.pk
    assert updates[2][1].content == answer


async def test_blank_streamed_reply_is_asked_again_over_the_wire(thread, server):
    server.script([Reply(), Reply(text="Second time lucky.")])
    agent = AgentProvider().graph(model=None, checkpointer=InMemorySaver())

    events = []
    async for mode, payload in agent.astream(
        {"messages": [HumanMessage("Hi")]},
        _config("wire-blank"),
        context=AgentContext(thread=thread),
        stream_mode=["updates", "messages"],
    ):
        events.append((mode, payload))

    assert len(server.requests) == 2
    model_chunks = [p[0] for mode, p in events if mode == "messages" and p[1]["langgraph_node"] == "model"]
    assert len({c.id for c in model_chunks}) == 1  # nothing of the blank attempt
    assert "".join(c.content for c in model_chunks) == "Second time lucky."


async def test_provider_error_is_retried_by_the_client(thread, server, settings):
    from tests.support.openai_server import HTTPFailure

    settings.HAICO_MODEL_MAX_RETRIES = 2
    server.script([HTTPFailure(503, "overloaded", retry_after=0), Reply(text="Recovered.")])
    agent = AgentProvider().graph(model=None, checkpointer=InMemorySaver())

    result = await agent.ainvoke({"messages": [HumanMessage("Hi")]}, _config("wire-503"), context=AgentContext(thread=thread))

    assert len(server.requests) == 2
    assert result["messages"][-1].content == "Recovered."
