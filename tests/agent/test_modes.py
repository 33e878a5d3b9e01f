"""agent.modes: each mode shows the model only its tools, refuses a call to
any other, says in the prompt which mode is on, and caps its own number of
model calls per turn."""

import json

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext
from agent.events import Answer, CapReached, StepFinished
from agent.history import turns_from_messages
from agent.modes import allowed_tools
from agent.tools.envelope import step_note
from agent.tools.registry import build_tools
from agent.turn import stream_turn
from tests.agent.tools.helpers import db
from tests.support.fake_model import Reply, ScriptedChatModel, system_text, tool_call
from workspace import selectors
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db(transaction=True)

READ_ONLY = ["read_document", "list_todos", "list_preferences", "list_artifacts", "get_artifact"]
PLAN = [
    "read_document",
    "set_objective",
    "add_todos",
    "toggle_todos",
    "update_todos",
    "remove_todos",
    "list_todos",
    "list_preferences",
    "list_artifacts",
    "get_artifact",
]


def _config(name="mode-thread"):
    return {"configurable": {"thread_id": name}}


async def _run(agent, thread, text, *, mode, name="mode-thread"):
    context = AgentContext(thread=thread, turn_index=1, mode=mode)
    return await agent.ainvoke({"messages": [HumanMessage(text)]}, _config(name), context=context)


@pytest.mark.parametrize(
    "mode, offered",
    [
        ("explore", READ_ONLY),
        ("plan", PLAN),
        ("execute", [tool.name for tool in build_tools()]),
    ],
)
async def test_the_model_is_offered_only_the_tools_of_the_mode(thread, mode, offered):
    model = ScriptedChatModel(script=[Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")]), Reply(text="Done.")])
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    await _run(agent, thread, "What is planned?", mode=mode)

    assert len(model.tool_lists) == 2
    for names in model.tool_lists:
        assert sorted(names) == sorted(offered)
    # In the registry's order.
    assert model.tool_lists[0] == [tool.name for tool in build_tools() if tool.name in offered]


def test_read_only_tools_are_in_every_mode():
    for mode in ("explore", "plan", "execute"):
        assert set(READ_ONLY) <= allowed_tools(mode)
    assert "update_document" not in allowed_tools("plan") and "chart_generator" not in allowed_tools("plan")
    assert "replace_in_document" in allowed_tools("execute")


async def test_a_call_outside_the_mode_is_refused_with_an_envelope_and_changes_nothing(thread):
    await db(document_services.document_save, thread=thread, content="Kept as it is.")
    model = ScriptedChatModel(
        script=[
            Reply(tool_calls=[tool_call("update_document", "Rewriting the document.", content="Overwritten.")]),
            Reply(text="I could not change it in Explore mode."),
        ]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    result = await _run(agent, thread, "Rewrite it", mode="explore")

    [tool_message] = [m for m in result["messages"] if m.type == "tool"]
    envelope = json.loads(tool_message.content)
    assert envelope["success"] is False
    assert envelope["error"].startswith("Not run: update_document is not available in Explore mode")
    assert "Nothing was changed" in envelope["error"]
    # The person's trace says it in plain words, not only "Failed".
    assert step_note(envelope["error"]) == "Not available in Explore mode"
    [turn] = turns_from_messages(result["messages"])
    assert [step.to_json() for step in turn.steps] == [
        {"text": "Rewriting the document.", "status": "failed", "note": "Not available in Explore mode"}
    ]
    assert tool_message.status == "error"
    assert (await db(selectors.document_for, thread=thread)).content == "Kept as it is."


async def test_the_same_call_runs_in_execute_mode(thread):
    model = ScriptedChatModel(
        script=[Reply(tool_calls=[tool_call("update_document", "Rewriting the document.", content="New.")]), Reply(text="Done.")]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    await _run(agent, thread, "Rewrite it", mode="execute")
    assert (await db(selectors.document_for, thread=thread)).content == "New."


async def test_plan_mode_runs_plan_tools_and_refuses_the_document(thread):
    model = ScriptedChatModel(
        script=[
            Reply(
                tool_calls=[
                    tool_call("set_objective", "Writing down the goal.", text="Write a memo"),
                    tool_call("append_to_document", "Starting the memo.", text="Memo."),
                ]
            ),
            Reply(text="Planned."),
        ]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    events = [
        e
        async for e in stream_turn(
            agent, context=AgentContext(thread=thread, turn_index=1, mode="plan"), user_message="Plan a memo"
        )
    ]

    statuses = {e.tool_name: e.status for e in events if isinstance(e, StepFinished)}
    assert statuses == {"set_objective": "done", "append_to_document": "failed"}
    assert await db(selectors.objective_text_for, thread=thread) == "Write a memo"
    assert (await db(selectors.document_for, thread=thread)).content == ""


@pytest.mark.parametrize(
    "mode, heading", [("explore", "# Mode: Explore"), ("plan", "# Mode: Plan"), ("execute", "# Mode: Execute")]
)
async def test_every_model_call_is_told_the_mode(thread, mode, heading):
    model = ScriptedChatModel(script=[Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")]), Reply(text="Done.")])
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    await _run(agent, thread, "Hello", mode=mode)
    for request in model.requests:
        assert heading in system_text(request)


async def test_each_mode_has_its_own_call_cap_and_reaching_it_is_reported(thread, settings):
    settings.HAICO_EXPLORE_CALL_LIMIT = 2
    settings.HAICO_MODEL_CALL_LIMIT = 4
    looping = Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")])

    explore_model = ScriptedChatModel(script=[], default_reply=looping)
    agent = build_agent(model=explore_model, checkpointer=InMemorySaver())
    events = [
        e
        async for e in stream_turn(agent, context=AgentContext(thread=thread, turn_index=1, mode="explore"), user_message="loop")
    ]
    assert len(explore_model.requests) == 2
    [answer] = [e for e in events if isinstance(e, Answer)]
    assert "reached the Explore mode's limit of 2 model calls (HAICO_EXPLORE_CALL_LIMIT)" in answer.text
    assert not answer.cut_off
    [cap] = [e for e in events if isinstance(e, CapReached)]
    assert (cap.cap, cap.limit, cap.mode) == ("model_calls", 2, "Explore")
    assert cap.detail.startswith("Call cap reached") and "Explore mode's limit of 2" in cap.detail

    execute_model = ScriptedChatModel(script=[], default_reply=looping)
    agent = build_agent(model=execute_model, checkpointer=InMemorySaver())
    result = await _run(agent, thread, "loop", mode="execute", name="execute-thread")
    assert len(execute_model.requests) == 4
    assert "Execute mode's limit of 4 model calls (HAICO_MODEL_CALL_LIMIT)" in result["messages"][-1].content


async def test_a_mode_with_no_cap_is_not_stopped(thread, settings):
    settings.HAICO_PLAN_CALL_LIMIT = 0
    settings.HAICO_MODEL_CALL_LIMIT = 1
    model = ScriptedChatModel(
        script=[Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")])] * 3 + [Reply(text="Done.")]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    result = await _run(agent, thread, "go", mode="plan")
    assert result["messages"][-1].content == "Done."
    assert len(model.requests) == 4


def test_only_a_refusal_by_the_mode_gets_a_note():
    assert step_note("Not run: add_todos is not available in Plan mode, which the person chose.") == "Not available in Plan mode"
    assert step_note("The preference is locked.") == ""
    assert step_note("") == ""
