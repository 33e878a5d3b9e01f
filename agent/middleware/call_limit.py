"""The per-turn cap on model calls, per mode (agent.modes)."""

from __future__ import annotations

import logging
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage

from ..events import CapReached
from ..modes import CALL_LIMIT_SETTINGS, DEFAULT_MODE, label
from .emit import emit
from .replies import SYNTHETIC_KEY

logger = logging.getLogger("haico.agent")

CALL_LIMIT_MESSAGE = (
    "I stopped because this turn reached the {mode} mode's limit of {limit} model calls ({setting}). "
    "Everything done so far is kept in the workspace; send a message to let me continue."
)
CALL_LIMIT_DIAGNOSTIC = "Call cap reached: the turn stopped at the {mode} mode's limit of {limit} model calls ({setting})."


def model_calls_this_turn(messages: list) -> int:
    """Model calls already made in the running turn: the AI messages after the
    turn's human message (retried attempts never reach the state)."""
    count = 0
    for message in reversed(messages):
        if message.type == "human":
            break
        if message.type == "ai":
            count += 1
    return count


class TurnCallLimitMiddleware(AgentMiddleware):
    """Ends a turn whose model keeps calling tools, with a message a person can
    act on, after the run's mode's number of model calls (`limits`: mode ->
    cap, 0 for none; agent.modes). Reaching it is also a Diagnostic, which
    the conversation layer records in the activity log.

    Why not langchain's `ModelCallLimitMiddleware`: its before/after-model hooks
    become graph nodes, i.e. two extra supersteps (and checkpoint writes) per
    model call, which bench/turn_overhead.py measured at ~4 ms per agent step.
    Counting the turn's AI messages inside the model call costs nothing and
    needs no state of its own, so it is naturally per turn."""

    def __init__(self, *, limits: dict[str, int]):
        super().__init__()
        if any(limit < 0 for limit in limits.values()):
            raise ValueError("a call limit must be 0 (none) or more")
        self.limits = dict(limits)

    @property
    def name(self) -> str:
        return "TurnCallLimit"

    def _limit_reached(self, request: ModelRequest) -> ModelResponse | None:
        mode = getattr(getattr(request.runtime, "context", None), "mode", DEFAULT_MODE)
        if mode not in self.limits:
            mode = DEFAULT_MODE
        limit = self.limits.get(mode) or 0
        if not limit or model_calls_this_turn(request.state.get("messages") or request.messages) < limit:
            return None
        words: dict[str, Any] = {"mode": label(mode), "limit": limit, "setting": CALL_LIMIT_SETTINGS[mode]}
        logger.warning("turn stopped at the %s mode's model-call limit of %s", mode, limit)
        emit(CapReached(cap="model_calls", limit=limit, detail=CALL_LIMIT_DIAGNOSTIC.format(**words), mode=words["mode"]))
        note = AIMessage(content=CALL_LIMIT_MESSAGE.format(**words), response_metadata={SYNTHETIC_KEY: True})
        return ModelResponse(result=[note])

    async def awrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        return self._limit_reached(request) or await handler(request)

    def wrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        return self._limit_reached(request) or handler(request)
