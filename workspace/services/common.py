"""What the surface services share."""

from dataclasses import dataclass, field

from django.db.models import F, Subquery

from .. import write_counts
from ..events import Change, announce
from ..models import Thread


@dataclass
class BatchResult:
    """Outcome of an index-addressed batch write (the agent's tools)."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # The ids of the rows the batch added, in order, with what they hold.
    added: dict[int, tuple] = field(default_factory=dict)
    # The ids of the rows the batch changed, with what they hold now: the
    # caller's own edit, which its next edit of the row must not take for
    # someone else's.
    updated: dict[int, tuple] = field(default_factory=dict)


def touch(thread_id, *surfaces: str) -> write_counts.Counted | None:
    """Mark the thread active now (the thread list's order), and count a
    write of each of `surfaces` the prompt reads (Thread.WRITE_COUNTS), in
    the caller's transaction. By id, so a row's `thread_id` will do:
    `row.thread` would load the thread only to read its pk. Returns the
    thread's turn counter and write counts as this write left them
    (write_counts.raise_counts; None if they could not be had)."""
    return write_counts.raise_counts(thread_id, surfaces)


def changed(thread_id, surface: str, ids=(), *, reordered: bool = False) -> write_counts.Counted | None:
    """Touch the thread, count the write, and announce the change (after
    commit). Returns the thread's counter and counts, as `touch`."""
    counted = touch(thread_id, surface)
    announce(Change(thread_id=thread_id, surface=surface, ids=frozenset(ids), reordered=reordered))
    return counted


def rewritten(thread_id) -> None:
    """Count a write of every surface the prompt reads: a workspace written
    whole (a branch's copy, an archive's restore), not announced piece by
    piece. The thread's activity time is left as it is (an import keeps its own)."""
    Thread.objects.filter(pk=thread_id).update(**{count: F(count) + 1 for count in Thread.WRITE_COUNTS.values()})


def turn_counter(thread_id, counted: write_counts.Counted | None):
    """The value of a history row's `turn_index`: the thread's counter as
    the caller's own write counting statement returned it (`changed`), or,
    where it could not, read inside the row's INSERT (docs/adr/0140)."""
    if counted is not None:
        return counted.turn_index
    return Subquery(Thread.objects.filter(pk=thread_id).order_by().values("turn_index")[:1])
