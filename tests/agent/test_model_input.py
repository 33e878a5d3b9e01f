"""agent.model_input: every model call gets a valid history within the
context budget, while the checkpointer keeps the whole thread."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext
from agent.history import TURN_INDEX_KEY
from agent.model_input import UNFINISHED_STEP_RESULT, valid_history, within_budget
from agent.turn import stream_turn, turn_config
from tests.support.fake_model import Reply, ScriptedChatModel


def _call(call_id, name="add_todos"):
    return {"name": name, "args": {"action_and_reasoning": "Planning.", "steps": []}, "id": call_id, "type": "tool_call"}


def _turn_messages(index: int, *, words: int = 20) -> list:
    """One past turn: the person's message, a tool call and its result, the answer."""
    filler = " ".join(f"word{index}" for _ in range(words))
    return [
        HumanMessage(content=f"Message {index}: {filler}", response_metadata={TURN_INDEX_KEY: index}),
        AIMessage(content="", tool_calls=[_call(f"call-{index}")], id=f"ai-{index}-a"),
        ToolMessage(content='{"success": true, "summary": "ok"}', tool_call_id=f"call-{index}", name="add_todos"),
        AIMessage(content=f"Answer {index}: {filler}", id=f"ai-{index}-b"),
    ]


def _pairs_are_whole(messages) -> bool:
    """Every tool call is answered right after its message, and every result has its call."""
    waiting: set = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in waiting:
                return False
            waiting.discard(message.tool_call_id)
            continue
        if waiting:
            return False
        if isinstance(message, AIMessage):
            waiting = {call["id"] for call in message.tool_calls}
    return not waiting


# --- a valid history -------------------------------------------------------------------


def test_a_history_without_gaps_is_sent_as_it_is():
    history = [*_turn_messages(1), *_turn_messages(2)]
    assert valid_history(history) is history


def test_a_tool_call_left_without_a_result_in_an_earlier_turn_gets_one_in_place():
    # Killed during turn 1's tool step: its call has no result, and turn 2 followed.
    history = [
        HumanMessage("one"),
        AIMessage(content="", tool_calls=[_call("done"), _call("lost")]),
        ToolMessage(content="ok", tool_call_id="done"),
        HumanMessage("two"),
        AIMessage(content="Answer two"),
        HumanMessage("three"),
    ]
    fixed = valid_history(history)
    assert [type(m).__name__ for m in fixed] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "HumanMessage",
        "AIMessage",
        "HumanMessage",
    ]
    synthetic = fixed[3]
    assert (synthetic.tool_call_id, synthetic.status, synthetic.content) == ("lost", "error", UNFINISHED_STEP_RESULT)
    assert _pairs_are_whole(fixed)
    assert len(history) == 6  # the history itself is not changed


def test_a_result_without_its_call_is_left_out():
    history = [HumanMessage("one"), ToolMessage(content="stray", tool_call_id="nobody"), AIMessage(content="hi")]
    assert [m.content for m in valid_history(history)] == ["one", "hi"]


def test_a_dangling_call_at_the_very_end_is_answered_too():
    history = [HumanMessage("one"), AIMessage(content="", tool_calls=[_call("x")])]
    assert _pairs_are_whole(valid_history(history))


# --- within the budget -----------------------------------------------------------------


def test_a_short_history_is_sent_whole():
    history = _turn_messages(1)
    assert within_budget(history, max_tokens=10_000) == (history, 0)


def test_a_long_history_keeps_the_newest_whole_turns_and_the_current_turn():
    history = [message for index in range(1, 201) for message in _turn_messages(index)]
    current = [
        HumanMessage("Now this, please."),
        AIMessage(content="", tool_calls=[_call("now")]),
        ToolMessage(content="ok", tool_call_id="now"),
    ]
    kept, left_out = within_budget([*history, *current], max_tokens=2_000)
    assert count_tokens_approximately(kept) <= 2_000
    assert left_out == len(history) + len(current) - len(kept) and left_out > 0
    assert isinstance(kept[0], HumanMessage)  # starts where a turn starts
    assert kept[-3:] == current
    assert _pairs_are_whole(kept)
    assert kept[-4].content.startswith("Answer 200") and kept[-7].content.startswith("Message 200")  # whole


def test_a_current_turn_larger_than_the_budget_is_still_sent_whole():
    history = _turn_messages(1)
    huge = HumanMessage("x " * 10_000)
    kept, left_out = within_budget([*history, huge], max_tokens=100)
    assert kept == [huge] and left_out == len(history)


# --- a 1 000-turn thread through the agent ---------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_thousand_turn_thread_never_sends_more_than_the_budget(thread, settings):
    settings.HAICO_CONTEXT_TOKENS = 6_000
    received = []

    def check(messages):
        received.append(list(messages))
        return Reply(text="Still on track.")

    model = ScriptedChatModel(script=[check])
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    config = turn_config(thread.pk)
    history = [message for index in range(1, 1001) for message in _turn_messages(index)]
    # A tool call left without its result by a server killed in turn 500.
    del history[4 * 499 + 2]
    await agent.aupdate_state(config, {"messages": history}, as_node="model")

    context = AgentContext(thread=thread, turn_index=1001)
    [event async for event in stream_turn(agent, context=context, user_message="Where are we?")]

    [sent] = received
    assert isinstance(sent[0], SystemMessage) and "<workspace>" in sent[0].content
    assert "oldest messages of this conversation are not shown" in sent[0].content
    assert count_tokens_approximately(sent) <= 6_000
    assert isinstance(sent[1], HumanMessage) and sent[-1].content == "Where are we?"
    assert sent[-2].content.startswith("Answer 1000")  # the latest exchange, whole
    assert _pairs_are_whole(sent[1:])
    # The checkpointer keeps every message of the thread, and the new turn.
    state = await agent.aget_state(config)
    assert len(state.values["messages"]) == len(history) + 2
