"""The @workspace_tool wrapper: reasoning field, envelopes, transactions, the
run's context (thread and turn), and the tools node of a real agent loop."""

import asyncio
import json
import logging

import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from pydantic import BaseModel

from agent.context import AgentContext
from agent.steps import REASON_MAX_CHARS
from agent.tools.decorator import as_langchain_tool, workspace_tool
from agent.tools.envelope import parse_envelope
from tests.agent.tools.helpers import REASON, call, db, runtime_for, tools_by_name
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call
from workspace import selectors
from workspace.services import objective as objective_services

pytestmark = pytest.mark.django_db(transaction=True)


class EchoArgs(BaseModel):
    word: str


class _Probe:
    """A registered-like tool around `body`, invoked as the tools node would."""

    def __init__(self, thread, body, args_schema=EchoArgs):
        spec = workspace_tool(name="probe", description="Test probe.", args_schema=args_schema, register=False)(body).tool_spec
        self.tool = as_langchain_tool(spec)
        self.thread = thread

    async def ainvoke(self, args, *, thread=None, turn_index=0):
        return await self.tool.ainvoke({**args, "runtime": runtime_for(thread or self.thread, turn_index)})


_probe_tool = _Probe


async def test_tool_call_dict_returns_tool_message_with_envelope(thread):
    tool = tools_by_name()["set_objective"]
    args = {"text": "Plan a trip", "action_and_reasoning": REASON, "runtime": runtime_for(thread)}
    message = await tool.ainvoke({"name": "set_objective", "args": args, "id": "call-1", "type": "tool_call"})
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "call-1"
    assert json.loads(message.content) == {"success": True, "summary": "Objective set to: Plan a trip"}
    assert await db(selectors.objective_text_for, thread=thread) == "Plan a trip"


async def test_malformed_tool_call_returns_failure_envelope_instead_of_raising(thread):
    tool = tools_by_name()["toggle_todos"]
    args = {"indices": "all", "action_and_reasoning": REASON, "runtime": runtime_for(thread)}
    message = await tool.ainvoke({"name": "toggle_todos", "args": args, "id": "call-2", "type": "tool_call"})
    assert isinstance(message, ToolMessage) and message.status == "error"
    envelope = json.loads(message.content)
    assert envelope["success"] is False
    assert envelope["error"].startswith("Invalid arguments for toggle_todos: indices: Input should be a valid list")


async def test_missing_action_and_reasoning_fails_and_changes_nothing(thread):
    for reason in (None, "   "):
        result = await call(thread, "set_objective", reason=reason, text="Plan a trip")
        assert result["success"] is False
        assert "action_and_reasoning" in result["error"]
    assert await db(selectors.objective_text_for, thread=thread) is None


async def test_body_never_sees_action_and_reasoning_and_it_is_logged(thread, caplog):
    seen = {}

    def body(thread, **kwargs):
        seen.update(kwargs)
        return f"echo {kwargs['word']}"

    tool = _probe_tool(thread, body)
    with caplog.at_level(logging.INFO, logger="haico.agent.tools"):
        content = await tool.ainvoke({"word": "hi", "action_and_reasoning": "Saying hello to check the wiring."})
    assert json.loads(content) == {"success": True, "summary": "echo hi"}
    assert seen == {"word": "hi"}
    assert any("Saying hello to check the wiring." in r.getMessage() for r in caplog.records if r.name == "haico.agent.tools")


async def test_unexpected_error_rolls_back_and_returns_generic_failure(thread, caplog):
    def body(thread, *, word):
        objective_services.objective_set(thread=thread, text=word)
        raise RuntimeError("disk on fire")

    tool = _probe_tool(thread, body)
    with caplog.at_level(logging.ERROR, logger="haico.agent.tools"):
        content = await tool.ainvoke({"word": "Half-done", "action_and_reasoning": REASON})
    envelope = json.loads(content)
    assert envelope["success"] is False
    assert "nothing was changed" in envelope["error"] and "disk on fire" not in envelope["error"]
    assert await db(selectors.objective_text_for, thread=thread) is None
    assert any(r.exc_info and "disk on fire" in str(r.exc_info[1]) for r in caplog.records)


async def test_artifact_failure_rolls_back_the_body_write(thread):
    def body(thread, *, word):
        objective_services.objective_set(thread=thread, text=word)
        return "made", {"artifact_type": "bar_chart", "title": "x", "payload": {"bad": {1, 2}}}

    envelope = json.loads(await _probe_tool(thread, body).ainvoke({"word": "Kept?", "action_and_reasoning": REASON}))
    assert envelope == {"success": False, "error": "Artifact payload must be plain JSON (objects, lists, text, numbers)."}
    assert await db(selectors.objective_text_for, thread=thread) is None


async def test_each_call_acts_on_the_thread_of_its_own_run(thread, owner):
    from conversations.services import thread_create

    other = await db(thread_create, owner=owner, title="Other thread")
    tool = _probe_tool(thread, lambda thread, *, word: f"{word}:{thread.title}")

    async def run(word, on):
        return json.loads(await tool.ainvoke({"word": word, "action_and_reasoning": REASON}, thread=on))["summary"]

    # One tool object serves every thread: concurrent calls never mix them up.
    results = await asyncio.gather(run("a", thread), run("b", other), asyncio.create_task(run("c", thread)))
    assert results == ["a:Lit review", "b:Other thread", "c:Lit review"]


def test_sync_invoke_path_works_outside_the_event_loop(thread):
    tool = tools_by_name()["add_todos"]
    content = tool.invoke({"steps": [{"text": "Only step"}], "action_and_reasoning": REASON, "runtime": runtime_for(thread, 2)})
    assert parse_envelope(content) == {"success": True, "summary": "Added 1 step: #1 'Only step'."}
    assert [t.text for t in selectors.todos_for(thread=thread)] == ["Only step"]


def test_parse_envelope_recognises_only_envelopes():
    assert parse_envelope('{"success": false, "error": "x"}') == {"success": False, "error": "x"}
    assert parse_envelope("plain text") is None
    assert parse_envelope('{"summary": "no flag"}') is None
    assert parse_envelope(None) is None


def test_duplicate_tool_names_are_refused():
    from agent.tools import documents

    with pytest.raises(ValueError, match="update_document"):
        workspace_tool(name="update_document", description="Clash.")(lambda thread: "x")
    assert documents.update_document.tool_spec.name == "update_document"


async def test_agent_loop_recovers_from_a_bad_call_through_the_tools_node(thread):
    from agent.tools.registry import build_tools

    model = ScriptedChatModel(
        script=[
            Reply(tool_calls=[tool_call("add_todos", "Writing down the steps.", steps=[{"depth": 0}])]),
            Reply(tool_calls=[tool_call("add_todos", "Writing down the steps.", steps=[{"text": "Find sources"}])]),
            Reply(
                tool_calls=[
                    tool_call(
                        "chart_generator",
                        "Drawing the quarterly comparison.",
                        chart_type="bar",
                        title="Q1 vs Q2",
                        data=[{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}],
                    ),
                    tool_call("toggle_todos", "Ticking off the finished step.", indices=[1]),
                ]
            ),
            Reply(text="Done."),
        ]
    )
    agent = create_agent(model=model, tools=build_tools(), context_schema=AgentContext)
    state = await agent.ainvoke(
        {"messages": [("user", "Plan and chart Q1 vs Q2 revenue: 120, 180")]}, context=AgentContext(thread=thread, turn_index=4)
    )
    envelopes = [parse_envelope(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [e["success"] for e in envelopes] == [False, True, True, True]
    assert "steps → item 1 → text: Field required" in envelopes[0]["error"]
    assert envelopes[2]["artifact"]["artifact_type"] == "bar_chart"
    assert await db(lambda: [(t.text, t.done) for t in selectors.todos_for(thread=thread)]) == [("Find sources", True)]
    artifact = await db(selectors.latest_artifact_for, thread=thread)
    assert (artifact.pk, artifact.turn_index) == (envelopes[2]["artifact_id"], 4)


async def test_a_reasoning_sentence_over_its_limit_is_refused_naming_the_limit(thread):
    """The sentence the person reads is bounded like every other text: a longer one is refused and
    nothing is written."""
    result = await call(thread, "set_objective", reason="Because " * 200, text="Write the report.")
    assert result["success"] is False
    assert "action_and_reasoning" in result["error"] and f"{REASON_MAX_CHARS}" in result["error"], result
    assert await db(selectors.objective_text_for, thread=thread) is None
