"""What a server that died half-way leaves, and the cleanup (docs/adr/0045):
a branch made for a turn is shown only as its turn begins, a retried
Regenerate removes the half-made branch of the try that died, and a
checkpointer history no thread owns (an import that died) is removed once
it is old. Runs on SQLite, and on PostgreSQL with DATABASE_URL set."""

import uuid
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone
from langchain_core.messages import AIMessage, HumanMessage

from agent import seeding
from conversations import branching
from conversations.branch_cleanup import discard, discard_orphaned_histories
from conversations.errors import BranchVanished
from conversations.models import BranchLink, Turn
from conversations.turns import registry
from workspace.models import Thread
from workspace.selectors import threads_for_user

pytestmark = pytest.mark.django_db(transaction=True)


def _listed(owner):
    return {t.pk for t in threads_for_user(user=owner)}


def _made(source, owner, after_turn=1):
    """What a Regenerate of turn 2 has made when its server dies before the turn begins."""
    return branching.make_branch_for_turn(source=source, after_turn=after_turn, user=owner, reason="Regenerated turn 2")


async def test_a_branch_made_for_a_turn_is_hidden_until_that_turn_begins(owner, two_answered_turns):
    branch = await database_sync_to_async(_made)(two_answered_turns, owner)
    assert await database_sync_to_async(_listed)(owner) == {two_answered_turns.pk}
    link = await database_sync_to_async(BranchLink.objects.get)(thread=branch)
    assert link.status == BranchLink.Status.PENDING

    index = await registry.start_turn(thread=branch, user_message="second message", activate_branch=True)
    await registry.wait_for_turn(branch.pk)
    assert index == 2
    assert await database_sync_to_async(_listed)(owner) == {two_answered_turns.pk, branch.pk}
    link = await database_sync_to_async(BranchLink.objects.get)(thread=branch)
    assert link.status == BranchLink.Status.ACTIVE
    row = await database_sync_to_async(Turn.objects.get)(thread=branch, index=2)
    assert (row.user_message, row.status) == ("second message", Turn.Status.COMPLETE)


async def test_a_retried_regenerate_removes_the_half_made_branch_of_the_try_that_died(owner, two_answered_turns):
    dead_try = await database_sync_to_async(_made)(two_answered_turns, owner)
    assert await database_sync_to_async(seeding.has_history)(dead_try.pk)
    # A minute on, longer than any fork takes: that try is not still under way.
    await database_sync_to_async(BranchLink.objects.filter(thread=dead_try).update)(
        created_at=timezone.now() - timedelta(minutes=2)
    )

    branch, _note = await database_sync_to_async(branching.rerun_in_branch)(source=two_answered_turns, turn_index=2, user=owner)
    await registry.wait_for_turn(branch.pk)

    assert await database_sync_to_async(_listed)(owner) == {two_answered_turns.pk, branch.pk}
    assert not await database_sync_to_async(Thread.objects.filter(pk=dead_try.pk).exists)()
    assert not await database_sync_to_async(seeding.has_history)(dead_try.pk)
    links = await database_sync_to_async(lambda: list(BranchLink.objects.values_list("thread_id", "status")))()
    assert links == [(branch.pk, BranchLink.Status.ACTIVE)]


async def test_a_half_made_branch_of_a_try_still_under_way_is_left_alone(owner, two_answered_turns):
    under_way = await database_sync_to_async(_made)(two_answered_turns, owner)
    branch, _note = await database_sync_to_async(branching.rerun_in_branch)(source=two_answered_turns, turn_index=2, user=owner)
    await registry.wait_for_turn(branch.pk)
    assert await database_sync_to_async(Thread.objects.filter(pk=under_way.pk).exists)()


async def test_a_branch_swept_before_its_turn_began_starts_nothing(owner, two_answered_turns):
    branch = await database_sync_to_async(_made)(two_answered_turns, owner)
    await database_sync_to_async(discard)(branch.pk)
    with pytest.raises(BranchVanished):
        await registry.start_turn(thread=branch, user_message="second message", activate_branch=True)
    assert not await database_sync_to_async(Turn.objects.filter(thread_id=branch.pk).exists)()
    assert await database_sync_to_async(_listed)(owner) == {two_answered_turns.pk}


def _seed(thread_id):
    seeding.seed_history(thread_id, [HumanMessage(content="imported"), AIMessage(content="yes", id=f"m-{uuid.uuid4()}")])


async def test_a_history_no_thread_owns_is_removed_once_it_is_old(owner, two_answered_turns):
    orphan = str(uuid.uuid4())  # what an import killed after writing the history leaves
    await database_sync_to_async(_seed)(orphan)
    not_a_thread = "not-a-thread-id"
    await database_sync_to_async(_seed)(not_a_thread)
    now = timezone.now()

    written = await database_sync_to_async(seeding.histories_written_at)()
    assert {orphan, not_a_thread, str(two_answered_turns.pk)} <= set(written)
    assert abs(written[orphan] - now) < timedelta(minutes=1)

    # Young: an import may still be writing its rows. (Earlier tests' threads,
    # whose rows are gone, may be swept here: their histories are old.)
    await database_sync_to_async(discard_orphaned_histories)(now=now + timedelta(minutes=4))
    assert await database_sync_to_async(seeding.has_history)(orphan)

    assert await database_sync_to_async(discard_orphaned_histories)(now=now + timedelta(minutes=6)) >= 1
    assert not await database_sync_to_async(seeding.has_history)(orphan)
    # Every thread's own history stays, and ids that are not a thread's are not ours to judge.
    assert await database_sync_to_async(seeding.has_history)(two_answered_turns.pk)
    assert await database_sync_to_async(seeding.has_history)(not_a_thread)
    await database_sync_to_async(seeding.delete_history)(not_a_thread)


async def test_a_soft_deleted_threads_history_is_not_an_orphan(owner, two_answered_turns):
    from conversations.services import thread_soft_delete

    await database_sync_to_async(thread_soft_delete)(thread=two_answered_turns)
    await database_sync_to_async(discard_orphaned_histories)(now=timezone.now() + timedelta(days=1))
    assert await database_sync_to_async(seeding.has_history)(two_answered_turns.pk)
