"""An approval card answered while the thread's owner is at the running-turns
limit (HAICO_MAX_RUNNING_TURNS, docs/adr/0017, 0084): going on after an
Approve is a turn running, so it is refused with the limit's message, the
card still waiting and answerable once a place is free; a Reject ends the
turn as a Stop does (no model call), and a Stop works as ever. Through the
real turn runner with the scripted model; on SQLite and in the PostgreSQL
pass."""

import pytest
from channels.db import database_sync_to_async

from conversations.errors import TooManyTurns
from conversations.models import Turn, TurnSlot
from conversations.services import thread_create
from conversations.sharing import thread_member_add
from conversations.turns import approval_claims, registry, slot
from tests.conversations.helpers import frame_containing
from tests.support.fake_model import Reply, tool_call
from workspace import selectors
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)

CARD = 'id="turn-1-approval"'


@database_sync_to_async
def _titles(thread):
    return [p.title for p in selectors.preferences_for(thread=thread)]


@database_sync_to_async
def _row(thread, index=1):
    return Turn.objects.get(thread=thread, index=index)


@database_sync_to_async
def _running_of(owner):
    return TurnSlot.objects.filter(thread__owner=owner, turn_index__isnull=False).count()


@database_sync_to_async
def _another_thread_running(owner, person):
    """Another thread of the owner's with a turn claimed (running, as far as the limit counts)."""
    other = thread_create(owner=owner, title="Budget notes")
    row, _ = slot.turn_claim(thread=other, user_message="note the budget", person=person)
    return other, row.index


@database_sync_to_async
def _finish(thread, index):
    slot.turn_finish(thread=thread, turn_index=index, answer="Noted.")


async def _card_waiting(thread, owner, script, sockets, *, sender=None):
    await database_sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": t, "kind": "soft"} for t in ("Formal tone", "Short paragraphs")], respect_lock=False
    )
    model = script(
        Reply(tool_calls=[tool_call("remove_preferences", "Dropping the rule you no longer want.", indices=[1])]),
        Reply(text="Done as you decided."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule", user=sender or owner)
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)
    return model, socket


async def test_the_owner_approving_at_the_limit_is_refused_the_card_waits_and_approves_once_a_place_is_free(
    owner, thread, script, sockets, settings
):
    settings.HAICO_MAX_RUNNING_TURNS = 1
    model, _ = await _card_waiting(thread, owner, script, sockets)
    other, index = await _another_thread_running(owner, owner)

    with pytest.raises(TooManyTurns) as refused:
        await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    assert str(refused.value) == (
        "You have 1 turns running in other threads, the most at once; wait for one to finish (or stop one), "
        "then answer again; the card still waits, and nothing was changed."
    )
    assert await _running_of(owner) == 1  # never two against a limit of one
    row = await _row(thread)
    assert row.status == Turn.Status.AWAITING and not row.approval.get("decision")
    assert await _titles(thread) == ["Formal tone", "Short paragraphs"] and len(model.requests) == 1

    # The other turn ends: the same card is approved and the turn goes on.
    await _finish(other, index)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk)
    row = await _row(thread)
    assert row.status == Turn.Status.COMPLETE and row.approval["decision"] == approval_claims.APPROVED
    assert await _titles(thread) == ["Short paragraphs"] and len(model.requests) == 2


async def test_another_user_approving_the_owners_card_at_the_owners_limit_is_told_whose_limit(
    owner, other_user, thread, script, sockets, settings
):
    settings.HAICO_MAX_RUNNING_TURNS = 1
    await database_sync_to_async(thread_member_add)(thread=thread, who=other_user.username, role="editor", by=owner)
    model, _ = await _card_waiting(thread, owner, script, sockets)
    await _another_thread_running(owner, owner)

    with pytest.raises(TooManyTurns) as refused:
        await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=other_user)
    assert str(refused.value).startswith("The owner of this thread (owner) has reached their limit of turns running at once")
    assert str(refused.value).endswith("then answer again; the card still waits, and nothing was changed.")
    assert (await _row(thread)).status == Turn.Status.AWAITING and len(model.requests) == 1


async def test_a_reject_at_the_limit_ends_the_turn_without_a_model_call_the_change_not_made(
    owner, thread, script, sockets, settings
):
    settings.HAICO_MAX_RUNNING_TURNS = 1
    model, _ = await _card_waiting(thread, owner, script, sockets)
    await _another_thread_running(owner, owner)

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.REJECTED, person=owner)
    await registry.wait_for_turn(thread.pk)
    row = await _row(thread)
    assert row.status == Turn.Status.STOPPED and row.approval["decision"] == approval_claims.STOPPED
    assert await _titles(thread) == ["Formal tone", "Short paragraphs"]
    assert len(model.requests) == 1  # the agent was not asked to go on past the limit
    assert await _running_of(owner) == 1


async def test_a_stop_at_the_limit_ends_the_waiting_turn(owner, thread, script, sockets, settings):
    settings.HAICO_MAX_RUNNING_TURNS = 1
    model, _ = await _card_waiting(thread, owner, script, sockets)
    await _another_thread_running(owner, owner)

    assert await registry.request_stop(thread=thread, person=owner)
    await registry.wait_for_turn(thread.pk)
    row = await _row(thread)
    assert row.status == Turn.Status.STOPPED and row.approval["decision"] == approval_claims.STOPPED
    assert await _titles(thread) == ["Formal tone", "Short paragraphs"] and len(model.requests) == 1
