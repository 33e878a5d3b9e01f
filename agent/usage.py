"""Tokens per model call, and the person's token limit inside a turn
(docs/adr/0063, 0064).

`UsageMiddleware` sits closest to the model: after every model call
(retried attempts included: each one was paid for) it reads the tokens the
provider reported on the reply (`usage_metadata`; ChatOpenAI asks for it on
streamed replies too, `stream_usage`), or estimates them from the text when
the provider sent none, adds them to the run's `TokenBudget` and hands a
`ModelCallUsage` event to whoever streams the run; the conversation layer
stores one row per call. Nothing happens per token.

`TokenLimitMiddleware` sits outermost: before every model call of a turn
but its first, when the tokens used outside the turn plus those the turn
used so far reach one of the person's limits (the windows the conversation
layer computed at the turn's start, read again every few seconds:
agent.context.TokenBudget), the turn ends instead of calling the model,
with a reply saying which limit and when it resets. The call that crossed
the limit finished; what the turn did is kept.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage
from langchain_core.messages.utils import count_tokens_approximately

from .context import TokenBudget, TokenWindow
from .events import CapReached, ModelCallStarted, ModelCallUsage
from .middleware.call_limit import model_calls_this_turn
from .middleware.emit import emit
from .middleware.replies import SYNTHETIC_KEY

logger = logging.getLogger("haico.agent")

DAY, MONTH = "day", "month"
__all__ = ["DAY", "MONTH", "TokenBudget", "TokenLimitMiddleware", "TokenWindow", "UsageMiddleware", "limit_message"]


def tokens_text(count: int) -> str:
    """100000 -> "100 000" (a space between thousands, as the messages show them)."""
    return f"{count:,}".replace(",", " ")


def _in(delta_seconds: float) -> str:
    minutes = max(0, math.ceil(delta_seconds / 60))
    if minutes < 1:
        return "in less than a minute"
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"in {days} day{'s' if days != 1 else ''} {hours} h" if hours else f"in {days} day{'s' if days != 1 else ''}"
    if hours:
        return f"in {hours} h {minutes} min" if minutes else f"in {hours} h"
    return f"in {minutes} min"


def limit_message(window: TokenWindow, now: datetime | None = None) -> str:
    """ "You have used your 100 000 tokens for today; the limit resets at 00:00
    UTC (in 3 h 12 min).\""""
    now = now or timezone.now()
    left = _in((window.resets_at - now).total_seconds())
    if window.period == DAY:
        return (
            f"You have used your {tokens_text(window.limit)} tokens for today; "
            f"the limit resets at {window.resets_at:%H:%M} UTC ({left})."
        )
    return (
        f"You have used your {tokens_text(window.limit)} tokens for this month; "
        f"the limit resets on {window.resets_at.day} {window.resets_at:%B} at {window.resets_at:%H:%M} UTC ({left})."
    )


STOPPED_AT_LIMIT = "I stopped here: {limit} Everything done so far is kept in the workspace."


def _reply_of(response) -> AIMessage | None:
    messages = [response] if isinstance(response, AIMessage) else getattr(response, "result", None) or []
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def _model_name(request: ModelRequest) -> str:
    return str(getattr(request.model, "model_name", "") or "")


def _sent(request: ModelRequest) -> list:
    return [request.system_message, *request.messages] if request.system_message is not None else list(request.messages)


def call_started(request: ModelRequest) -> ModelCallStarted:
    """The call about to be sent, its request estimated (characters / 4)."""
    return ModelCallStarted(count_tokens_approximately(_sent(request)), model=_model_name(request))


def call_usage(request: ModelRequest, response) -> ModelCallUsage | None:
    """The tokens of one model call: the provider's figures, or an estimate
    (characters / 4, langchain's approximate counter) marked so."""
    reply = _reply_of(response)
    if reply is None:
        return None
    name = _model_name(request)
    reported: Mapping[str, Any] = reply.usage_metadata or {}
    if reported.get("input_tokens") is not None or reported.get("output_tokens") is not None:
        return ModelCallUsage(int(reported.get("input_tokens") or 0), int(reported.get("output_tokens") or 0), model=name)
    return ModelCallUsage(
        count_tokens_approximately(_sent(request)), count_tokens_approximately([reply]), estimated=True, model=name
    )


def _budget(request: ModelRequest) -> TokenBudget | None:
    return getattr(getattr(request.runtime, "context", None), "budget", None)


class UsageMiddleware(AgentMiddleware):
    """Counts each model call's tokens (innermost: every attempt is a call).
    Each call is announced before it is sent, so a call that never returns
    (the turn stopped, the stream broke) is still counted by whoever
    streams the run, from the estimate and what it streamed."""

    @property
    def name(self) -> str:
        return "Usage"

    def _count(self, request: ModelRequest, response) -> None:
        usage = call_usage(request, response)
        if usage is None:
            return
        budget = _budget(request)
        if budget is not None:
            budget.count(usage.input_tokens + usage.output_tokens)
        emit(usage)

    async def awrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        emit(call_started(request))
        response = await handler(request)
        self._count(request, response)
        return response

    def wrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        emit(call_started(request))
        response = handler(request)
        self._count(request, response)
        return response


class TokenLimitMiddleware(AgentMiddleware):
    """Ends a turn that reached the person's token limit, before its next model call."""

    @property
    def name(self) -> str:
        return "TokenLimit"

    def _budget_to_check(self, request: ModelRequest) -> TokenBudget | None:
        budget = _budget(request)
        # Without a limit it is still read again when it can be (a limit staff
        # give meanwhile applies at the next call, docs/adr/0064).
        if budget is None or (not budget.windows and budget.reread is None):
            return None
        if not model_calls_this_turn(request.state.get("messages") or request.messages):
            return None  # a turn's first call: the turn was let start (conversations.quotas)
        return budget

    def _stopped(self, budget: TokenBudget) -> ModelResponse | None:
        window = budget.exhausted()
        if window is None:
            return None
        limit = limit_message(window)
        logger.warning("turn stopped at the person's %s token limit of %s", window.period, window.limit)
        emit(
            CapReached(
                cap="tokens",
                limit=window.limit,
                message=f"The turn stopped at your token limit: {limit}",
                detail=f"{window.period} limit {window.limit}; used outside the turn {window.used}, in the turn {budget.spent}",
            )
        )
        note = AIMessage(content=STOPPED_AT_LIMIT.format(limit=limit), response_metadata={SYNTHETIC_KEY: True})
        return ModelResponse(result=[note])

    async def awrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        budget = self._budget_to_check(request)
        if budget is None:
            return await handler(request)
        await budget.reread_if_due()
        return self._stopped(budget) or await handler(request)

    def wrap_model_call(self, request: ModelRequest, handler) -> ModelResponse:
        budget = self._budget_to_check(request)
        return (budget is not None and self._stopped(budget)) or handler(request)
