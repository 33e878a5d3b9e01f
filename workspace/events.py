"""Change events: every write service says what it changed, after commit.

A service calls `announce(Change(...))` inside its transaction. Nothing is
sent then: the changes of one transaction are gathered and handed to every
subscriber once it commits (`transaction.on_commit`), so a rolled-back
write announces nothing and a batch (a tool that ticks five steps) arrives
as one delivery. The live layer (conversations.live) subscribes and turns
changes into pushes to the thread's open tabs, so the person's edits, the
agent's tools, staff actions and any other client reach every tab the same
way (docs/adr/0007).

A change names rows, not their contents: subscribers read the committed
state, so a change that was announced and then undone by a rolled-back
savepoint only causes a harmless re-read. Code that wants the changes its
own call caused (an HTMX view rendering its response) wraps the call in
`collecting()`, which sees them at once, committed or not.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.db import transaction

logger = logging.getLogger("haico.workspace.events")

# "plan_history": rows added to the plan's history (workspace.models.PlanChange).
SURFACES = ("thread", "mode", "model", "objective", "preferences", "plan", "plan_history", "document", "artifacts")


@dataclass(frozen=True)
class Change:
    """Something about one surface of one thread may have changed.

    `ids`: the rows that were added, changed or removed (preferences, plan
    steps, entries of the plan's history, artifacts). `reordered`: other
    rows moved or were renumbered (plan structure)."""

    thread_id: uuid.UUID
    surface: str
    ids: frozenset = field(default_factory=frozenset)
    reordered: bool = False

    def __post_init__(self):
        if self.surface not in SURFACES:
            raise ValueError(f"Unknown surface {self.surface!r}")


def merge(changes: Iterable[Change]) -> list[Change]:
    """One change per (thread, surface), in first-seen order."""
    merged: dict[tuple, Change] = {}
    for change in changes:
        key = (change.thread_id, change.surface)
        seen = merged.get(key)
        if seen is None:
            merged[key] = change
        else:
            merged[key] = Change(
                thread_id=change.thread_id,
                surface=change.surface,
                ids=seen.ids | change.ids,
                reordered=seen.reordered or change.reordered,
            )
    return list(merged.values())


Subscriber = Callable[[list[Change]], None]
_subscribers: list[Subscriber] = []
_local = threading.local()


def subscribe(subscriber: Subscriber) -> None:
    """Call `subscriber(changes)` after every commit that announced changes."""
    if subscriber not in _subscribers:
        _subscribers.append(subscriber)


def _deliver(changes: list[Change]) -> None:
    changes = merge(changes)
    for subscriber in list(_subscribers):
        try:
            subscriber(changes)
        except Exception:
            # A push that fails must never undo or fail the write it reports.
            logger.exception("change subscriber %r failed", subscriber)


class _Batch:
    """The changes of one transaction, delivered on commit."""

    def __init__(self):
        self.changes: list[Change] = []

    def __call__(self):
        _deliver(self.changes)


def announce(change: Change) -> None:
    for collected in getattr(_local, "collectors", ()):
        collected.append(change)
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        _deliver([change])  # autocommit: the write is already committed
        return
    # Join the batch this transaction already registered, if any (it is
    # dropped with its savepoint on rollback, and a new one starts).
    for _savepoints, callback, _robust in connection.run_on_commit:
        if isinstance(callback, _Batch):
            callback.changes.append(change)
            return
    batch = _Batch()
    batch.changes.append(change)
    transaction.on_commit(batch, robust=True)


@contextmanager
def collecting() -> Iterator[list[Change]]:
    """The changes announced in this thread inside the block, as they are announced."""
    collected: list[Change] = []
    stack = getattr(_local, "collectors", None)
    if stack is None:
        stack = _local.collectors = []
    stack.append(collected)
    try:
        yield collected
    finally:
        stack.remove(collected)
