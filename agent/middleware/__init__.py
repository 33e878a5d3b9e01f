"""The agent's own model-call and tool-call middleware.

- retry: blank, malformed and cut-off replies (docs/adr/0072);
- stream_gate: only the kept attempt of a model call reaches the stream;
- replies: what a reply says about itself, and which of its calls must not run;
- refused_calls: those calls answered with their error instead of run;
- call_limit: the per-turn cap on model calls;
- call_order: the tool calls of one reply run one at a time, in the model's order;
- emit: events handed to whoever streams the run.
"""

from .call_limit import TurnCallLimitMiddleware
from .call_order import CallOrderMiddleware
from .refused_calls import RefusedCallsMiddleware
from .retry import ModelTurnRetryMiddleware

__all__ = ["CallOrderMiddleware", "ModelTurnRetryMiddleware", "RefusedCallsMiddleware", "TurnCallLimitMiddleware"]
