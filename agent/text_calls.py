"""Tool calls a model wrote as text, run as real tool calls (docs/adr/0020).

Small open models served by Ollama or llama.cpp often answer a tool-calling
request with the call written out in their own chat format instead of the
API's `tool_calls` field, so the call would be shown to the person as the
answer and nothing would happen. `TextToolCallsMiddleware` looks at a reply
that has no native tool calls, takes out the calls written in it and puts
them in the reply's `tool_calls` with generated ids, so the tools run and the
history sent with the next model call is a valid one (each call answered by
its tool message). The text that was the call is removed from the reply.

Shapes recognised (`find_text_calls`):

| shape                                   | written by            | name must be known |
|-----------------------------------------|-----------------------|--------------------|
| `<tool_call>{"name", "arguments"}</tool_call>` | Qwen 2.5 / 3, Hermes | no            |
| `<|python_tag|>{"name", "parameters"}`  | Llama 3.x             | no                 |
| `[TOOL_CALLS][{"name", "arguments"}]`, `[TOOL_CALLS]name[ARGS]{…}` | Mistral | no   |
| `<|channel|>… to=functions.NAME … <|message|>{…}` | gpt-oss (harmony) | no         |
| a fenced ```json block holding a call   | many                  | yes                |
| a bare JSON object (or list) of calls   | Llama 3.2, others     | yes                |
| pythonic `[f(a=1), g(b="x")]`, also after `<|python_tag|>` or in a ```python block | Llama 3.2 | yes |

After an explicit JSON marker the text is a call whatever it names: an
unknown name gets the same error as a native call to an unknown tool.
Without a marker, only JSON naming one of the offered tools is a call, so a
JSON example in an answer stays an answer. Pythonic calls are read with
`ast.parse` (never evaluated): only a list of calls of offered tools, with
keyword arguments whose values are literals (strings, numbers, booleans,
None and JSON's true / false / null, lists and dicts of them), is a call.

The rules of docs/adr/0012 hold: arguments that are not one valid JSON
object are never repaired; a call after a marker whose arguments are broken
is refused with the same error a native call gets (INVALID_TOOL_ARGS_KEY),
and a reply cut off at the output limit is handled by the model-call retry,
which sits outside this middleware and so sees the extracted calls.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from .model import INVALID_TOOL_ARGS_KEY, json_problem

logger = logging.getLogger("haico.agent")

# On a reply whose tool calls were taken from its text: how many.
TEXT_CALLS_KEY = "haico_text_tool_calls"

_NAME_KEYS = ("name", "tool", "tool_name")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_CALL_KEYS = frozenset({*_NAME_KEYS, *_ARGUMENT_KEYS, "id", "type", "function"})

_decoder = json.JSONDecoder()


@dataclass(frozen=True)
class TextCall:
    """One call found in the text; `problem` says why its arguments cannot
    be used (then `args` is empty and the call is refused, not run)."""

    name: str
    args: dict
    problem: str | None = None


@dataclass(frozen=True)
class Extraction:
    calls: list[TextCall]
    remaining: str  # the text with the calls taken out


# --------------------------------------------------------------------------
# Reading one call


def _json_at(text: str, position: int):
    """The JSON value starting at `position` (after whitespace) and where it
    ends, or (None, position) when there is none; strict, never repaired."""
    start = position
    while start < len(text) and text[start].isspace():
        start += 1
    try:
        value, end = _decoder.raw_decode(text, start)
    except ValueError:
        return None, position
    return value, end


def _json_problem(raw: str) -> str:
    try:
        json.loads(raw)
    except ValueError as exc:
        return json_problem(exc)
    return "not a JSON object"


def _arguments(value) -> tuple[dict, str | None]:
    if value is None:
        return {}, None
    if isinstance(value, str):  # some models send the arguments as a JSON string
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError as exc:
            return {}, json_problem(exc)
    if not isinstance(value, dict):
        return {}, "not a JSON object"
    return value, None


def _as_call(value) -> TextCall | None:
    """`value` read as a call ({"name", "arguments"} and its variants, or
    OpenAI's {"type": "function", "function": {...}}), or None."""
    if not isinstance(value, dict) or not value:
        return None
    function = value.get("function")
    if isinstance(function, dict):
        return _as_call(function)
    if not set(value) <= _CALL_KEYS:
        return None
    name = next((value[key] for key in (*_NAME_KEYS, "function") if isinstance(value.get(key), str)), None)
    if not name or not name.strip():
        return None
    present = [key for key in _ARGUMENT_KEYS if key in value]
    args, problem = _arguments(value[present[0]] if present else None)
    return TextCall(name=name.strip(), args=args, problem=problem)


def _as_calls(value) -> list[TextCall] | None:
    """A call or a list of calls; None unless every item is one."""
    items = value if isinstance(value, list) else [value]
    calls = [call for item in items if (call := _as_call(item)) is not None]
    if not calls or len(calls) < len(items):
        return None
    return calls


def _every_call(values: list) -> list[TextCall] | None:
    """The calls in `values`; None unless each value is a call or a list of calls."""
    calls: list[TextCall] = []
    for value in values:
        found = _as_calls(value)
        if found is None:
            return None
        calls.extend(found)
    return calls


def _json_sequence(text: str, position: int) -> tuple[list, int]:
    """JSON values one after another from `position`, separated by
    whitespace or `;` (Llama writes several calls that way)."""
    values: list = []
    end = position
    while True:
        value, after = _json_at(text, end)
        if after == end:
            return values, end
        values.append(value)
        end = after
        rest = re.match(r"\s*;", text[end:])
        if rest:
            end += rest.end()


# --------------------------------------------------------------------------
# Pythonic calls (Llama 3.2): read with `ast`, values as literals only


# JSON's words for them, which these models also write inside Python syntax.
_JSON_WORDS = {"true": True, "false": False, "null": None}


class _NotLiteral(ValueError):
    pass


def _literal(node):
    """The plain value `node` writes (a JSON-able literal), or _NotLiteral.
    Nothing is evaluated: only these node shapes are read."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, bool | str | int) or (isinstance(value, float) and math.isfinite(value)):
            return value
    elif isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    elif isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):  # {**other}
            raise _NotLiteral("a dict unpacked into another")
        keys = [_literal(key) for key in node.keys]
        if not all(isinstance(key, str) for key in keys):
            raise _NotLiteral("a dict key that is not text")
        return dict(zip(keys, (_literal(value) for value in node.values), strict=True))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = node.operand
        value = operand.value if isinstance(operand, ast.Constant) else None
        # An int is checked apart: math.isfinite raises OverflowError on one too large for a float
        # (-1 followed by 400 zeros), as a JSON number may be (docs/adr/0025).
        if type(value) is int or (type(value) is float and math.isfinite(value)):
            return -value if isinstance(node.op, ast.USub) else value
    elif isinstance(node, ast.Name) and node.id in _JSON_WORDS:
        return _JSON_WORDS[node.id]
    raise _NotLiteral(type(node).__name__)


def _pythonic_calls(source: str, tool_names: frozenset[str], *, bare: bool = False) -> list[TextCall] | None:
    """`source` read as a list of calls `[f(a=1), g(b="x")]` (with `bare`,
    also one call or several separated by commas), each naming an offered
    tool; None when it is not one. A call whose arguments are positional or
    not literals is kept with a `problem` (refused, never run)."""
    try:
        body = ast.parse(source.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if isinstance(body, ast.List) or (bare and isinstance(body, ast.Tuple)):
        nodes = body.elts
    elif bare and isinstance(body, ast.Call):
        nodes = [body]
    else:
        return None
    if not nodes or not all(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in tool_names for node in nodes
    ):
        return None
    calls = []
    for node in cast(list[ast.Call], nodes):  # each a call of a tool's name (checked above)
        name = cast(ast.Name, node.func).id
        if node.args or any(keyword.arg is None for keyword in node.keywords):
            calls.append(TextCall(name=name, args={}, problem="arguments without names; give each argument its name"))
            continue
        try:
            args = {keyword.arg: _literal(keyword.value) for keyword in node.keywords}
        except (_NotLiteral, RecursionError) as exc:
            calls.append(TextCall(name=name, args={}, problem=f"an argument that is not a plain value ({exc})"))
            continue
        calls.append(TextCall(name=name, args=args))
    return calls


_PYTHONIC_START = re.compile(r"(?m)^[ \t]*\[\s*(?P<name>[A-Za-z_]\w*)\s*\(")
_LINE_END_AFTER_BRACKET = re.compile(r"\][ \t]*(?=\r?\n|\Z)")
# A pythonic list a reply holds ends within this many candidate line ends,
# and a reply holds at most this many lists worth trying: a bound on the
# parsing a crafted reply can cause.
_PYTHONIC_TRIES = 40
_PYTHONIC_STARTS = 20


def _pythonic_list_at(text: str, start: int, tool_names: frozenset[str]) -> tuple[list[TextCall], int] | None:
    """A list of calls starting at `start` and ending at the end of a line
    (the shortest that reads as one), with where it ends."""
    for tries, bracket in enumerate(_LINE_END_AFTER_BRACKET.finditer(text, start)):
        if tries >= _PYTHONIC_TRIES:
            return None
        calls = _pythonic_calls(text[start : bracket.start() + 1], tool_names)
        if calls is not None:
            return calls, bracket.end()
    return None


# --------------------------------------------------------------------------
# The shapes


_QWEN = re.compile(r"<tool_call>")
_QWEN_END = re.compile(r"\s*</tool_call>")
_LLAMA = re.compile(r"<\|python_tag\|>")
_LLAMA_END = re.compile(r"\s*(?:<\|eom_id\|>|<\|eot_id\|>)")
_MISTRAL = re.compile(r"\[TOOL_CALLS\]")
_MISTRAL_NAMED = re.compile(r"\s*(?P<name>[A-Za-z_][\w\-.]*)\s*(?:\[CALL_ID\]\s*[\w\-]+\s*)?\[ARGS\]")
_HARMONY = re.compile(
    r"(?:<\|start\|>\s*assistant\s*)?(?:<\|channel\|>\s*\w+\s*)?to=functions\.(?P<name>[\w\-.]+)\s*"
    r"(?:<\|channel\|>\s*\w+\s*)?(?:<\|constrain\|>\s*)?(?:json\s*)?<\|message\|>"
)
_HARMONY_ANALYSIS = re.compile(
    r"(?:<\|start\|>\s*assistant\s*)?<\|channel\|>\s*analysis\s*<\|message\|>.*?(?:<\|end\|>|\Z)", re.DOTALL
)
_HARMONY_END = re.compile(r"\s*(?:<\|call\|>|<\|end\|>)")
_FENCE = re.compile(
    r"```[ \t]*(?P<language>json|tool_call|tool_code|javascript|python|py)?[ \t]*\n(?P<body>.*?)\n?[ \t]*```", re.DOTALL
)
_NAME_IN_BROKEN_JSON = re.compile(r'"(?:name|tool)"\s*:\s*"(?P<name>[\w\-.]+)"')
_TAG_END = re.compile(r"</tool_call>|<\|eom_id\|>|<\|eot_id\|>|<\|call\|>|\Z")


def _broken_after_marker(text: str, position: int, name: str | None) -> tuple[TextCall | None, int]:
    """A marker followed by something that is not valid JSON: a call refused
    for its arguments when the name can be read, else nothing."""
    tail_end = _TAG_END.search(text, position)
    end = tail_end.end() if tail_end else len(text)
    raw = text[position : tail_end.start() if tail_end else len(text)]
    if name is None:
        found = _NAME_IN_BROKEN_JSON.search(raw)
        name = found["name"] if found else None
    if not name:
        return None, position
    return TextCall(name=name, args={}, problem=_json_problem(raw.strip())), end


def _pythonic_after_python_tag(text: str, position: int, tool_names: frozenset[str]):
    """Llama's `<|python_tag|>` followed by pythonic calls of offered tools
    (up to its end-of-message token): (calls, end) or None."""
    closing = re.compile(r"<\|eom_id\|>|<\|eot_id\|>").search(text, position)
    stop = closing.start() if closing else len(text)
    calls = _pythonic_calls(text[position:stop], tool_names, bare=True)
    if calls is None:
        return None
    return calls, closing.end() if closing else stop


def _marked(text: str, tool_names: frozenset[str]) -> Iterable[tuple[int, int, list[TextCall]]]:
    """(start, end, calls) for every call after an explicit marker."""
    for marker, closing in ((_QWEN, _QWEN_END), (_LLAMA, _LLAMA_END)):
        for found in marker.finditer(text):
            values, end = _json_sequence(text, found.end())
            calls = [call for value in values for call in (_as_calls(value) or [])]
            if values and len(calls) >= len(values):
                closed = closing.match(text, end)
                yield found.start(), closed.end() if closed else end, calls
                continue
            pythonic = _pythonic_after_python_tag(text, found.end(), tool_names) if marker is _LLAMA else None
            if pythonic is not None:
                yield found.start(), pythonic[1], pythonic[0]
                continue
            call, end = _broken_after_marker(text, found.end(), None)
            if call is not None:
                yield found.start(), end, [call]
    for found in _MISTRAL.finditer(text):
        named = _MISTRAL_NAMED.match(text, found.end())
        if named:
            value, end = _json_at(text, named.end())
            if end == named.end():
                call, end = _broken_after_marker(text, named.end(), named["name"])
                yield found.start(), end, [call]  # type: ignore[list-item]  # with a name it is a call
                continue
            args, problem = _arguments(value)
            yield found.start(), end, [TextCall(name=named["name"], args=args, problem=problem)]
            continue
        value, end = _json_at(text, found.end())
        listed = _as_calls(value) if end != found.end() else None
        if listed:
            yield found.start(), end, listed
    for found in _HARMONY.finditer(text):
        value, end = _json_at(text, found.end())
        if end == found.end():
            call, end = _broken_after_marker(text, found.end(), found["name"])
            yield found.start(), end, [call]  # type: ignore[list-item]  # with a name it is a call
            continue
        args, problem = _arguments(value)
        closed = _HARMONY_END.match(text, end)
        yield found.start(), closed.end() if closed else end, [TextCall(name=found["name"], args=args, problem=problem)]


def _unmarked(text: str, tool_names: frozenset[str], taken: list[tuple[int, int]]) -> Iterable[tuple[int, int, list[TextCall]]]:
    """Calls in a fenced JSON block or as bare JSON at the start of a line,
    naming only offered tools and with valid arguments."""

    def usable(calls):
        return bool(calls) and all(call.name in tool_names and call.problem is None for call in calls)

    def free(start, end):
        return all(end <= a or start >= b for a, b in taken)

    for found in _FENCE.finditer(text):
        if not free(found.start(), found.end()):
            continue
        if found["language"] in ("python", "py", "tool_code"):
            calls = _pythonic_calls(found["body"], tool_names)
            if calls is not None and usable(calls):
                taken.append((found.start(), found.end()))
                yield found.start(), found.end(), calls
                continue
        values, end = _json_sequence(found["body"], 0)
        if not values or found["body"][end:].strip():
            continue
        calls = _every_call(values)
        if calls is not None and usable(calls):
            taken.append((found.start(), found.end()))
            yield found.start(), found.end(), calls
    for line in re.finditer(r"(?m)^[ \t]*(?=[\[{])", text):
        start = line.end()
        if not free(start, start + 1):
            continue
        values, end = _json_sequence(text, start)
        if not values:
            continue
        calls = _every_call(values)
        if calls is not None and usable(calls):
            taken.append((start, end))
            yield start, end, calls
    starts = 0
    for found in _PYTHONIC_START.finditer(text):
        start = text.index("[", found.start())
        if found["name"] not in tool_names or not free(start, start + 1):
            continue
        starts += 1
        if starts > _PYTHONIC_STARTS:
            break
        listed = _pythonic_list_at(text, start, tool_names)
        if listed is not None and usable(listed[0]):
            taken.append((start, listed[1]))
            yield start, listed[1], listed[0]


def find_text_calls(text: str, tool_names: Iterable[str]) -> Extraction:
    """The tool calls written in `text`, in the order written, and the text
    without them."""
    if not text or not text.strip():
        return Extraction([], text)
    names = frozenset(tool_names)
    spans: list[tuple[int, int, list[TextCall]]] = []
    for start, end, calls in _marked(text, names):
        if all(end <= a or start >= b for a, b, _ in spans):
            spans.append((start, end, calls))
    taken = [(a, b) for a, b, _ in spans]
    spans.extend(_unmarked(text, names, taken))
    if not spans:
        return Extraction([], text)
    spans.sort(key=lambda span: span[0])
    pieces, last = [], 0
    for start, end, _ in spans:
        pieces.append(text[last:start])
        last = end
    pieces.append(text[last:])
    # gpt-oss thinks aloud in an analysis channel before its call: not a preamble.
    remaining = _HARMONY_ANALYSIS.sub("", "".join(pieces))
    remaining = re.sub(r"\n{3,}", "\n\n", remaining).strip()
    return Extraction([call for _, _, calls in spans for call in calls], remaining)


# --------------------------------------------------------------------------
# The middleware


def new_call_id() -> str:
    return f"call_text_{uuid.uuid4().hex[:20]}"


def with_text_calls(reply: AIMessage, tool_names: Iterable[str]) -> AIMessage:
    """`reply` with the calls written in its text as real tool calls, or
    `reply` itself when it has native calls or none are written."""
    if reply.tool_calls or reply.invalid_tool_calls:
        return reply
    found = find_text_calls(reply.text, tool_names)
    if not found.calls:
        return reply
    calls, problems = [], {}
    for call in found.calls:
        call_id = new_call_id()
        calls.append({"name": call.name, "args": call.args, "id": call_id, "type": "tool_call"})
        if call.problem:
            problems[call_id] = call.problem
    extra = dict(reply.additional_kwargs or {})
    if problems:
        extra[INVALID_TOOL_ARGS_KEY] = {**(extra.get(INVALID_TOOL_ARGS_KEY) or {}), **problems}
    meta = {**(reply.response_metadata or {}), TEXT_CALLS_KEY: len(calls)}
    logger.info("took %d tool call(s) from the model's text: %s", len(calls), [call["name"] for call in calls])
    return reply.model_copy(
        update={"content": found.remaining, "tool_calls": calls, "additional_kwargs": extra, "response_metadata": meta}
    )


def _tool_names(request: ModelRequest) -> list[str]:
    names = []
    for tool in request.tools or []:
        name = tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", None)
        if isinstance(name, str):
            names.append(name)
    return names


class TextToolCallsMiddleware(AgentMiddleware):
    """Turns tool calls written in a reply's text into real ones. Inside the
    model-call retry, so a cut-off or malformed reply is judged with its
    calls (docs/adr/0012)."""

    @property
    def name(self) -> str:
        return "TextToolCalls"

    def _extracted(self, request: ModelRequest, response):
        messages = [response] if isinstance(response, AIMessage) else response.result
        index = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None)
        if index is None:
            return response
        reply = messages[index]
        updated = with_text_calls(reply, _tool_names(request))
        if updated is reply:
            return response
        if isinstance(response, AIMessage):
            return updated
        result = list(messages)
        result[index] = updated
        return ModelResponse(result=result, structured_response=response.structured_response)

    async def awrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        return self._extracted(request, await handler(request))

    def wrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        return self._extracted(request, handler(request))
