"""Tool calls written in a reply's text (agent.text_calls, docs/adr/0020):
the shapes open local models write, what is left alone, and the turn and
history they make through the real agent."""

import json

import pytest
from asgiref.sync import sync_to_async
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import AgentProvider, build_agent
from agent.context import AgentContext
from agent.events import Answer, DraftWithdrawn, StepsStarted
from agent.text_calls import TEXT_CALLS_KEY, find_text_calls, with_text_calls
from agent.tools.registry import build_tools
from agent.turn import stream_turn, turn_config
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call
from tests.support.openai_server import OpenAICompatibleServer
from workspace import selectors

TOOLS = frozenset(tool.name for tool in build_tools())
GOAL = {"action_and_reasoning": "Writing down the goal.", "text": "Ship the report"}
GOAL_JSON = json.dumps(GOAL)

SHAPES = {
    "llama python_tag": f'<|python_tag|>{{"name": "set_objective", "parameters": {GOAL_JSON}}}<|eom_id|>',
    "llama bare json": f'{{"name": "set_objective", "parameters": {GOAL_JSON}}}',
    "qwen tool_call": f'<tool_call>\n{{"name": "set_objective", "arguments": {GOAL_JSON}}}\n</tool_call>',
    "qwen3 after thinking": f'Let me record the goal.\n\n<tool_call>\n{{"name": "set_objective", "arguments": {GOAL_JSON}}}\n</tool_call>',
    "mistral list": f'[TOOL_CALLS][{{"name": "set_objective", "arguments": {GOAL_JSON}}}]',
    "mistral v11": f"[TOOL_CALLS]set_objective[ARGS]{GOAL_JSON}",
    "gpt-oss channel": f"<|channel|>commentary to=functions.set_objective <|constrain|>json<|message|>{GOAL_JSON}<|call|>",
    "gpt-oss after its analysis": (
        "<|channel|>analysis<|message|>The person wants the goal recorded.<|end|>"
        f"<|start|>assistant<|channel|>commentary to=functions.set_objective <|constrain|>json<|message|>{GOAL_JSON}<|call|>"
    ),
    "gpt-oss recipient first": f"<|start|>assistant to=functions.set_objective<|channel|>commentary json<|message|>{GOAL_JSON}<|call|>",
    "fenced json": f'I will record the goal.\n```json\n{{"name": "set_objective", "arguments": {GOAL_JSON}}}\n```',
    "openai shape, arguments as a string": json.dumps(
        {"type": "function", "function": {"name": "set_objective", "arguments": GOAL_JSON}}
    ),
    "llama 3.2 pythonic list": '[set_objective(action_and_reasoning="Writing down the goal.", text="Ship the report")]',
    "llama 3.2 pythonic after python_tag": (
        "<|python_tag|>set_objective(action_and_reasoning='Writing down the goal.', text='Ship the report')<|eom_id|>"
    ),
    "llama 3.2 pythonic list after python_tag": (
        '<|python_tag|>[set_objective(action_and_reasoning="Writing down the goal.", text="Ship the report")]<|eot_id|>'
    ),
    "pythonic in a python block": (
        'Recording it.\n```python\n[set_objective(action_and_reasoning="Writing down the goal.", text="Ship the report")]\n```'
    ),
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_each_shape_is_one_call_with_its_arguments_and_the_call_text_is_gone(text):
    found = find_text_calls(text, TOOLS)
    assert [(call.name, call.args, call.problem) for call in found.calls] == [("set_objective", GOAL, None)]
    assert "set_objective" not in found.remaining and "{" not in found.remaining and "<|" not in found.remaining


def test_several_calls_in_one_reply_keep_their_order():
    qwen = (
        '<tool_call>\n{"name": "set_objective", "arguments": {"text": "A"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "add_todos", "arguments": {"items": []}}\n</tool_call>'
    )
    llama = '<|python_tag|>{"name": "set_objective", "parameters": {"text": "A"}}; {"name": "list_todos", "parameters": {}}'
    mistral = '[TOOL_CALLS][{"name": "set_objective", "arguments": {"text": "A"}}, {"name": "list_todos", "arguments": {}}]'
    assert [c.name for c in find_text_calls(qwen, TOOLS).calls] == ["set_objective", "add_todos"]
    assert [c.name for c in find_text_calls(llama, TOOLS).calls] == ["set_objective", "list_todos"]
    assert [c.name for c in find_text_calls(mistral, TOOLS).calls] == ["set_objective", "list_todos"]


NOT_CALLS = {
    "json block naming no tool": 'Here is the record:\n```json\n{"name": "Alice", "arguments": {"age": 3}}\n```',
    "json block of data": '```json\n{"title": "Q1", "value": 120}\n```',
    "prose naming a tool": "I could use set_objective to record that, if you want.",
    "inline json in a sentence": 'The call would be {"name": "set_objective", "arguments": {"text": "x"}} in JSON.',
    "bare json naming an unknown tool": '{"name": "delete_everything", "arguments": {}}',
    "bare call with broken json": '{"name": "set_objective", "arguments": {"text": "hal',
    "pythonic call of an unknown tool": "[delete_everything(confirm=True)]",
    "pythonic call after python_tag of an unknown tool": '<|python_tag|>brave_search.call(query="weather")',
    "pythonic call inline in a sentence": 'You could say [set_objective(text="x")] to record it.',
    "pythonic call with a value that is code": '[set_objective(text=open("notes.txt").read())]',
    "pythonic call with positional arguments": '[set_objective("Ship")]',
    "python list of data": "[1, 2, 3]",
    "python code naming a tool without brackets": 'set_objective(text="Ship")',
    "pythonic list with a tool and something else": '[set_objective(text="x"), print("hi")]',
}


@pytest.mark.parametrize("text", NOT_CALLS.values(), ids=NOT_CALLS.keys())
def test_text_that_is_not_a_call_is_left_alone(text):
    found = find_text_calls(text, TOOLS)
    assert found.calls == [] and found.remaining == text


def test_pythonic_calls_keep_their_order_and_read_nested_values_strings_and_json_words():
    text = (
        "I will do both.\n"
        '[set_objective(action_and_reasoning="Goal", text="Say \\"hi\\"\\nthen go \\u00e9\\t", ), '
        'add_todos(action_and_reasoning=\'Plan\', steps=[{"text": "Outline", "depth": 0, "done": false}, '
        '{"text": "Intro, part (1)", "depth": 1, "done": null, "weight": -2.5, "tags": ("a", "b")}], '
        "extra={'nested': [[1, 2], {'k': True}]})]\n"
        "Then I will report back."
    )
    found = find_text_calls(text, TOOLS)
    assert [(call.name, call.args, call.problem) for call in found.calls] == [
        ("set_objective", {"action_and_reasoning": "Goal", "text": 'Say "hi"\nthen go \u00e9\t'}, None),
        (
            "add_todos",
            {
                "action_and_reasoning": "Plan",
                "steps": [
                    {"text": "Outline", "depth": 0, "done": False},
                    {"text": "Intro, part (1)", "depth": 1, "done": None, "weight": -2.5, "tags": ["a", "b"]},
                ],
                "extra": {"nested": [[1, 2], {"k": True}]},
            },
            None,
        ),
    ]
    assert found.remaining == "I will do both.\n\nThen I will report back."
    several = '<|python_tag|>set_objective(text="A"), list_todos()<|eom_id|>'
    assert [c.name for c in find_text_calls(several, TOOLS).calls] == ["set_objective", "list_todos"]
    # Across lines, as a model may lay it out.
    laid_out = '[\n  set_objective(\n    text="A",\n  ),\n  list_todos(),\n]'
    assert [(c.name, c.args) for c in find_text_calls(laid_out, TOOLS).calls] == [
        ("set_objective", {"text": "A"}),
        ("list_todos", {}),
    ]


def test_pythonic_calls_are_read_never_run(tmp_path):
    touched = tmp_path / "touched"
    code = f'__import__("pathlib").Path({str(touched)!r}).touch()'
    for text in (
        f"[set_objective(text={code})]",
        f"<|python_tag|>set_objective(text={code})",
        f"```python\n[set_objective(text={code})]\n```",
        f"[{code}]",
    ):
        find_text_calls(text, TOOLS)
    assert not touched.exists()
    # After the python tag a call of an offered tool whose value is code is refused, not run, and says why.
    (call,) = find_text_calls(f"<|python_tag|>set_objective(text={code})", TOOLS).calls
    assert (call.name, call.args) == ("set_objective", {}) and "not a plain value" in call.problem
    (call,) = find_text_calls('<|python_tag|>set_objective("Ship")', TOOLS).calls
    assert call.args == {} and "without names" in call.problem


def test_a_huge_or_deeply_nested_pythonic_reply_is_left_alone_quickly():
    import time

    deep = "[set_objective(text=" + "[" * 5000 + "]" * 5000 + ")]"
    long_prose = "\n".join(f"[set_objective(text='line {n}'" for n in range(2000))  # never closed
    crafted = "\n".join("[set_objective(text=1\nx]" for _ in range(2000))  # every line end a candidate that fails
    started = time.monotonic()
    for text in (deep, long_prose, crafted):
        assert find_text_calls(text, TOOLS).calls == []
    assert time.monotonic() - started < 5


def test_after_a_marker_broken_arguments_are_a_refused_call_never_repaired():
    for text in (
        '<tool_call>{"name": "set_objective", "arguments": {"text": "Ship the rep</tool_call>',
        '[TOOL_CALLS]set_objective[ARGS]{"text": "Ship the rep',
        "<|channel|>commentary to=functions.set_objective <|constrain|>json<|message|>[1, 2]<|call|>",
    ):
        (call,) = find_text_calls(text, TOOLS).calls
        assert call.name == "set_objective" and call.args == {}
        assert call.problem.startswith(("not valid JSON", "not a JSON object"))


def test_arguments_with_a_number_past_the_digit_limit_are_a_refused_call():
    # json.loads refuses them with a plain ValueError, not a JSONDecodeError.
    number = "1" * 5000
    for text in (
        '<tool_call>{"name": "set_objective", "arguments": "{\\"text\\": ' + number + '}"}</tool_call>',
        '[TOOL_CALLS]set_objective[ARGS]{"text": ' + number + "}",
    ):
        (call,) = find_text_calls(text, TOOLS).calls
        assert call.name == "set_objective" and call.args == {}
        assert call.problem.startswith("not valid JSON (Exceeds the limit")


def test_a_negative_number_too_large_for_a_float_is_read_as_written():
    """The pythonic reader checked a negative number with math.isfinite, which raised OverflowError on a
    400-digit one out of the whole reply's reading; the chart tool's own check then refuses it (docs/adr/0025)."""
    huge = 10**400
    (call,) = find_text_calls(f'[chart_generator(title="T", data=[{{"name": "a", "value": -{huge}}}])]', TOOLS).calls
    assert (call.name, call.args, call.problem) == (
        "chart_generator",
        {"title": "T", "data": [{"name": "a", "value": -huge}]},
        None,
    )


def test_a_reply_with_native_calls_is_left_as_it_is():
    reply = AIMessage(content=SHAPES["qwen tool_call"], tool_calls=[{"name": "list_todos", "args": {}, "id": "c1"}])
    assert with_text_calls(reply, TOOLS) is reply


def test_extracted_calls_get_fresh_ids_and_are_marked():
    first = with_text_calls(AIMessage(content=SHAPES["mistral v11"]), TOOLS)
    second = with_text_calls(AIMessage(content=SHAPES["mistral v11"]), TOOLS)
    assert first.content == "" and first.response_metadata[TEXT_CALLS_KEY] == 1
    assert first.tool_calls[0]["id"] and first.tool_calls[0]["id"] != second.tool_calls[0]["id"]


# --------------------------------------------------------------------------
# Through the real agent (scripted model)


async def _turn(thread, script):
    model = ScriptedChatModel(script=script)
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    context = AgentContext(thread=thread, turn_index=1)
    events = [event async for event in stream_turn(agent, context=context, user_message="Record the goal")]
    state = await agent.aget_state(turn_config(thread.pk))
    return model, events, state.values["messages"]


def _objective(thread):
    return getattr(selectors.objective_for(thread=thread), "text", None)


def _valid_history(messages) -> bool:
    waiting = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in waiting:
                return False
            waiting.discard(message.tool_call_id)
        elif waiting:
            return False
        elif isinstance(message, AIMessage):
            waiting = {call["id"] for call in message.tool_calls}
    return not waiting


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "shape",
    [
        "llama python_tag",
        "llama bare json",
        "qwen tool_call",
        "gpt-oss channel",
        "mistral list",
        "fenced json",
        "llama 3.2 pythonic list",
        "llama 3.2 pythonic after python_tag",
    ],
)
async def test_a_text_call_runs_the_tool_and_the_next_call_sees_a_valid_history(thread, shape):
    model, events, messages = await _turn(thread, [Reply(text=SHAPES[shape]), Reply(text="I recorded the goal.")])

    assert await sync_to_async(_objective)(thread) == "Ship the report"
    call_message, result = model.requests[1][-2:]
    assert isinstance(call_message, AIMessage) and call_message.tool_calls[0]["name"] == "set_objective"
    assert "<|" not in call_message.text and "<tool_call>" not in call_message.text
    assert isinstance(result, ToolMessage) and result.tool_call_id == call_message.tool_calls[0]["id"]
    assert json.loads(result.content)["success"] is True
    assert _valid_history(model.requests[1][1:]) and _valid_history(messages)
    # The person sees the step's sentence, the draft taken back, then the real answer.
    kinds = [type(event) for event in events]
    assert kinds.index(DraftWithdrawn) < kinds.index(StepsStarted)
    assert next(e for e in events if isinstance(e, StepsStarted)).sentences == ("Writing down the goal.",)
    assert [e.text for e in events if isinstance(e, Answer)] == ["I recorded the goal."]


@pytest.mark.django_db(transaction=True)
async def test_a_text_call_to_an_unknown_tool_gets_the_same_error_as_a_native_one(thread):
    _, _, text_messages = await _turn(
        thread, [Reply(text='<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>'), Reply(text="Sorry.")]
    )
    _, _, native_messages = await _turn(thread, [Reply(tool_calls=[tool_call("delete_everything")]), Reply(text="Sorry.")])
    text_result = next(m for m in text_messages if isinstance(m, ToolMessage))
    native_result = next(m for m in native_messages if isinstance(m, ToolMessage))
    assert text_result.status == native_result.status == "error"
    assert text_result.content == native_result.content


@pytest.mark.django_db(transaction=True)
async def test_a_text_call_with_invalid_arguments_gets_the_tools_envelope_error(thread):
    _, _, messages = await _turn(
        thread,
        [Reply(text='<tool_call>{"name": "set_objective", "arguments": {"text": "x"}}</tool_call>'), Reply(text="Retrying.")],
    )
    result = next(m for m in messages if isinstance(m, ToolMessage))
    body = json.loads(result.content)
    assert body["success"] is False and "Invalid arguments for set_objective" in body["error"]


@pytest.mark.django_db(transaction=True)
async def test_a_pythonic_call_with_a_value_that_is_code_is_refused_and_nothing_changes(thread):
    code = '<|python_tag|>set_objective(action_and_reasoning="Goal.", text=input())'
    _, _, messages = await _turn(thread, [Reply(text=code), Reply(text="I will write it plainly.")])
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert "not a plain value" in result.content and result.status == "error"
    assert await sync_to_async(_objective)(thread) is None


@pytest.mark.django_db(transaction=True)
async def test_broken_json_after_a_marker_is_refused_and_nothing_changes(thread):
    broken = '<tool_call>{"name": "set_objective", "arguments": {"text": "Ship the rep</tool_call>'
    _, _, messages = await _turn(thread, [Reply(text=broken), Reply(text="I will try again later.")])
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert "not valid JSON" in result.content and result.status == "error"
    assert await sync_to_async(_objective)(thread) is None


@pytest.mark.django_db(transaction=True)
async def test_a_text_call_cut_off_at_the_output_limit_is_asked_again_not_run(thread):
    cut = Reply(text=f'<tool_call>{{"name": "set_objective", "arguments": {GOAL_JSON}}}</tool_call>', finish_reason="length")
    model, _, _ = await _turn(thread, [cut, cut, Reply(text="Too long.")])
    assert len(model.requests) == 3  # asked again shorter, then told it did not run
    assert "cut off at the output limit" in model.requests[2][-1].content
    assert await sync_to_async(_objective)(thread) is None


@pytest.mark.django_db(transaction=True)
async def test_turned_off_the_text_stays_the_answer(thread, settings):
    settings.HAICO_TEXT_TOOL_CALLS = False
    model, events, _ = await _turn(thread, [Reply(text=SHAPES["qwen tool_call"])])
    assert len(model.requests) == 1
    assert [e.text for e in events if isinstance(e, Answer)] == [SHAPES["qwen tool_call"]]


# --------------------------------------------------------------------------
# On the wire: the real ChatOpenAI sends the extracted call back as a valid history


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("shape", ["llama python_tag", "llama 3.2 pythonic list", "llama 3.2 pythonic after python_tag"])
async def test_the_real_client_sends_an_extracted_call_as_a_valid_history(thread, settings, shape):
    with OpenAICompatibleServer(models=["small-local"], strict_history=True) as server:
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url, ""
        settings.HAICO_MODEL, settings.HAICO_MODELS, settings.HAICO_MODEL_MAX_RETRIES = "small-local", [], 0
        server.script([Reply(text=SHAPES[shape]), Reply(text="I recorded the goal.")])
        agent = AgentProvider().graph(model=None, checkpointer=InMemorySaver())
        events = [e async for e in stream_turn(agent, context=AgentContext(thread=thread, turn_index=1), user_message="Go")]

        assert len(server.requests) == 2  # a history the server refused would have failed the turn (HTTP 400)
        assistant, tool = server.requests[1]["messages"][-2:]
        (call,) = assistant["tool_calls"]
        assert call["function"]["name"] == "set_objective" and json.loads(call["function"]["arguments"]) == GOAL
        assert tool["role"] == "tool" and tool["tool_call_id"] == call["id"]
        sent = json.dumps(server.requests[1]["messages"])
        assert "python_tag" not in sent and "set_objective(" not in sent
    assert [e.text for e in events if isinstance(e, Answer)] == ["I recorded the goal."]
    assert await sync_to_async(_objective)(thread) == "Ship the report"
