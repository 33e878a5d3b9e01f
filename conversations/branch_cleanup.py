"""Removing what a server that died half-way left behind (docs/adr/0014, 0045).

A fork that fails removes what it wrote before its error reaches the caller
(conversations.branching). A fork whose server was killed between its
phases cannot: its thread stays hidden (pending) with maybe a checkpointer
thread. So can an archive import killed after it wrote the checkpointer
history and before its rows (conversations.archive): that history belongs
to no thread. The turn recovery of every server (conversations.turns.registry)
sweeps both once they are older than any fork or import could take
(settings.HAICO_ABANDONED_AFTER_SECONDS).
"""

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agent.seeding import delete_history, histories_written_at
from workspace import write_counts
from workspace.models import Thread

from .models import BranchLink

logger = logging.getLogger("haico.conversations.branching")

# A fork takes well under a second (bench/fork_thread.py): the half-made
# branch a retried Regenerate, Edit or "Continue from here" finds this old
# was left by a try that died, not one still under way.
HALF_MADE_AFTER = timedelta(minutes=1)


def abandoned_after() -> timedelta:
    """How old a pending branch or a history without its thread must be to be
    taken for left by a dead server (a fork or an import takes seconds)."""
    return timedelta(seconds=getattr(settings, "HAICO_ABANDONED_AFTER_SECONDS", 300))


def discard_branch(thread_id) -> None:
    """Remove a branch that was just made and never used, active or not."""
    BranchLink.objects.filter(thread_id=thread_id).update(status=BranchLink.Status.PENDING)
    discard(thread_id)


def discard(new_id) -> None:
    """Remove everything a failed fork wrote: the thread (its rows go with it)
    and its checkpointer thread. Best effort on the checkpointer: a failure
    there is logged, and the id is never reused."""
    try:
        with transaction.atomic():
            # Its row first, as a plan write locks it (docs/adr/0140).
            write_counts.lock_threads([new_id])
            # Only a thread that never became active: an active one is someone's branch.
            Thread.objects.filter(pk=new_id).exclude(branch_link__status=BranchLink.Status.ACTIVE).delete()
    except Exception:
        logger.exception("could not remove the rows of failed branch %s", new_id)
    try:
        delete_history(new_id)
    except Exception:
        logger.exception("could not remove the checkpointer thread of failed branch %s", new_id)


def discard_abandoned_branches(now=None) -> int:
    """Remove every branch still pending after abandoned_after(); how many."""
    cutoff = (now or timezone.now()) - abandoned_after()
    return _discard_pending(BranchLink.objects.filter(created_at__lt=cutoff))


def discard_half_made_branches(*, parent: Thread, after_turn: int, owner, now=None) -> int:
    """Remove the pending branches of `parent` at `after_turn` older than
    HALF_MADE_AFTER: what an earlier try of the same request left when its
    server died before the branch's turn began; how many."""
    cutoff = (now or timezone.now()) - HALF_MADE_AFTER
    links = BranchLink.objects.filter(
        parent=parent, branch_point_turn=after_turn, thread__owner_id=owner.pk, created_at__lt=cutoff
    )
    return _discard_pending(links)


def _discard_pending(links) -> int:
    pending = list(links.filter(status=BranchLink.Status.PENDING).values_list("thread_id", flat=True))
    for thread_id in pending:
        discard(thread_id)
    return len(pending)


def discard_orphaned_histories(now=None) -> int:
    """Remove every checkpointer thread that no thread row owns once its
    newest checkpoint is older than abandoned_after() (an import its server
    died in: the history is written before the rows); how many. Ids that
    are not a thread's (not UUIDs) are not this app's to judge."""
    cutoff = (now or timezone.now()) - abandoned_after()
    aged = {}
    for thread_id, written in histories_written_at().items():
        try:
            aged[thread_id] = uuid.UUID(thread_id)
        except ValueError:
            continue
        if written >= cutoff:
            del aged[thread_id]
    ids = list(aged.values())
    owned = set()
    for start in range(0, len(ids), 500):
        owned.update(str(pk) for pk in Thread.objects.filter(pk__in=ids[start : start + 500]).values_list("pk", flat=True))
    removed = 0
    for thread_id, pk in aged.items():
        if str(pk) in owned:
            continue
        try:
            delete_history(thread_id)
        except Exception:
            logger.exception("could not remove the orphaned checkpointer thread %s", thread_id)
            continue
        logger.warning("removed checkpointer thread %s: no thread owns it (an import or a fork that died)", thread_id)
        removed += 1
    return removed
