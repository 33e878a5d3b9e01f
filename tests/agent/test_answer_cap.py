"""agent.answer_cap: an answer longer than HAICO_ANSWER_MAX_CHARS is cut
where it is made, its model stream stopped, and the history holds the cut
answer with its note."""

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent.answer_cap import ANSWER_CAPPED_KEY, capped_answer, cut_note
from agent.builder import build_agent
from agent.context import AgentContext
from agent.events import Answer, Diagnostic, Token
from agent.turn import stream_turn, turn_config
from tests.support.fake_model import Reply, ScriptedChatModel

pytestmark = pytest.mark.django_db(transaction=True)

MAX = 5_000


def test_a_text_within_the_cap_is_unchanged_and_a_longer_one_ends_with_the_note():
    assert capped_answer("x" * MAX, MAX) == "x" * MAX
    cut = capped_answer("y" * (MAX + 1), MAX)
    assert cut == "y" * MAX + "\n\n" + cut_note(MAX)
    assert cut_note(200_000) == "… (the answer was cut here: longer than 200 000 characters)"


def test_a_cut_inside_a_code_block_closes_it_so_the_note_is_not_code():
    text = "Intro\n\n```python\n" + "print(1)\n" * 1000
    cut = capped_answer(text, MAX)
    assert cut.endswith("\n```\n\n" + cut_note(MAX))


async def _turn(thread, model, message="write a lot"):
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    context = AgentContext(thread=thread, turn_index=1)
    events = [e async for e in stream_turn(agent, context=context, user_message=message)]
    state = await agent.aget_state(turn_config(thread.pk))
    return events, state.values["messages"]


async def test_a_streamed_answer_past_the_cap_is_stopped_and_stored_cut(thread, settings):
    settings.HAICO_ANSWER_MAX_CHARS = MAX
    text = "".join(f"line {n:07d} of a runaway answer\n" for n in range(200_000))  # 6.4 MB
    model = ScriptedChatModel(script=[Reply(text=text, token_chars=1000)])
    events, messages = await _turn(thread, model)

    # The model's stream was left at the cap, not read to its end.
    assert model.streamed_chars < MAX + 2_000
    [answer] = [e for e in events if isinstance(e, Answer)]
    assert answer.text == capped_answer(text, MAX) and not answer.cut_off
    assert answer.text.endswith(cut_note(MAX))
    [note] = [e for e in events if isinstance(e, Diagnostic)]
    assert note.kind == "truncation" and str(MAX) in note.message
    # The tokens streamed are the start of the answer, never much past the cap.
    streamed = "".join(e.text for e in events if isinstance(e, Token))
    assert text.startswith(streamed) and MAX <= len(streamed) <= MAX + 1000
    # The history holds the cut answer (with its note), once.
    assert [m.type for m in messages] == ["human", "ai"]
    assert messages[-1].content == answer.text
    assert messages[-1].response_metadata[ANSWER_CAPPED_KEY] == MAX


async def test_an_answer_that_arrives_whole_is_cut_the_same_way(thread, settings):
    settings.HAICO_ANSWER_MAX_CHARS = MAX
    text = "word " * 10_000
    model = ScriptedChatModel(script=[Reply(text=text)])
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    context = AgentContext(thread=thread, turn_index=1)
    # invoke, not stream: nobody listens to the tokens, so the reply comes whole.
    await agent.ainvoke({"messages": [("user", "go")]}, turn_config(thread.pk), context=context)
    state = await agent.aget_state(turn_config(thread.pk))
    assert state.values["messages"][-1].content == capped_answer(text, MAX)


async def test_an_answer_under_the_cap_is_untouched(thread, settings):
    settings.HAICO_ANSWER_MAX_CHARS = MAX
    text = "A short answer."
    events, messages = await _turn(thread, ScriptedChatModel(script=[Reply(text=text)]))
    assert [e for e in events if isinstance(e, Answer)] == [Answer(text)]
    assert messages[-1].content == text and ANSWER_CAPPED_KEY not in messages[-1].response_metadata
    assert not [e for e in events if isinstance(e, Diagnostic)]
