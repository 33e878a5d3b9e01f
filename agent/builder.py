"""The compiled agent, built once per model per process (docs/adr/0008).

What varies per turn (the thread, the turn index) travels in the run's
context (agent.context.AgentContext), so one compiled graph serves every
thread: building one costs milliseconds, and doing it for every turn was a
measurable share of a turn's fixed cost (docs/adr/0008).

The system prompt is a middleware, not part of the state: it is recomputed
from the database before every model call, so it never lands in the
checkpointer (storing it would copy the whole document into history on
every turn) and it always shows the latest workspace, including changes
made earlier in the same turn. A surface whose write count has not moved
since the previous call is taken from this process's copy of it
(selectors.workspace_reading_current, docs/adr/0093).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.conf import settings
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.language_models import BaseChatModel

from workspace import selectors
from workspace.db import usable_connections

from .answer_cap import AnswerCapMiddleware, answer_max_chars
from .approvals import ApprovalMiddleware
from .catalogue import ModelChoice
from .context import AgentContext
from .middleware import (
    CallOrderMiddleware,
    ModelTurnRetryMiddleware,
    RefusedCallsMiddleware,
    TurnCallLimitMiddleware,
)
from .model import available_models, get_chat_model
from .model_input import ModelInputMiddleware
from .modes import ModeMiddleware, call_limits
from .prompt import document_shown, document_version, system_prompt_for
from .text_calls import TextToolCallsMiddleware
from .tools.registry import build_tools
from .usage import TokenLimitMiddleware, UsageMiddleware

DEFAULT_CONTEXT_TOKENS = 60_000

# What the HTTP client and LangChain import lazily on the first model request
# (found by comparing sys.modules around one): ~30 ms of the first turn.
FIRST_CALL_IMPORTS = (
    "anyio._backends._asyncio",
    "anyio.streams.memory",
    "anyio.streams.stapled",
    "langchain_core.tracers.langchain",
    "langchain_core.tracers.run_collector",
    "langchain_core.tracers.stdout",
    "langchain_core.messages.block_translators.langchain_v0",
)


def _prompt_for(context: AgentContext) -> str:
    usable_connections()
    reading = selectors.workspace_reading_current(thread=context.thread)
    # The version this call is shown is what a tool it calls edits from.
    context.seen.document_version = document_version(reading)
    context.seen.document_length, context.seen.document_shown_chars = document_shown(reading)
    context.seen.plan_shown = tuple(step.pk for step in reading.todos)
    context.seen.plan_steps_shown = {step.pk: (step.text, step.done) for step in reading.todos}
    context.seen.objective_shown = reading.objective_text or ""
    context.seen.preferences_shown = tuple(preference.pk for preference in reading.preferences)
    context.seen.preference_values_shown = {p.pk: (p.title, p.subtitle, p.kind) for p in reading.preferences}
    return system_prompt_for(reading, context.selection, mode=context.mode, person_name=context.person_name)


@dynamic_prompt
async def workspace_prompt(request: ModelRequest) -> str:
    """Static instructions + the live <workspace> block of the run's thread,
    noting on the run's context the document version it shows."""
    return await sync_to_async(_prompt_for)(request.runtime.context)


def build_agent(*, model: BaseChatModel, checkpointer=None):
    """The compiled agent graph around `model`; run it with
    `context=AgentContext(thread=..., turn_index=..., mode=...)`."""
    limits = call_limits()
    # Outermost of all: a turn past the person's token limit ends before
    # anything else of its next model call is done (docs/adr/0064).
    middleware = [TokenLimitMiddleware()]
    if any(limits.values()):
        # Outermost, so a turn at its limit costs no prompt build: ends the
        # turn with a short message instead of looping forever when a model
        # keeps calling tools. Counted per turn, capped per mode (agent.modes).
        middleware.append(TurnCallLimitMiddleware(limits=limits))
    middleware += [
        # The outermost tool-call wrapper (the first with one): the calls of
        # one reply run one at a time, in the model's order (docs/adr/0130).
        CallOrderMiddleware(),
        # Only the mode's tools are shown, and only they run (docs/adr/0018).
        ModeMiddleware(),
        # The prompt is computed once per model call and shared by the
        # retry's attempts (nothing can change the workspace in between).
        workspace_prompt,
        # A valid history within the budget, counted with the prompt.
        ModelInputMiddleware(max_tokens=getattr(settings, "HAICO_CONTEXT_TOKENS", DEFAULT_CONTEXT_TOKENS)),
        ModelTurnRetryMiddleware(),
    ]
    if getattr(settings, "HAICO_TEXT_TOOL_CALLS", True):
        # Inside the retry, so it judges a reply with the calls its text
        # held (docs/adr/0020).
        middleware.append(TextToolCallsMiddleware())
    # Around the model: an answer past HAICO_ANSWER_MAX_CHARS is cut where
    # it is made, its stream stopped (docs/adr/0043).
    middleware.append(AnswerCapMiddleware(max_chars=answer_max_chars()))
    # Innermost: every attempt's tokens, as the provider reports them
    # (docs/adr/0063).
    middleware.append(UsageMiddleware())
    # Tool calls the retry refused get their error instead of running.
    middleware.append(RefusedCallsMiddleware())
    # Hard-to-undo calls wait for the person's approval (docs/adr/0017).
    middleware.append(ApprovalMiddleware())
    return create_agent(
        model=model,
        tools=build_tools(),
        middleware=middleware,
        checkpointer=checkpointer,
        context_schema=AgentContext,
    )


class AgentProvider:
    """The compiled agent for each model, built on first use.

    A model is a catalogue choice (agent.catalogue.ModelChoice), or the name
    of one of the environment's models (None: its default). One graph per
    provider, provider version and model name: a provider's changed URL or
    key gets a new graph on its next turn (docs/adr/0008, 0062). Keyed by the
    checkpointer too: a saver belongs to one event loop (agent.checkpointer),
    and a graph compiled with it must not outlive it. `model_factory(model)`
    makes the chat model (the real ChatOpenAI by default; tests and the
    bench pass a scripted one)."""

    def __init__(self, model_factory: Callable[[object], BaseChatModel] = get_chat_model):
        self.model_factory = model_factory
        self._graphs: dict[tuple, tuple[object, object]] = {}

    def warm(self, *, checkpointer) -> None:
        """Compile the environment's default model's agent ahead of the
        first turn, and load the modules its first model call would (nothing
        is sent anywhere). Nothing to compile when it has no model."""
        if not available_models():
            return
        self.graph(model=None, checkpointer=checkpointer)
        for name in FIRST_CALL_IMPORTS:
            importlib.import_module(name)

    @staticmethod
    def _model_key(model) -> tuple:
        if isinstance(model, ModelChoice):
            return model.cache_key
        if model is None:
            configured = available_models()
            model = configured[0] if configured else None
        return (None, "", model)

    def graph(self, *, model, checkpointer):
        """Raises agent.model.ModelNotConfigured / ValueError as get_chat_model does."""
        model_key = self._model_key(model)
        key = (model_key, id(checkpointer))
        cached = self._graphs.get(key)
        if cached is not None and cached[0] is checkpointer:
            return cached[1]
        # A different saver (a new event loop), or an older version of this
        # provider: those graphs are stale.
        provider, version, _name = model_key
        self._graphs = {
            k: v
            for k, v in self._graphs.items()
            if v[0] is checkpointer and not (provider is not None and k[0][0] == provider and k[0][1] != version)
        }
        graph = build_agent(model=self.model_factory(model), checkpointer=checkpointer)
        self._graphs[key] = (checkpointer, graph)
        return graph
