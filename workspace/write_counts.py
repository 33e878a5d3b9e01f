"""A thread's write counts (Thread.WRITE_COUNTS), read and raised in plain SQL.

Every agent step reads them twice (its patches after the write, the next
prompt) and raises them once: through the ORM each statement costs ~0.13 ms
of Python to build for ~0.01 ms in the database (docs/adr/0133). The
statements are built from the models' metadata, so a renamed column or
table follows.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, cast

from django.db import connection, models
from django.utils import timezone

from .models import Objective, Thread


def _column(model, name: str) -> str:
    field = cast(models.Field, model._meta.get_field(name))
    return connection.ops.quote_name(cast(str, field.column))


def _table(model) -> str:
    return connection.ops.quote_name(cast(str, model._meta.db_table))


@functools.cache
def _select(vendor: str, with_objective: bool) -> str:
    thread, pk = _table(Thread), _column(Thread, "id")
    counts = ", ".join(f"{thread}.{_column(Thread, name)}" for name in Thread.WRITE_COUNTS.values())
    if not with_objective:
        return f"SELECT {counts} FROM {thread} WHERE {thread}.{pk} = %s"
    objective = _table(Objective)
    return (
        f"SELECT {counts}, {objective}.{_column(Objective, 'text')} FROM {thread} "
        f"LEFT OUTER JOIN {objective} ON {objective}.{_column(Objective, 'thread')} = {thread}.{pk} "
        f"WHERE {thread}.{pk} = %s"
    )


@functools.cache
def _update(vendor: str, surfaces: tuple[str, ...], returning: bool) -> str:
    raised = "".join(f", {column} = {column} + 1" for column in (_column(Thread, Thread.WRITE_COUNTS[s]) for s in surfaces))
    update = f"UPDATE {_table(Thread)} SET {_column(Thread, 'last_activity_at')} = %s{raised} WHERE {_column(Thread, 'id')} = %s"
    if not returning:
        return update
    counts = ", ".join(_column(Thread, name) for name in Thread.WRITE_COUNTS.values())
    return f"{update} RETURNING {_column(Thread, 'turn_index')}, {counts}"


@functools.cache
def _lock(vendor: str) -> str:
    thread, pk = _table(Thread), _column(Thread, "id")
    return f"SELECT {pk} FROM {thread} WHERE {pk} = %s FOR UPDATE"


def lock_thread(thread_id) -> None:
    """Lock the thread's row until the caller's transaction ends, where the
    database locks rows (PostgreSQL; SQLite's writes are one at a time
    already: BEGIN IMMEDIATE). A plan write takes it before it reads the
    plan: every plan write raises the counts on this row in its transaction,
    so a plan read after the lock sees every plan write counted before its
    own, which a kept plan relies on (docs/adr/0140). Without it a read
    that waited on another write's step locks ran on a snapshot taken
    before that write committed, and missed the step it added."""
    if not connection.features.has_select_for_update:
        return
    with connection.cursor() as cursor:
        cursor.execute(_lock(connection.vendor), [_thread_key(thread_id)])


@functools.cache
def _lock_many(vendor: str, count: int) -> str:
    thread, pk = _table(Thread), _column(Thread, "id")
    keys = ", ".join(["%s"] * count)
    return f"SELECT {pk} FROM {thread} WHERE {pk} IN ({keys}) ORDER BY {pk} FOR UPDATE"


def lock_threads(thread_ids) -> None:
    """Lock the rows of the threads about to be deleted, in the caller's
    transaction, before anything of theirs is deleted. A hard delete
    removes a thread's plan rows before the thread's row: a plan write
    locks the thread's row first (`lock_thread`), so a delete that took the
    plan rows first and then waited on the thread's row deadlocked with
    it, and one of the two was killed (docs/adr/0140). In the order of their
    ids, so two deletes of the same threads wait on each other rather than
    deadlock."""
    if not connection.features.has_select_for_update:
        return
    keys = sorted({_thread_key(thread_id) for thread_id in thread_ids})
    with connection.cursor() as cursor:
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            cursor.execute(_lock_many(connection.vendor, len(batch)), batch)


def _thread_key(thread_id):
    return Thread._meta.pk.get_db_prep_value(thread_id, connection)


def read(thread_id, *, with_objective: bool = False) -> tuple:
    """The thread's counts in Thread.WRITE_COUNTS' order, then its
    objective's text (None without one) if `with_objective`. Raises
    Thread.DoesNotExist, as the ORM's `get` does."""
    with connection.cursor() as cursor:
        cursor.execute(_select(connection.vendor, with_objective), [_thread_key(thread_id)])
        row = cursor.fetchone()
    if row is None:
        raise Thread.DoesNotExist(f"Thread {thread_id} does not exist.")
    return row


class Counted(NamedTuple):
    """The thread as a write's counting statement left it."""

    turn_index: int
    counts: tuple[int, ...]  # in Thread.WRITE_COUNTS' order


def raise_counts(thread_id, surfaces) -> Counted | None:
    """Mark the thread active now and count one write of each of `surfaces`
    that has a count, in the caller's transaction. Returns the thread's turn
    counter and write counts as the same statement left them (None where
    the database cannot return them, or the thread is gone): the history
    row the caller writes next takes the counter from here instead of
    reading it again, and a plan write its count (docs/adr/0140)."""
    counted = tuple(surface for surface in Thread.WRITE_COUNTS if surface in surfaces)
    now = Thread._meta.get_field("last_activity_at").get_db_prep_value(timezone.now(), connection)
    returning = connection.features.can_return_columns_from_insert
    with connection.cursor() as cursor:
        cursor.execute(_update(connection.vendor, counted, returning), [now, _thread_key(thread_id)])
        row = cursor.fetchone() if returning else None
    return None if row is None else Counted(row[0], tuple(row[1:]))
