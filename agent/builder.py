"""Assembles the agent for one turn (core seed §3, DESIGN §3).

Built fresh per turn and cheap to build; what persists across turns lives in
the checkpointer (messages) and the workspace tables. The system prompt is a
middleware, not part of the state: it is recomputed from the database before
every model call, so it never lands in the checkpointer (storing it would
copy the whole document into history on every turn) and it always shows the
latest workspace, including changes made earlier in the same turn.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.language_models import BaseChatModel

from agent.middleware import ModelTurnRetryMiddleware, TurnCallLimitMiddleware
from agent.model import get_chat_model
from agent.prompt import build_system_prompt
from conversations.models import Thread

DEFAULT_MODEL_CALL_LIMIT = 25


def workspace_prompt_middleware(thread: Thread):
    """The dynamic-prompt middleware: static instructions + the live <workspace> block."""

    @dynamic_prompt
    async def workspace_prompt(request: ModelRequest) -> str:
        return await sync_to_async(build_system_prompt)(thread)

    return workspace_prompt


def build_agent(
    *,
    thread: Thread,
    model: BaseChatModel | None = None,
    model_name: str | None = None,
    checkpointer=None,
    turn_index: int | None = None,
):
    """The compiled agent graph for `thread`.

    `model` is for tests and the bench; otherwise the model comes from
    settings (`model_name` must be one of `agent.model.available_models()`),
    raising `ModelNotConfigured` when none is set up. `turn_index` tags the
    activity-log entries of the model-call retry; when omitted, the index
    bound with `agent.tools.context.bind_turn_index` is used.
    """
    from agent.tools.registry import build_tools  # imports every tool module

    if model is None:
        model = get_chat_model(model_name)
    call_limit = getattr(settings, "HAICO_MODEL_CALL_LIMIT", DEFAULT_MODEL_CALL_LIMIT)
    middleware = []
    if call_limit:
        # Outermost, so a turn at its limit costs no prompt build: ends the
        # turn with a short message instead of looping forever when a model
        # keeps calling tools. Counted per turn.
        middleware.append(TurnCallLimitMiddleware(run_limit=call_limit))
    middleware += [
        # The prompt is computed once per model call and shared by the
        # retry's attempts (nothing can change the workspace in between).
        workspace_prompt_middleware(thread),
        ModelTurnRetryMiddleware(thread=thread, turn_index=turn_index),
    ]
    return create_agent(
        model=model,
        tools=build_tools(thread),
        middleware=middleware,
        checkpointer=checkpointer,
    )
