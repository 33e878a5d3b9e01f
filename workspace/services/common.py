"""What the surface services share."""

from dataclasses import dataclass, field

from django.utils import timezone

from ..events import Change, announce
from ..models import Thread


@dataclass
class BatchResult:
    """Outcome of an index-addressed batch write (the agent's tools)."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def touch(thread_id) -> None:
    """Mark the thread active now (the thread list's order). By id, so a
    row's `thread_id` will do: `row.thread` would load the thread only to
    read its pk."""
    Thread.objects.filter(pk=thread_id).update(last_activity_at=timezone.now())


def changed(thread_id, surface: str, ids=(), *, reordered: bool = False) -> None:
    """Touch the thread and announce the change (after commit)."""
    touch(thread_id)
    announce(Change(thread_id=thread_id, surface=surface, ids=frozenset(ids), reordered=reordered))
