"""agent.turn: what a turn reports as typed events."""

import pytest
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    RemoveMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext
from agent.events import (
    Answer,
    Diagnostic,
    DraftWithdrawn,
    StepFinished,
    StepsStarted,
    Token,
)
from agent.history import TURN_INDEX_KEY
from agent.turn import _events, stream_turn
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call

pytestmark = pytest.mark.django_db(transaction=True)


def _call(name="add_todos", sentence="Planning it.", call_id="c1"):
    return {"name": name, "args": {"action_and_reasoning": sentence, "steps": []}, "id": call_id, "type": "tool_call"}


def test_the_same_update_twice_is_reported_once():
    seen: set = set()
    update = {"model": {"messages": [AIMessage(content="", id="m1", tool_calls=[_call()])]}}
    first = list(_events("updates", update, seen))
    again = list(_events("updates", update, seen))
    # A new message carrying a call already reported adds no step either.
    repeat_call = list(_events("updates", {"model": {"messages": [AIMessage(content="", id="m2", tool_calls=[_call()])]}}, seen))
    assert first == [DraftWithdrawn(), StepsStarted(("Planning it.",), ("c1",))]
    assert again == []
    assert repeat_call == [DraftWithdrawn()]


def test_tokens_come_only_from_the_model_node_and_a_removal_withdraws_the_draft():
    seen: set = set()
    token = list(_events("messages", (AIMessageChunk(content="Hel"), {"langgraph_node": "model"}), seen))
    elsewhere = list(_events("messages", (AIMessageChunk(content="x"), {"langgraph_node": "tools"}), seen))
    removal = list(_events("messages", (RemoveMessage(id="m1"), {"langgraph_node": "model"}), seen))
    assert (token, elsewhere, removal) == ([Token("Hel")], [], [DraftWithdrawn()])


def test_tool_results_report_done_skipped_or_failed_once():
    seen: set = set()
    ok = ToolMessage(content='{"success": true, "summary": "done"}', tool_call_id="c1", name="add_todos")
    bad = ToolMessage(content='{"success": false, "error": "no"}', tool_call_id="c2", name="toggle_todos")
    part = ToolMessage(content='{"success": true, "summary": "s", "skipped": true}', tool_call_id="c3", name="update_preferences")
    refused = ToolMessage(content="Not run.", tool_call_id="c4", name="set_objective", status="error")
    events = [
        *_events("updates", {"tools": {"messages": [ok, bad, part, refused]}}, seen),
        *_events("updates", {"tools": {"messages": [ok]}}, seen),
    ]
    assert events == [
        StepFinished("add_todos", "done", "c1"),
        StepFinished("toggle_todos", "failed", "c2", error="no"),
        StepFinished("update_preferences", "skipped", "c3", error="s", refused=True),
        StepFinished("set_objective", "failed", "c4", error="Not run."),
    ]


def test_a_steps_result_carries_its_arguments_and_whether_it_was_refused():
    seen: set = set()
    calls = [
        {"name": "set_objective", "args": {"action_and_reasoning": "Goal.", "text": "Ship"}, "id": "c1", "type": "tool_call"},
        {"name": "nope", "args": {}, "id": "c2", "type": "tool_call"},
        {"name": "remove_preferences", "args": {"indices": [1]}, "id": "c3", "type": "tool_call"},
    ]
    reply = AIMessage(
        content="", id="m1", tool_calls=calls, response_metadata={"haico_refused_calls": {"c1": "Not run: cut off."}}
    )
    results = [
        ToolMessage(content='{"success": false, "error": "Not run: cut off."}', tool_call_id="c1", name="set_objective"),
        ToolMessage(content="Error: nope is not a valid tool, try one of [a].", tool_call_id="c2", name="nope", status="error"),
        ToolMessage(
            content='{"success": false, "error": "Locked.", "refused": true}', tool_call_id="c3", name="remove_preferences"
        ),
    ]
    calls_seen: dict = {}
    list(_events("updates", {"model": {"messages": [reply]}}, seen, calls_seen))
    events = list(_events("updates", {"tools": {"messages": results}}, seen, calls_seen))
    assert [(e.refused, e.error, e.arguments) for e in events] == [
        (True, "Not run: cut off.", '{"text": "Ship"}'),
        (True, "Error: nope is not a valid tool, try one of [a].", "{}"),
        (True, "Locked.", '{"indices": [1]}'),
    ]


async def test_a_turn_streams_steps_tokens_and_its_answer(thread):
    model = ScriptedChatModel(
        script=[
            Reply(text="Let me", tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship it")]),
            Reply(text="All done", finish_reason="length"),
        ]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    events = [e async for e in stream_turn(agent, context=AgentContext(thread=thread, turn_index=3), user_message="go")]
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("StepsStarted") < kinds.index("StepFinished") < kinds.index("Answer")
    [started] = [e for e in events if isinstance(e, StepsStarted)]
    [finished] = [e for e in events if isinstance(e, StepFinished)]
    assert started.sentences == ("Writing down the goal.",) and finished.status == "done"
    assert finished.call_id == started.call_ids[0]
    assert "".join(e.text for e in events if isinstance(e, Token)) == "Let meAll done"
    assert events[kinds.index("StepsStarted") - 1] == DraftWithdrawn()  # the preamble is not the answer
    # Cut off at the output limit: kept, and said to be unfinished.
    assert [e for e in events if isinstance(e, Answer)] == [Answer("All done", cut_off=True)]
    [diagnostic] = [e for e in events if isinstance(e, Diagnostic)]
    assert diagnostic.level == "warning" and "HAICO_MODEL_MAX_TOKENS" in diagnostic.detail
    # The turn index tags the person's message in the history.
    state = await agent.aget_state({"configurable": {"thread_id": str(thread.pk)}})
    assert state.values["messages"][0].response_metadata[TURN_INDEX_KEY] == 3
