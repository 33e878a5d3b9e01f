"""Removing branches that never became active (docs/adr/0014).

A fork that fails removes what it wrote before its error reaches the caller
(conversations.branching). A fork whose server was killed between its
phases cannot: its thread stays hidden (pending) with maybe a checkpointer
thread. The turn recovery of every server (conversations.turns.registry)
sweeps those once they are older than any fork could take.
"""

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from agent.seeding import delete_history
from workspace.models import Thread

from .models import BranchLink

logger = logging.getLogger("haico.conversations.branching")

# A fork takes well under a second (bench/fork_thread.py); a pending branch
# this old was left by a server that died in the middle of one.
PENDING_BRANCH_EXPIRY = timedelta(minutes=5)


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
            # Only a thread that never became active: an active one is someone's branch.
            Thread.objects.filter(pk=new_id).exclude(branch_link__status=BranchLink.Status.ACTIVE).delete()
    except Exception:
        logger.exception("could not remove the rows of failed branch %s", new_id)
    try:
        delete_history(new_id)
    except Exception:
        logger.exception("could not remove the checkpointer thread of failed branch %s", new_id)


def discard_abandoned_branches(now=None) -> int:
    """Remove every branch still pending after PENDING_BRANCH_EXPIRY; how many."""
    cutoff = (now or timezone.now()) - PENDING_BRANCH_EXPIRY
    abandoned = list(
        BranchLink.objects.filter(status=BranchLink.Status.PENDING, created_at__lt=cutoff).values_list("thread_id", flat=True)
    )
    for thread_id in abandoned:
        discard(thread_id)
    return len(abandoned)
