"""Which turn the running code belongs to, for the log (haico_site.logs).

The turn runner sets it for the whole task of one turn (conversations.turns.run);
everything that task does, and the threads and tasks it starts, inherit it
(contextvars travel with asyncio tasks and with asgiref's sync_to_async), so
every line a turn writes — the runner's, the agent's, a tool's — names its
thread and turn without passing them around.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class TurnIds:
    thread_id: str
    turn_index: int


current_turn: ContextVar[TurnIds | None] = ContextVar("haico_current_turn", default=None)
