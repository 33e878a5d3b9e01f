"""Tool calls that must not run: answered with their error instead
(docs/adr/0012). Which they are is decided on the model's reply
(agent.middleware.replies.refusals)."""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage

from ..tools.envelope import failure_envelope
from .replies import REFUSED_CALLS_KEY


class RefusedCallsMiddleware(AgentMiddleware):
    """Answers the tool calls the model-call retry refused (REFUSED_CALLS_KEY)
    with their error instead of running them."""

    @property
    def name(self) -> str:
        return "RefusedCalls"

    @staticmethod
    def _refusal(request) -> ToolMessage | None:
        call = request.tool_call
        for message in reversed((request.state or {}).get("messages") or []):
            if isinstance(message, AIMessage) and any(c.get("id") == call.get("id") for c in message.tool_calls):
                reason = ((message.response_metadata or {}).get(REFUSED_CALLS_KEY) or {}).get(call.get("id"))
                if reason is None:
                    return None
                return ToolMessage(
                    content=failure_envelope(reason), tool_call_id=call["id"], name=call.get("name"), status="error"
                )
        return None

    async def awrap_tool_call(self, request, handler):
        return self._refusal(request) or await handler(request)

    def wrap_tool_call(self, request, handler):
        return self._refusal(request) or handler(request)
