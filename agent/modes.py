"""The agent's modes: what a turn may change, and how many model calls it gets.

The person picks the mode with the chat's "Mode" selector (stored on the
thread, workspace.models.Thread.Mode); the turn runs with the mode chosen
when its message was sent, carried in the run's context
(agent.context.AgentContext.mode). One compiled agent serves every mode
(docs/adr/0008): `ModeMiddleware` takes the tools the mode does not allow
out of each model call's request, and refuses a call to one of them with a
failure envelope should the model call it anyway (docs/adr/0018).

- Explore: read and answer; only the read-only tools, no workspace change.
- Plan: the objective and the plan tools, plus the read-only ones.
- Execute: every tool (the default).

Each mode has its own per-turn cap on model calls (agent.middleware.call_limit
TurnCallLimitMiddleware): Explore and Plan get fewer than Execute, in the
2 : 5 ratio of the 200 and 500 iterations of the agent system the modes
follow (docs/adr/0072), scaled to the limit this project already had
(HAICO_MODEL_CALL_LIMIT, 25).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import ToolMessage

from workspace.models import Thread

from .tools import objective, todos
from .tools.envelope import failure_envelope
from .tools.registry import tool_specs

Mode = Thread.Mode
DEFAULT_MODE = Mode.EXECUTE

DEFAULT_CALL_LIMITS: dict[str, int] = {Mode.EXPLORE: 10, Mode.PLAN: 10, Mode.EXECUTE: 25}
# The setting that sets each mode's cap (0: no cap).
CALL_LIMIT_SETTINGS: dict[str, str] = {
    Mode.EXPLORE: "HAICO_EXPLORE_CALL_LIMIT",
    Mode.PLAN: "HAICO_PLAN_CALL_LIMIT",
    Mode.EXECUTE: "HAICO_MODEL_CALL_LIMIT",
}


@dataclass(frozen=True)
class ModeRules:
    mode: str
    # The tool modules whose writing tools the mode allows; None: all of them.
    # Read-only tools are allowed in every mode.
    domains: tuple[str, ...] | None
    prompt: str


RULES: dict[str, ModeRules] = {
    Mode.EXPLORE: ModeRules(
        Mode.EXPLORE,
        domains=(),
        prompt=(
            "The person chose Explore mode: read and answer. In this mode you cannot change the workspace "
            "(no edits to the objective, the plan, the preferences, the document or the artifacts), and only "
            "the reading tools are available. Answer from the workspace and the conversation. If the request "
            "needs a change, say briefly what you would change and that the person can switch the Mode "
            "selector to Plan or Execute. This overrides the instructions above where they differ."
        ),
    ),
    Mode.PLAN: ModeRules(
        Mode.PLAN,
        domains=(objective.__name__, todos.__name__),
        prompt=(
            "The person chose Plan mode: work on the objective and the plan only. You may set the objective "
            "and add, rewrite, tick or remove plan steps, and use the reading tools; the document, the "
            "preferences and the artifacts cannot be changed in this mode. Lay the plan out and stop: do not "
            "carry it out. If the person wants it carried out, say they can switch the Mode selector to "
            "Execute. This overrides the instructions above where they differ."
        ),
    ),
    Mode.EXECUTE: ModeRules(
        Mode.EXECUTE,
        domains=None,
        prompt="The person chose Execute mode: every tool is available; plan and carry out the work as described above.",
    ),
}


def rules_for(mode: str) -> ModeRules:
    """The rules of `mode`; an unknown value (never stored: the edges
    validate it) falls back to the default."""
    return RULES.get(mode, RULES[DEFAULT_MODE])


def label(mode: str) -> str:
    return Mode(rules_for(mode).mode).label


def _allowed_names(mode: str) -> frozenset[str]:
    domains = rules_for(mode).domains
    return frozenset(spec.name for spec in tool_specs() if spec.read_only or domains is None or spec.body.__module__ in domains)


ALLOWED_TOOLS = {mode: _allowed_names(mode) for mode in Mode.values}


def allowed_tools(mode: str) -> frozenset[str]:
    """The names of the registered tools the model may call in `mode`."""
    return ALLOWED_TOOLS[rules_for(mode).mode]


def allows(mode: str, tool_name: str | None) -> bool:
    # A mode that allows every domain allows any tool, including one added
    # to the agent outside the registry.
    return rules_for(mode).domains is None or tool_name in allowed_tools(mode)


def mode_prompt(mode: str) -> str:
    """The prompt's section saying which mode is on."""
    return f"# Mode: {label(mode)}\n\n{rules_for(mode).prompt}"


def call_limits() -> dict[str, int]:
    """Each mode's cap on model calls per turn, from the settings (0: none)."""
    return {mode: getattr(settings, CALL_LIMIT_SETTINGS[mode], DEFAULT_CALL_LIMITS[mode]) for mode in Mode.values}


def out_of_mode_error(name: str, mode: str) -> str:
    return (
        f"Not run: {name} is not available in {label(mode)} mode, which the person chose for this turn. "
        "Nothing was changed. Use only the tools you were given; if the request needs this change, say so "
        "in your answer and suggest switching the Mode selector."
    )


class ModeMiddleware(AgentMiddleware):
    """Shows the model only the tools of the run's mode, and answers a call
    to any other tool with an error instead of running it."""

    @property
    def name(self) -> str:
        return "Mode"

    @staticmethod
    def _mode(runtime) -> str:
        return getattr(getattr(runtime, "context", None), "mode", DEFAULT_MODE)

    def _filtered(self, request: ModelRequest) -> ModelRequest:
        mode = self._mode(request.runtime)
        tools = [tool for tool in request.tools if allows(mode, getattr(tool, "name", None))]
        if len(tools) == len(request.tools):
            return request
        return request.override(tools=tools)

    async def awrap_model_call(self, request: ModelRequest, handler):
        return await handler(self._filtered(request))

    def wrap_model_call(self, request: ModelRequest, handler):
        return handler(self._filtered(request))

    def _refusal(self, request) -> ToolMessage | None:
        call = request.tool_call
        mode = self._mode(request.runtime)
        if allows(mode, call.get("name")):
            return None
        return ToolMessage(
            content=failure_envelope(out_of_mode_error(call.get("name") or "this tool", mode)),
            tool_call_id=call["id"],
            name=call.get("name"),
            status="error",
        )

    async def awrap_tool_call(self, request, handler):
        return self._refusal(request) or await handler(request)

    def wrap_tool_call(self, request, handler):
        return self._refusal(request) or handler(request)
