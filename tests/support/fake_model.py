"""A scripted, tool-calling chat model for offline agent tests and the bench.

LangChain's own fakes (GenericFakeChatModel, FakeMessagesListChatModel)
refuse `bind_tools`, and drop tool calls when streamed, so this one streams
like a real provider: content tokens, then one chunk per tool call carrying
`tool_call_chunks`, then a last chunk with `finish_reason`. Every request's messages are recorded in `requests`, so a
test can read the system prompt each model call saw.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import PrivateAttr


@dataclass
class Reply:
    """One scripted model response."""

    text: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str | None = None
    token_delay: float = 0.0  # seconds between streamed tokens (for stop / heartbeat tests)
    # The token counts the test server reports for this reply
    # ({"prompt_tokens", "completion_tokens"}); None: counted from the text.
    usage: dict | None = None
    # Stream the text in pieces of this many characters instead of word by
    # word (a multi-megabyte answer in a reasonable number of chunks).
    token_chars: int = 0

    def text_tokens(self) -> list[str]:
        if self.token_chars > 0:
            return [self.text[i : i + self.token_chars] for i in range(0, len(self.text), self.token_chars)]
        return [t for t in re.split(r"(\s+)", self.text) if t]

    @property
    def resolved_finish_reason(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


def tool_call(name: str, action_and_reasoning: str = "Working on the shared workspace.", **args) -> dict:
    return {"name": name, "args": {**args, "action_and_reasoning": action_and_reasoning}}


Script = list[Reply | Callable[[list[BaseMessage]], Reply]]


class ScriptedChatModel(BaseChatModel):
    script: list[Any]
    # When the script runs out, answer with this (None: raise, so a test notices).
    default_reply: Any = None
    # When a list, the moment each content token is emitted is appended (bench).
    token_clock: Any = None

    _requests: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tool_lists: list[list[str]] = PrivateAttr(default_factory=list)
    _nonce: str = PrivateAttr(default_factory=lambda: uuid.uuid4().hex[:8])
    _calls: int = PrivateAttr(default=0)
    _streamed_chars: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    @property
    def requests(self) -> list[list[BaseMessage]]:
        return self._requests

    @property
    def streamed_chars(self) -> int:
        """Characters of answer text streamed so far (a stopped stream stops counting)."""
        return self._streamed_chars

    def message_id(self, call_no: int) -> str:
        """The id of the message of the `call_no`-th (1-based) model call.

        Unique per model instance like a provider's ids: a repeated id would
        make LangGraph's add_messages replace an earlier turn's message
        instead of appending it."""
        return f"run-scripted-{self._nonce}-{call_no}"

    def bind_tools(self, tools, **kwargs):  # tools are described by the agent; the script decides calls
        # Bound once per model call, just before it: what each call was offered.
        self._bound_tools = tools
        self._tool_lists.append([getattr(tool, "name", None) or tool.get("name") for tool in tools])
        return self

    @property
    def tool_lists(self) -> list[list[str]]:
        """The names of the tools bound for each model call, in call order."""
        return self._tool_lists

    def _next_reply(self, messages: list[BaseMessage]) -> Reply:
        self._requests.append(list(messages))
        index = self._calls
        self._calls += 1
        if index < len(self.script):
            step = self.script[index]
        elif self.default_reply is not None:
            step = self.default_reply
        else:
            raise RuntimeError(f"ScriptedChatModel ran out of script after {len(self.script)} replies")
        return step(messages) if callable(step) else step

    def _message(self, reply: Reply, call_no: int) -> AIMessage:
        return AIMessage(
            id=self.message_id(call_no),
            content=reply.text,
            tool_calls=[
                {"name": c["name"], "args": c["args"], "id": c.get("id") or f"call_{call_no}_{i}", "type": "tool_call"}
                for i, c in enumerate(reply.tool_calls)
            ],
            response_metadata={"finish_reason": reply.resolved_finish_reason},
        )

    def _chunks(self, reply: Reply, call_no: int) -> Iterator[AIMessageChunk]:
        message_id = self.message_id(call_no)
        for token in reply.text_tokens():
            yield AIMessageChunk(content=token, id=message_id)
        for i, call in enumerate(reply.tool_calls):
            yield AIMessageChunk(
                content="",
                id=message_id,
                tool_call_chunks=[
                    {
                        "name": call["name"],
                        "args": json.dumps(call["args"]),
                        "id": call.get("id") or f"call_{call_no}_{i}",
                        "index": i,
                        "type": "tool_call_chunk",
                    }
                ],
            )
        yield AIMessageChunk(content="", id=message_id, response_metadata={"finish_reason": reply.resolved_finish_reason})

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        reply = self._next_reply(messages)
        return ChatResult(generations=[ChatGeneration(message=self._message(reply, self._calls))])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return self._generate(messages, stop=stop, **kwargs)

    def _stream(self, messages, stop=None, run_manager=None, **kwargs) -> Iterator[ChatGenerationChunk]:
        reply = self._next_reply(messages)
        for chunk in self._chunks(reply, self._calls):
            if reply.token_delay and chunk.content:
                time.sleep(reply.token_delay)
            self._streamed_chars += len(chunk.content)
            if run_manager and chunk.content:
                run_manager.on_llm_new_token(chunk.content, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)

    async def _astream(self, messages, stop=None, run_manager=None, **kwargs) -> AsyncIterator[ChatGenerationChunk]:
        reply = self._next_reply(messages)
        for chunk in self._chunks(reply, self._calls):
            if reply.token_delay and chunk.content:
                await asyncio.sleep(reply.token_delay)
            generation = ChatGenerationChunk(message=chunk)
            if self.token_clock is not None and chunk.content.strip():
                self.token_clock.append(time.perf_counter())
            self._streamed_chars += len(chunk.content)
            if run_manager and chunk.content:
                await run_manager.on_llm_new_token(chunk.content, chunk=generation)
            yield generation


def system_text(messages: list[BaseMessage]) -> str:
    """The system prompt of one recorded request."""
    first = messages[0]
    return first.content if first.type == "system" else ""
