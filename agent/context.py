"""What one run of the agent is about: the thread and the turn.

The compiled agent is shared by every thread (agent.builder builds it once
per model per process); LangGraph hands this context to the middleware
(`request.runtime.context`) and to every tool (`runtime.context`) of the
run it was passed to. It is never checkpointed."""

from dataclasses import dataclass

from workspace.models import Thread


@dataclass(frozen=True)
class AgentContext:
    thread: Thread
    turn_index: int = 0
