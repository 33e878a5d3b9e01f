"""The agent loop: the workspace prompt is rebuilt before every model call and never stored."""

import pytest
from asgiref.sync import sync_to_async
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from agent.builder import build_agent
from agent.context import AgentContext
from agent.prompt import SYSTEM_PROMPT
from tests.support.fake_model import Reply, ScriptedChatModel, system_text, tool_call
from tests.support.requests import as_another_request
from workspace import selectors
from workspace.services import document as document_services
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db(transaction=True)


def _config(thread_id="t-1"):
    return {"configurable": {"thread_id": thread_id}}


async def _run(agent, thread, text, config, turn_index=1):
    context = AgentContext(thread=thread, turn_index=turn_index)
    return await agent.ainvoke({"messages": [HumanMessage(text)]}, config, context=context)


async def test_second_model_call_sees_the_first_calls_tool_effects(thread):
    model = ScriptedChatModel(
        script=[
            Reply(
                tool_calls=[
                    tool_call("set_objective", "Writing down the goal.", text="Compare Q1 and Q2 revenue"),
                    tool_call(
                        "add_todos",
                        "Laying out the steps.",
                        steps=[{"text": "Collect figures", "depth": 0}, {"text": "Check Q2", "depth": 1}],
                    ),
                ]
            ),
            Reply(tool_calls=[tool_call("toggle_todos", "Ticking off the first step.", indices=[1])]),
            Reply(text="I set the objective and planned the work."),
        ]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    await _run(agent, thread, "Compare revenue", _config())

    first, second, third = (system_text(r) for r in model.requests)
    assert "Compare Q1 and Q2 revenue" not in first
    assert "(no plan yet)" in first
    assert "<objective>\nCompare Q1 and Q2 revenue\n</objective>" in second
    assert "<todos>\n#1 1 [ ] Collect figures\n#2   1.1 [ ] Check Q2\n</todos>" in second
    assert "<todos>\n#1 1 [x] Collect figures\n#2   1.1 [ ] Check Q2\n</todos>" in third
    for prompt in (first, second, third):
        assert prompt.startswith(SYSTEM_PROMPT + "\n\n<workspace>\n")


async def test_a_persons_edit_during_the_turn_reaches_the_next_model_call(thread):
    def first_step(messages):
        # The model is "thinking" while the person edits the document and adds a preference.
        as_another_request(lambda: document_services.document_save(thread=thread, title="Notes", content="Typed by the person."))
        as_another_request(
            lambda: preferences_services.preference_add(thread=thread, title="Short answers", kind="hard", respect_lock=False)
        )
        return Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")])

    model = ScriptedChatModel(script=[first_step, Reply(text="Done.")])
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    await _run(agent, thread, "Go on", _config())

    first, second = (system_text(r) for r in model.requests)
    assert "Typed by the person." not in first
    assert "Typed by the person." in second
    assert '<document title="Notes"' in second
    assert "#1 [hard] Short answers" in second


async def test_system_prompt_is_first_and_never_checkpointed(thread):
    saver = InMemorySaver()
    model = ScriptedChatModel(
        script=[
            Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Draft a memo")]),
            Reply(text="Objective recorded."),
            Reply(text="Second turn answer."),
        ]
    )
    agent = build_agent(model=model, checkpointer=saver)

    await _run(agent, thread, "Help me with a memo", _config())
    await _run(agent, thread, "And now?", _config())

    for request in model.requests:
        assert isinstance(request[0], SystemMessage)
        assert sum(isinstance(m, SystemMessage) for m in request) == 1
    # The second turn's first call carries the history plus a fresh prompt.
    assert [m.type for m in model.requests[2]] == ["system", "human", "ai", "tool", "ai", "human"]
    assert "<objective>\nDraft a memo\n</objective>" in system_text(model.requests[2])

    state = await agent.aget_state(_config())
    assert [m.type for m in state.values["messages"]] == ["human", "ai", "tool", "ai", "human", "ai"]
    stored = [c async for c in saver.alist(_config())]
    for checkpoint in stored:
        for message in checkpoint.checkpoint["channel_values"].get("messages", []):
            assert not isinstance(message, SystemMessage)


async def test_sqlite_checkpointer_holds_history_but_not_the_prompt(thread, tmp_path):
    path = tmp_path / "checkpoints.sqlite3"
    model = ScriptedChatModel(
        script=[
            Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Plan a trip")]),
            Reply(text="Recorded the trip as our objective."),
        ]
    )
    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        agent = build_agent(model=model, checkpointer=saver)
        await _run(agent, thread, "I want to plan a trip", _config("sqlite-thread"))
        state = await agent.aget_state(_config("sqlite-thread"))

    assert state.values["messages"][-1].content == "Recorded the trip as our objective."
    assert not any(isinstance(m, SystemMessage) for m in state.values["messages"])
    stored = path.read_bytes() + (
        path.with_name(path.name + "-wal").read_bytes() if path.with_name(path.name + "-wal").exists() else b""
    )
    assert b"I want to plan a trip" in stored
    # Distinctive phrases of the static prompt and of the workspace block.
    assert b"Completion sweep" not in stored
    assert b"<workspace>" not in stored
    assert await sync_to_async(selectors.objective_text_for)(thread=thread) == "Plan a trip"


async def test_looping_model_is_stopped_by_the_call_limit(thread, settings):
    settings.HAICO_MODEL_CALL_LIMIT = 3
    model = ScriptedChatModel(script=[], default_reply=Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")]))
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    result = await _run(agent, thread, "loop", _config())

    assert len(model.requests) == 3
    last = result["messages"][-1]
    assert last.type == "ai" and not last.tool_calls
    assert "limit of 3 model calls" in last.content and "Execute mode" in last.content
    # History stays valid for the next turn: every tool call has its result.
    calls = {c["id"] for m in result["messages"] if m.type == "ai" for c in m.tool_calls}
    results = {m.tool_call_id for m in result["messages"] if m.type == "tool"}
    assert calls == results


async def test_call_limit_counts_per_turn(thread, settings):
    settings.HAICO_MODEL_CALL_LIMIT = 2
    model = ScriptedChatModel(
        script=[
            Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")]),
            Reply(text="First turn done."),
            Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")]),
            Reply(text="Second turn done."),
        ]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    first = await _run(agent, thread, "one", _config())
    second = await _run(agent, thread, "two", _config())

    assert first["messages"][-1].content == "First turn done."
    assert second["messages"][-1].content == "Second turn done."


def test_naming_the_sender_adds_no_query_to_a_model_calls_prompt(thread, owner):
    """The sender's name is read once when the turn starts (AgentContext),
    never per model call (docs/adr/0085)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent.builder import _prompt_for

    _prompt_for(AgentContext(thread=thread))  # this process's reading of the workspace, kept (docs/adr/0093)
    with CaptureQueriesContext(connection) as nobody:
        _prompt_for(AgentContext(thread=thread))
    with CaptureQueriesContext(connection) as named:
        prompt = _prompt_for(AgentContext(thread=thread, person=owner, person_name="Ada Lovelace"))
    assert "The current message was written by “Ada Lovelace”." in prompt
    assert len(named.captured_queries) == len(nobody.captured_queries)
