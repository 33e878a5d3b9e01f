"""Model-call retry (docs/adr/0072): blank and malformed replies are re-asked,
truncated ones are reported, and only the kept attempt reaches the stream."""

import logging

import pytest
from asgiref.sync import sync_to_async
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext
from agent.events import Diagnostic
from agent.middleware.replies import (
    MALFORMED_CALL_ERROR,
    REFUSED_CALLS_KEY,
    SYNTHETIC_KEY,
    TRUNCATED_CALL_ERROR,
    RetryVerdict,
    refusals,
    reply_finished,
    with_refusals,
)
from agent.middleware.retry import WRITE_LESS_NOTE, ModelTurnRetryMiddleware
from agent.model import INVALID_TOOL_ARGS_KEY
from agent.turn import stream_turn, turn_config
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call
from workspace import selectors

pytestmark = pytest.mark.django_db(transaction=True)

CONFIG = {"configurable": {"thread_id": "retry-thread"}}


class Turn:
    """One turn through agent.turn.stream_turn: the model, the final
    messages and the diagnostics the person would be shown."""

    def __init__(self, model, messages, events):
        self.model = model
        self.messages = messages
        self.diagnostics = [e for e in events if isinstance(e, Diagnostic)]


async def _turn(thread, script, *, turn_index=4):
    model = ScriptedChatModel(script=script)
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    context = AgentContext(thread=thread, turn_index=turn_index)
    events = [event async for event in stream_turn(agent, context=context, user_message="Hello")]
    state = await agent.aget_state(turn_config(thread.pk))
    return Turn(model, state.values["messages"], events)


async def test_blank_reply_is_asked_again(thread):
    turn = await _turn(thread, [Reply(), Reply(text="Here is the answer.")])

    assert len(turn.model.requests) == 2
    assert [m.type for m in turn.messages] == ["human", "ai"]
    assert turn.messages[-1].content == "Here is the answer."
    assert turn.diagnostics == []


async def test_malformed_reply_is_asked_again_and_its_partial_text_dropped(thread):
    turn = await _turn(
        thread,
        [
            Reply(text="I will now upd", finish_reason="MALFORMED_FUNCTION_CALL"),
            Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Retry works")]),
            Reply(text="Recorded the objective."),
        ],
    )

    assert len(turn.model.requests) == 3
    assert "I will now upd" not in [m.content for m in turn.messages]
    assert [m.type for m in turn.messages] == ["human", "ai", "tool", "ai"]
    assert await sync_to_async(selectors.objective_text_for)(thread=thread) == "Retry works"


async def test_retry_stops_after_three_calls_and_keeps_the_last_attempt(thread):
    turn = await _turn(thread, [Reply(), Reply(), Reply(), Reply(text="never asked")])

    assert len(turn.model.requests) == 3
    assert [m.type for m in turn.messages] == ["human", "ai"]
    assert turn.messages[-1].content == ""
    [diagnostic] = turn.diagnostics
    assert diagnostic.level == "warning"
    assert "empty reply 3 times" in diagnostic.message


async def test_retry_budget_is_per_model_call_not_per_turn(thread):
    turn = await _turn(
        thread,
        [
            Reply(),
            Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")]),
            Reply(),
            Reply(),
            Reply(text="Finished."),
        ],
    )

    assert len(turn.model.requests) == 5
    assert turn.messages[-1].content == "Finished."


async def test_truncated_reply_is_not_retried_but_reported(thread, caplog):
    caplog.set_level(logging.WARNING, logger="haico.agent")

    turn = await _turn(thread, [Reply(text="The report begins with", finish_reason="length"), Reply(text="never")])

    assert len(turn.model.requests) == 1
    assert turn.messages[-1].content == "The report begins with"
    [record] = [r for r in caplog.records if r.name == "haico.agent"]
    assert record.levelno == logging.WARNING
    assert "cut off at the model's output limit" in record.getMessage()
    assert "raise HAICO_MODEL_MAX_TOKENS" in record.getMessage()
    [diagnostic] = turn.diagnostics
    assert diagnostic.level == "warning" and diagnostic.kind == "truncation"
    # Written for the person; the setting to change is the operator's detail.
    assert "cut off at the model's output limit in the answer" in diagnostic.message
    assert "raise HAICO_MODEL_MAX_TOKENS" in diagnostic.detail and "finish_reason=length" in diagnostic.detail


@pytest.mark.parametrize("signal", [{"finish_reason": "max_tokens"}, {"finish_reason": "MAX_TOKENS"}])
async def test_other_truncation_signals_are_reported_too(thread, signal):
    turn = await _turn(thread, [Reply(tool_calls=[], text="cut", **signal), Reply(text="never")])

    assert len(turn.model.requests) == 1
    assert len(turn.diagnostics) == 1


# --- tool calls that must not run -------------------------------------------------------


async def test_a_tool_call_cut_off_at_the_output_limit_is_not_run_but_asked_again_shorter(thread):
    turn = await _turn(
        thread,
        [
            Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="Ship the repo")], finish_reason="length"),
            Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="Ship the report")]),
            Reply(text="Recorded."),
        ],
    )
    # The cut-off call never ran; the second attempt was told why it was asked again.
    assert await sync_to_async(lambda: selectors.objective_for(thread=thread).text)() == "Ship the report"
    second = turn.model.requests[1]
    assert isinstance(second[-1], HumanMessage) and second[-1].content == WRITE_LESS_NOTE
    # The note is for that attempt only: the history never holds it.
    assert WRITE_LESS_NOTE not in [m.content for m in turn.messages]
    assert turn.diagnostics == []


async def test_a_tool_call_cut_off_twice_fails_with_an_error_the_model_reads(thread):
    cut = Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="Half a goa")], finish_reason="length")
    turn = await _turn(thread, [cut, cut, Reply(text="I could not write the goal.")])

    assert await sync_to_async(lambda: selectors.objective_for(thread=thread))() is None
    [result] = [m for m in turn.messages if m.type == "tool"]
    assert result.status == "error" and TRUNCATED_CALL_ERROR in result.content and '"success": false' in result.content
    assert TRUNCATED_CALL_ERROR in turn.model.requests[2][-1].content  # the model was told
    [diagnostic] = turn.diagnostics
    assert "a tool call, which was not run" in diagnostic.message


async def test_an_exhausted_malformed_reply_does_not_run_its_tool_calls(thread):
    malformed = Reply(
        tool_calls=[tool_call("set_objective", "Writing the goal.", text="garbled")], finish_reason="MALFORMED_FUNCTION_CALL"
    )
    turn = await _turn(thread, [malformed, malformed, malformed, Reply(text="Sorry.")])

    assert await sync_to_async(lambda: selectors.objective_for(thread=thread))() is None
    [result] = [m for m in turn.messages if m.type == "tool"]
    assert MALFORMED_CALL_ERROR in result.content


def test_refusals_name_bad_arguments_and_unparseable_calls():
    message = AIMessage(
        content="",
        tool_calls=[{"name": "set_objective", "args": {"text": "hal"}, "id": "a", "type": "tool_call"}],
        invalid_tool_calls=[{"name": "add_todos", "args": "{oops", "id": "b", "error": "bad", "type": "invalid_tool_call"}],
        additional_kwargs={INVALID_TOOL_ARGS_KEY: {"a": "not valid JSON (Unterminated string at character 9)"}},
        response_metadata={"finish_reason": "tool_calls"},
    )
    refused = refusals(message, None)
    assert set(refused) == {"a", "b"} and "Unterminated string" in refused["a"]
    marked = with_refusals(message, refused)
    # The unparseable call becomes a call, so it gets its error as a result.
    assert [call["id"] for call in marked.tool_calls] == ["a", "b"] and marked.invalid_tool_calls == []
    assert marked.response_metadata[REFUSED_CALLS_KEY] == refused


def test_the_verdict_decides_which_whole_calls_are_refused():
    message = AIMessage(
        content="",
        tool_calls=[{"name": "set_objective", "args": {"text": "x"}, "id": "a", "type": "tool_call"}],
        response_metadata={"finish_reason": "length"},
    )
    assert refusals(message, RetryVerdict.TRUNCATED) == {"a": TRUNCATED_CALL_ERROR}
    assert refusals(message, RetryVerdict.EXHAUSTED_MALFORMED) == {"a": MALFORMED_CALL_ERROR}
    assert refusals(message, RetryVerdict.EXHAUSTED_BLANK) == {}
    assert refusals(message, None) == {}


def test_a_reply_is_finished_only_when_the_model_said_so():
    assert reply_finished(AIMessage(content="x", response_metadata={"finish_reason": "stop"}))
    assert not reply_finished(AIMessage(content="x", response_metadata={"finish_reason": "length"}))
    assert not reply_finished(AIMessage(content="x"))  # a stream that ended without a finish reason
    assert reply_finished(AIMessage(content="x", response_metadata={SYNTHETIC_KEY: True}))


# --- streaming ---------------------------------------------------------------


async def _stream(agent, thread=None):
    events = []
    context = AgentContext(thread=thread) if thread is not None else None
    async for mode, payload in agent.astream(
        {"messages": [HumanMessage("Hello")]}, CONFIG, context=context, stream_mode=["updates", "messages"]
    ):
        events.append((mode, payload))
    return events


def _model_messages(events):
    return [p[0] for mode, p in events if mode == "messages" and p[1].get("langgraph_node") == "model"]


def _visible_text(messages):
    """What a consumer shows: chunk text per message id, minus retracted ids."""
    text: dict[str, str] = {}
    for message in messages:
        if isinstance(message, RemoveMessage):
            text.pop(message.id, None)
        elif isinstance(message.content, str):
            text[message.id] = text.get(message.id, "") + message.content
    return "".join(text.values())


async def test_blank_attempt_never_reaches_the_stream(thread):
    model = ScriptedChatModel(script=[Reply(), Reply(text="Hello there friend")])
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    events = await _stream(agent, thread)

    streamed = _model_messages(events)
    assert [m.content for m in streamed if m.content] == ["Hello", " ", "there", " ", "friend"]
    assert all(m.id != model.message_id(1) for m in streamed)
    assert not any(isinstance(m, RemoveMessage) for m in streamed)
    updates = [p["model"]["messages"] for mode, p in events if mode == "updates" and "model" in p]
    assert [[m.content for m in u] for u in updates] == [["Hello there friend"]]


async def test_live_stream_retracts_the_partial_text_of_a_discarded_attempt(thread):
    model = ScriptedChatModel(
        script=[Reply(text="Let me upd", finish_reason="MALFORMED_FUNCTION_CALL"), Reply(text="All good now")]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())

    events = await _stream(agent, thread)

    streamed = _model_messages(events)
    kinds = [("remove" if isinstance(m, RemoveMessage) else m.id) for m in streamed]
    # Attempt 1 streamed live, then was retracted before attempt 2 began.
    first_remove = kinds.index("remove")
    assert model.message_id(1) in kinds[:first_remove]
    assert model.message_id(1) not in kinds[first_remove:]
    assert any(isinstance(m, RemoveMessage) and m.id == model.message_id(1) for m in streamed)
    assert _visible_text(streamed) == "All good now"
    updates = [p["model"]["messages"] for mode, p in events if mode == "updates" and "model" in p]
    assert [[m.content for m in u] for u in updates] == [["All good now"]]


async def test_buffered_stream_only_ever_carries_the_kept_attempt(thread):
    model = ScriptedChatModel(
        script=[
            Reply(text="Let me upd", finish_reason="MALFORMED_FUNCTION_CALL"),
            Reply(),
            Reply(text="All good now"),
        ]
    )
    agent = create_agent(
        model=model, tools=[], middleware=[ModelTurnRetryMiddleware(stream="buffered")], checkpointer=InMemorySaver()
    )

    events = await _stream(agent)

    streamed = _model_messages(events)
    assert len(model.requests) == 3
    assert {m.id for m in streamed if m.content} == {model.message_id(3)}
    assert "".join(m.content for m in streamed) == "All good now"
    assert [m.content for m in streamed if m.content] == ["All", " ", "good", " ", "now"]
    assert not any(isinstance(m, RemoveMessage) for m in streamed)


async def test_kept_attempt_streams_token_by_token_before_the_model_finishes(thread):
    """Live policy: tokens are forwarded as they are produced, not after the reply ends."""
    seen_before_end = []

    class Probe(ScriptedChatModel):
        async def _astream(self, messages, stop=None, run_manager=None, **kwargs):
            async for chunk in super()._astream(messages, stop=stop, run_manager=run_manager, **kwargs):
                yield chunk
            seen_before_end.append(len([m for m in streamed_so_far if m.content]))

    streamed_so_far = []
    # A small delay per token lets the consumer run between tokens, as with a real provider.
    model = Probe(script=[Reply(text="one two three", token_delay=0.02)])
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    async for _mode, payload in agent.astream(
        {"messages": [HumanMessage("Hi")]}, CONFIG, context=AgentContext(thread=thread), stream_mode=["messages"]
    ):
        streamed_so_far.append(payload[0])

    # When the model's stream ended the consumer already had the earlier tokens
    # (all but possibly the very last one); a buffering gate would give 0.
    assert len(seen_before_end) == 1 and seen_before_end[0] >= 4


def test_sync_invoke_retries_too():
    model = ScriptedChatModel(script=[Reply(), Reply(text="Sync answer.")])
    agent = create_agent(model=model, tools=[], middleware=[ModelTurnRetryMiddleware()])

    result = agent.invoke({"messages": [HumanMessage("Hello")]})

    assert len(model.requests) == 2
    assert result["messages"][-1].content == "Sync answer."
