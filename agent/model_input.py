"""What one model call is sent of the thread's history: always a valid
conversation, and never more than the context budget (docs/adr/0012).

The checkpointer keeps the whole history and the chat shows it; only the
request to the model is shaped here, before every model call:

1. `valid_history`: every tool call has a result right after its message.
   A server killed during a tool step leaves a call without one in the
   checkpoint, from any earlier turn, and providers refuse such a history
   (HTTP 400) for every later call: such a call gets a synthetic result
   saying its effect is unknown, and a result without its call is left out.
2. `within_budget`: when the history is longer than the budget, the oldest
   turns are left out of this call, with LangChain's `trim_messages`
   (approximate token counting, cut only where a turn starts, so a tool call
   is never separated from its result). The current turn is always sent
   whole, and the system prompt (instructions and the live workspace) is
   never trimmed; it says that earlier turns were left out.

Why not LangChain's SummarizationMiddleware: it replaces the old messages
in the graph's state with a summary, so the checkpointer (and the chat,
which is read from it) would lose them, and it costs a model call; its
before-model hook is also an extra graph step per model call.
"""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

from .tools.envelope import failure_envelope

UNFINISHED_STEP_RESULT = failure_envelope(
    "This step did not finish: the server stopped before it returned, so whether it changed anything is "
    "unknown. Check the workspace in your instructions before doing it again."
)
LEFT_OUT_NOTE = (
    "\n\n(The {count} oldest messages of this conversation are not shown here, to stay within the context "
    "budget. The workspace above is current and complete.)"
)


def valid_history(messages: list[BaseMessage]) -> list[BaseMessage]:
    """`messages` with a result for every tool call, right after its
    message, and no result without its call. The same list when nothing
    needed fixing."""
    fixed: list[BaseMessage] = []
    waiting: dict[str, ToolCall] = {}  # calls of the last AI message still without a result
    changed = False

    def settle() -> None:
        nonlocal changed
        for call_id, call in waiting.items():
            fixed.append(ToolMessage(content=UNFINISHED_STEP_RESULT, tool_call_id=call_id, name=call.get("name"), status="error"))
            changed = True
        waiting.clear()

    for message in messages:
        if isinstance(message, ToolMessage):
            if waiting.pop(message.tool_call_id, None) is None:
                changed = True  # a result whose call is not right before it
                continue
            fixed.append(message)
            continue
        settle()
        fixed.append(message)
        if isinstance(message, AIMessage):
            waiting = {call_id: call for call in message.tool_calls if (call_id := call.get("id"))}
    settle()
    return fixed if changed else messages


def within_budget(messages: list[BaseMessage], *, max_tokens: int) -> tuple[list[BaseMessage], int]:
    """The newest part of `messages` that fits `max_tokens`, starting where
    a turn starts, and always the whole current turn (from its human
    message). Returns it and how many messages were left out."""
    if count_tokens_approximately(messages) <= max_tokens:
        return messages, 0
    start = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)), 0)
    current, older = messages[start:], messages[:start]
    room = max_tokens - count_tokens_approximately(current)
    kept = (
        trim_messages(
            older,
            max_tokens=room,
            token_counter=count_tokens_approximately,
            strategy="last",
            start_on="human",
            allow_partial=False,
        )
        if room > 0 and older
        else []
    )
    return [*kept, *current], len(older) - len(kept)


class ModelInputMiddleware(AgentMiddleware):
    """Shapes each model call's messages (module docstring). Inside the
    workspace prompt middleware, so the budget counts the system prompt."""

    def __init__(self, *, max_tokens: int):
        super().__init__()
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        return "ModelInput"

    def _shaped(self, request: ModelRequest) -> ModelRequest:
        messages = valid_history(request.messages)
        system = request.system_message
        budget = self.max_tokens - (count_tokens_approximately([system]) if system is not None else 0)
        shaped, left_out = within_budget(messages, max_tokens=max(budget, 1))
        if left_out:
            # The note saying so is part of the prompt too: its room comes out of the history's.
            note = count_tokens_approximately([SystemMessage(content=LEFT_OUT_NOTE.format(count=10**9))])
            shaped, left_out = within_budget(messages, max_tokens=max(budget - note, 1))
        messages = shaped
        if left_out:
            text = (system.text if system is not None else "") + LEFT_OUT_NOTE.format(count=left_out)
            return request.override(messages=messages, system_message=SystemMessage(content=text))
        if messages is request.messages:
            return request
        return request.override(messages=messages)

    async def awrap_model_call(self, request: ModelRequest, handler):
        return await handler(self._shaped(request))

    def wrap_model_call(self, request: ModelRequest, handler):
        return handler(self._shaped(request))
