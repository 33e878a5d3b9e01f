"""What staff change while people's turns run: a provider deleted, an
account deleted or deactivated, and the database away for a moment.

A model call is paid for whatever happens meanwhile, so its usage is
counted once (never lost, never twice); one turn's trouble never keeps
another person's turn from hearing a Stop or refreshing its claim; and the
agent writes nothing more for an account that can no longer sign in, not
even after an approval its card waited for (docs/adr/0129)."""

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.db import OperationalError, connection
from django.test import Client
from langchain_core.messages import ToolMessage

from agent.models import CatalogueModel, Provider
from conversations import services, sharing
from conversations import usage as model_usage
from conversations.models import ActivityLogEntry, ModelUsage, Turn
from conversations.services import thread_create
from conversations.turns import approval_claims, registry, slot
from tests.conversations.helpers import frame_containing
from tests.support.fake_model import Reply, tool_call
from workspace import selectors
from workspace.errors import InvalidInput
from workspace.models import Thread
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)

LONG_TEXT = "".join(f"w{i} " for i in range(600))


@pytest.fixture
def model_server(model_server, settings):
    """The local model server (tests.support.model_server), no retries, no token limits,
    and time for a model call on a loaded machine (the shared one second ended
    calls before their first token in a CI rehearsal; no test here is about a timeout)."""
    settings.HAICO_MODEL_MAX_RETRIES = 0
    settings.HAICO_MODEL_TIMEOUT = 30.0
    settings.HAICO_DAILY_TOKEN_LIMIT = settings.HAICO_MONTHLY_TOKEN_LIMIT = 0
    return model_server


def _lab_catalogue(base_url):
    provider = Provider.objects.create(name="Lab", base_url=base_url, api_key="sk-lab-000000001")
    return provider, CatalogueModel.objects.create(provider=provider, name="scripted", label="Lab scripted")


async def _until_streaming(thread):
    for _ in range(200):
        await asyncio.sleep(0.05)
        running = registry._running.get(thread.pk)
        if running is not None and running.turn.draft:
            return
    raise AssertionError("the answer never began streaming")


@sync_to_async
def _usage_of(user):
    return sorted(
        ModelUsage.objects.filter(user=user).values_list("input_tokens", "output_tokens", "provider_name", "provider_id")
    )


@sync_to_async
def _status(thread):
    return Turn.objects.get(thread=thread, index=1).status


async def test_a_provider_deleted_while_its_turn_runs_still_counts_the_tokens_spent(thread, owner, model_server):
    provider, model = await sync_to_async(_lab_catalogue)(model_server.base_url)
    model_server.script([Reply(text=LONG_TEXT[:400], token_delay=0.03, usage={"prompt_tokens": 900, "completion_tokens": 60})])
    await registry.start_turn(thread=thread, user_message="Write", model_name=f"catalogue:{model.pk}")
    await _until_streaming(thread)
    await sync_to_async(Provider.objects.filter(pk=provider.pk).delete)()
    await registry.wait_for_turn(thread.pk, timeout=20)

    assert await _status(thread) == Turn.Status.COMPLETE
    # Counted, under the provider's name; the link to the deleted row emptied.
    assert await _usage_of(owner) == [(900, 60, "Lab", None)]


def _two_turns_script(model_server):
    """The first thread's turn sets its objective, then writes at length;
    the second's writes at length."""

    def reply(body):
        sent = str(body["messages"])
        if "Write A" in sent and "Ship A" not in sent:
            return Reply(tool_calls=[tool_call("set_objective", "Goal.", text="Ship A")], token_delay=0.05)
        return Reply(text=LONG_TEXT, token_delay=0.03)

    model_server.script([reply] * 4)


@pytest.fixture
def usage_of_the_first_thread_cannot_be_stored(monkeypatch):
    """Every batch holding a row of the thread titled "A" fails to store."""
    real = model_usage.usage_record
    first = {}

    def record(*, rows):
        if any(row["thread_id"] == first.get("id") for row in rows):
            raise OperationalError("a row the database refuses")
        return real(rows=rows)

    monkeypatch.setattr(model_usage, "usage_record", record)
    return first


async def _turns_of_two_people(owner, other_user, first_holder):
    first = await sync_to_async(thread_create)(owner=owner, title="A")
    second = await sync_to_async(thread_create)(owner=other_user, title="B")
    first_holder["id"] = first.pk
    await registry.start_turn(thread=first, user_message="Write A", user=owner)
    await registry.start_turn(thread=second, user_message="Write B", user=other_user)
    await _until_streaming(second)
    # The first turn's objective call has reported its usage, and its second call streams.
    await _until_streaming(first)
    return first, second


async def test_a_batch_of_usage_that_cannot_be_stored_does_not_keep_another_turn_from_hearing_a_stop(
    owner, other_user, model_server, usage_of_the_first_thread_cannot_be_stored
):
    _two_turns_script(model_server)
    first, second = await _turns_of_two_people(owner, other_user, usage_of_the_first_thread_cannot_be_stored)
    # Another server asks the second turn to stop: only the database flag reaches this process.
    await sync_to_async(slot.turn_request_cancel)(thread=await sync_to_async(Thread.objects.get)(pk=second.pk))
    await registry.wait_for_turn(second.pk, timeout=5)
    assert await _status(second) == Turn.Status.STOPPED
    await registry.request_stop(thread=first)
    await registry.wait_for_turn(first.pk, timeout=10)


async def test_a_batch_of_usage_that_cannot_be_stored_does_not_get_another_live_turn_released_as_dead(
    owner, other_user, model_server, monkeypatch, usage_of_the_first_thread_cannot_be_stored
):
    # A claim refreshed every 0.5 s, stale after 2 s.
    monkeypatch.setattr(slot, "TURN_KEEPALIVE", timedelta(seconds=0.5))
    monkeypatch.setattr(slot, "STALE_TURN_AFTER", timedelta(seconds=2))
    _two_turns_script(model_server)
    first, second = await _turns_of_two_people(owner, other_user, usage_of_the_first_thread_cannot_be_stored)
    await asyncio.sleep(3)
    # Another server's recovery round finds every claim alive.
    assert await sync_to_async(slot.turns_release_stale)() == 0
    assert not registry._running[second.pk].task.done()
    assert await _status(second) == Turn.Status.RUNNING
    for thread in (first, second):
        await registry.request_stop(thread=thread)
        await registry.wait_for_turn(thread.pk, timeout=10)


async def test_a_database_blip_after_the_usage_is_stored_does_not_count_it_twice(thread, owner, model_server, monkeypatch):
    monkeypatch.setattr(registry, "CANCEL_POLL_SECONDS", 0.0)  # the flags read every round, so the blip meets the batch
    stored = {"just": False, "blips": 0}
    real_record, real_poll = model_usage.usage_record, slot.cancel_requested_among

    def record(*, rows):
        count = real_record(rows=rows)
        stored["just"] = stored["just"] or bool(count)
        return count

    def poll(keys):
        if stored["just"] and not stored["blips"]:
            stored["blips"] += 1
            raise OperationalError("database is locked")
        stored["just"] = False
        return real_poll(keys)

    monkeypatch.setattr(model_usage, "usage_record", record)
    monkeypatch.setattr(slot, "cancel_requested_among", poll)
    model_server.script(
        [
            Reply(
                tool_calls=[tool_call("set_objective", "Goal.", text="Ship it")],
                usage={"prompt_tokens": 700, "completion_tokens": 150},
            ),
            Reply(text=LONG_TEXT[:480], token_delay=0.03, usage={"prompt_tokens": 800, "completion_tokens": 80}),
        ]
    )
    await registry.start_turn(thread=thread, user_message="Set the goal")
    await registry.wait_for_turn(thread.pk, timeout=20)
    assert stored["blips"] == 1  # right after a batch was stored
    assert [row[:2] for row in await _usage_of(owner)] == [(700, 150), (800, 80)]


def _staff_deletes(user_id, django_user_model):
    staff = django_user_model.objects.create_superuser(username="staff", password="pw-123456789", email="s@example.com")
    client = Client()
    client.force_login(staff)
    response = client.post(f"/admin/auth/user/{user_id}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not django_user_model.objects.filter(pk=user_id).exists()


def _staff_deactivates(user_id, django_user_model):
    user = django_user_model.objects.get(pk=user_id)
    user.is_active = False
    user.save()


@pytest.mark.parametrize("end_account", [_staff_deletes, _staff_deactivates], ids=["deleted", "deactivated"])
async def test_an_editor_whose_account_ends_while_their_turn_runs_gets_it_stopped_and_the_owner_keeps_everything(
    owner, model_server, django_user_model, end_account
):
    editor = await sync_to_async(django_user_model.objects.create_user)(username="ed", password="pw-123456789")
    thread = await sync_to_async(thread_create)(owner=owner, title="Shared")
    await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    await sync_to_async(selectors.objective_text_for)(thread=thread)
    # Three seconds of text, then a write in the editor's name.
    model_server.script(
        [
            Reply(
                text=LONG_TEXT[:600], token_delay=0.03, tool_calls=[tool_call("set_objective", "Goal.", text="Written for ed")]
            ),
            Reply(text="Done."),
        ]
    )
    await registry.start_turn(thread=thread, user_message="Set the goal", user=editor)
    await _until_streaming(thread)
    await sync_to_async(end_account)(editor.pk, django_user_model)
    await registry.wait_for_turn(thread.pk, timeout=20)

    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.status == Turn.Status.STOPPED
    assert turn.user_message == "Set the goal" and turn.person_username == "ed"
    assert turn.answer.startswith("w0 w1")  # what streamed before the stop stays
    assert await sync_to_async(selectors.objective_text_for)(thread=thread) in (None, "")
    errors = await sync_to_async(lambda: list(ActivityLogEntry.objects.filter(thread=thread, level="error")))()
    assert errors == []


# --- an ended account's turn waiting for an approval (docs/adr/0129) ---------------------

CARD = 'id="turn-1-approval"'
ENDED = "Stopped: ed&#x27;s account was closed while this change waited for approval; it was not made."


def _staff_deactivates_in_the_admin(user_id, django_user_model):
    staff = django_user_model.objects.create_superuser(username="staff", password="pw-123456789", email="s@example.com")
    user = django_user_model.objects.get(pk=user_id)
    client = Client()
    client.force_login(staff)
    joined = {"date_joined_0": f"{user.date_joined:%Y-%m-%d}", "date_joined_1": f"{user.date_joined:%H:%M:%S}"}
    response = client.post(
        f"/admin/auth/user/{user_id}/change/",
        {
            "username": user.username,
            **joined,
            **{f"initial-{name}": value for name, value in joined.items()},
            "account-TOTAL_FORMS": "0",
            "account-INITIAL_FORMS": "0",
            "_save": "Save",
        },
    )
    assert response.status_code == 302 and not django_user_model.objects.get(pk=user_id).is_active


async def _editors_card_waits(owner, thread, script, sockets, django_user_model):
    """Ed, an editor, asked to drop a preference; the card waits on the owner's page."""
    editor = await sync_to_async(django_user_model.objects.create_user)(username="ed", password="pw-123456789")
    await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    await sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": "Formal tone", "kind": "soft"}, {"title": "Short", "kind": "soft"}], respect_lock=False
    )
    script(Reply(tool_calls=[tool_call("remove_preferences", "Dropping it.", indices=[1])]), Reply(text="Done."))
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule", user=editor)
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)
    return editor, socket


@pytest.mark.parametrize("end_account", [_staff_deletes, _staff_deactivates_in_the_admin], ids=["deleted", "deactivated"])
async def test_an_editor_whose_account_ends_while_their_card_waits_gets_the_turn_stopped_and_the_owner_sees_it_ended(
    owner, thread, script, sockets, django_user_model, client, end_account
):
    """The card went on waiting, and the owner's Approve resumed the turn
    in the name of someone who could no longer sign in (or of no one)."""
    editor, socket = await _editors_card_waits(owner, thread, script, sockets, django_user_model)

    await sync_to_async(end_account)(editor.pk, django_user_model)

    # The owner's open page: the card answered, the turn ended, no Approve left.
    frames = await frame_containing(socket, ENDED)
    assert any('approval-title">Stopped: this change was not made</p>' in f for f in frames)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert (turn.status, turn.approval["decision"], turn.person_username) == (Turn.Status.STOPPED, "stopped", "ed")
    with pytest.raises(InvalidInput):
        await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    assert await sync_to_async(lambda: [p.title for p in selectors.preferences_for(thread=thread)])() == ["Formal tone", "Short"]
    await sync_to_async(client.force_login)(owner)
    page = (await sync_to_async(client.get)(f"/threads/{thread.pk}/workspace/")).content.decode()
    assert ENDED in page and ">Approve</button>" not in page
    log = await sync_to_async(lambda: list(ActivityLogEntry.objects.filter(thread=thread).values_list("level", "message")))()
    assert ("info", "Not made (ed's account was closed): Remove 1 preference.") in log
    assert not [message for level, message in log if level == "error"]

    # The owner's next message runs as usual.
    script(Reply(text="Fine."))
    await registry.start_turn(thread=thread, user_message="carry on", user=owner)
    await registry.wait_for_turn(thread.pk)
    second = await sync_to_async(Turn.objects.get)(thread=thread, index=2)
    assert (second.status, second.answer) == (Turn.Status.COMPLETE, "Fine.")
    # The model was sent the card's call answered with why it was not made, as after a Stop.
    [result] = [m for m in registry.agents.model.requests[-1] if isinstance(m, ToolMessage)]
    assert "the account of the person who asked was closed); nothing was changed." in result.content
    assert await sync_to_async(lambda: [p.title for p in selectors.preferences_for(thread=thread)])() == ["Formal tone", "Short"]


async def test_an_approve_claimed_after_the_senders_account_was_deactivated_stops_the_turn(
    owner, thread, script, sockets, django_user_model
):
    """Should the card still wait when the account ends (an answer racing the
    deactivation), the answer goes on only as a Stop."""
    editor, _socket = await _editors_card_waits(owner, thread, script, sockets, django_user_model)
    await sync_to_async(django_user_model.objects.filter(pk=editor.pk).update)(is_active=False)  # no signal: the race

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk)

    assert (await sync_to_async(Turn.objects.get)(thread=thread, index=1)).status == Turn.Status.STOPPED
    assert await sync_to_async(lambda: [p.title for p in selectors.preferences_for(thread=thread)])() == ["Formal tone", "Short"]


# --- the account ends (or a Stop is asked) while the turn streams, and the card comes just after ---

SLOW_TEXT = " ".join(f"w{i}" for i in range(30))


def _titles(thread):
    return sync_to_async(lambda: [p.title for p in selectors.preferences_for(thread=thread)])()


async def _editors_turn_streams_towards_a_card(owner, thread, script, sockets, django_user_model):
    """Ed, an editor, asked to drop a preference; the turn streams a few words
    first (well under the second a Stop takes to be heard from the database)."""
    editor = await sync_to_async(django_user_model.objects.create_user)(username="ed", password="pw-123456789")
    await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    await sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": "Formal tone", "kind": "soft"}, {"title": "Short", "kind": "soft"}], respect_lock=False
    )
    script(
        Reply(text=SLOW_TEXT, token_delay=0.005, tool_calls=[tool_call("remove_preferences", "Dropping it.", indices=[1])]),
        Reply(text="Done."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule", user=editor)
    for _ in range(200):
        await asyncio.sleep(0.01)
        running = registry._running.get(thread.pk)
        if running is not None and running.turn.draft:
            break
    return editor, socket


def _closing_after(end_account):
    """`end_account` in a thread of its own (staff's request on another worker), its connection closed after."""

    def end(*args):
        try:
            end_account(*args)
        finally:
            connection.close()

    return end


async def _owners_next_turn_is_told(thread, owner, script) -> str:
    """The owner's next message runs; what the model was told of the card's call."""
    script(Reply(text="Fine."))
    await registry.start_turn(thread=thread, user_message="carry on", user=owner)
    await registry.wait_for_turn(thread.pk)
    second = await sync_to_async(Turn.objects.get)(thread=thread, index=2)
    assert (second.status, second.answer) == (Turn.Status.COMPLETE, "Fine.")
    [result] = [m for m in registry.agents.model.requests[-1] if isinstance(m, ToolMessage)]
    return result.content


@pytest.mark.parametrize("end_account", [_staff_deletes, _staff_deactivates_in_the_admin], ids=["deleted", "deactivated"])
async def test_a_card_reached_just_after_the_editors_account_ended_is_stopped_and_the_owner_sees_it_ended(
    owner, thread, script, sockets, django_user_model, end_account
):
    """The turn reached its card before it heard the Stop its account's end
    asked for: the card waited on the owner's page for someone who could no
    longer sign in, and (deleted) its activity entry failed."""
    editor, socket = await _editors_turn_streams_towards_a_card(owner, thread, script, sockets, django_user_model)
    await sync_to_async(_closing_after(end_account), thread_sensitive=False)(editor.pk, django_user_model)
    await registry.wait_for_turn(thread.pk)

    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert (turn.status, turn.approval.get("decision"), turn.person_username) == (Turn.Status.STOPPED, "stopped", "ed")
    assert turn.notice == ENDED.replace("&#x27;", "'")
    frames = await frame_containing(socket, ENDED)
    assert any('approval-title">Stopped: this change was not made</p>' in f for f in frames)
    with pytest.raises(InvalidInput):
        await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    assert await _titles(thread) == ["Formal tone", "Short"]
    log = await sync_to_async(lambda: list(ActivityLogEntry.objects.filter(thread=thread).values_list("level", "message")))()
    assert ("info", "Not made (ed's account was closed): Remove 1 preference.") in log
    assert not [message for level, message in log if level == "error"]
    told = await _owners_next_turn_is_told(thread, owner, script)
    assert "the account of the person who asked was closed); nothing was changed." in told
    assert await _titles(thread) == ["Formal tone", "Short"]


async def test_a_stop_asked_just_before_the_card_came_ends_the_turn_as_stop_on_the_card_does(
    owner, thread, script, sockets, django_user_model
):
    """A Stop pressed in another server's tab reaches the turn within a
    second; the card came first, and the Stop was forgotten: the card waited."""
    _editor, socket = await _editors_turn_streams_towards_a_card(owner, thread, script, sockets, django_user_model)
    assert await database_sync_to_async(slot.turn_request_cancel)(thread=thread)  # the flag, as from another server
    await registry.wait_for_turn(thread.pk)

    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert (turn.status, turn.approval.get("decision"), turn.notice) == (Turn.Status.STOPPED, "stopped", "")
    await frame_containing(socket, 'approval-title">Stopped: this change was not made</p>')
    assert await _titles(thread) == ["Formal tone", "Short"]
    log = await sync_to_async(lambda: list(ActivityLogEntry.objects.filter(thread=thread).values_list("level", "message")))()
    assert ("info", "Rejected (Stop): Remove 1 preference.") in log
    told = await _owners_next_turn_is_told(thread, owner, script)
    assert told == "Not done: the person pressed Stop instead of approving this change; nothing was changed."


async def test_an_approve_of_a_card_whose_sender_was_deleted_stops_the_turn(owner, thread, script, sockets, django_user_model):
    """Should the card still wait when the account is deleted (the card
    committed while the deletion was under way), the owner's Approve made
    the change in no one's name."""
    editor, _socket = await _editors_card_waits(owner, thread, script, sockets, django_user_model)
    # What a deletion leaves on the row: the username, no account (no signal: the race).
    await sync_to_async(Turn.objects.filter(thread=thread, index=1).update)(person=None)
    await sync_to_async(django_user_model.objects.filter(pk=editor.pk).delete)()

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk)

    assert (await sync_to_async(Turn.objects.get)(thread=thread, index=1)).status == Turn.Status.STOPPED
    assert await _titles(thread) == ["Formal tone", "Short"]


@pytest.mark.parametrize("recorded", ["owner", "no_one"])
async def test_an_approve_of_the_owners_card_or_one_recorded_with_no_one_makes_the_change(
    owner, thread, script, sockets, recorded
):
    """The owner's own turns, and turns from before people were recorded
    (no account, no username), are not taken for an ended account's."""
    await sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": "Formal tone", "kind": "soft"}, {"title": "Short", "kind": "soft"}], respect_lock=False
    )
    script(Reply(tool_calls=[tool_call("remove_preferences", "Dropping it.", indices=[1])]), Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule", user=owner)
    await registry.wait_for_turn(thread.pk)
    assert (await sync_to_async(Turn.objects.get)(thread=thread, index=1)).status == Turn.Status.AWAITING
    if recorded == "no_one":
        await sync_to_async(Turn.objects.filter(thread=thread, index=1).update)(person=None, person_username="")

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk)

    assert (await sync_to_async(Turn.objects.get)(thread=thread, index=1)).status == Turn.Status.COMPLETE
    assert await _titles(thread) == ["Short"]


def test_an_activity_entry_of_a_turn_whose_sender_was_deleted_keeps_their_name(owner, thread, django_user_model):
    """A running turn's entries name its sender (its "approval asked", its
    steps): once the account was deleted the entry failed (FOREIGN KEY) and was lost."""
    editor = django_user_model.objects.create_user(username="ed", password="pw-123456789")
    django_user_model.objects.filter(pk=editor.pk).delete()  # the turn still holds the object

    services.activity_log(thread=thread, turn_index=1, person=editor, message="Approval asked: Remove 1 preference.")

    entry = ActivityLogEntry.objects.get(thread=thread, message="Approval asked: Remove 1 preference.")
    assert (entry.person_id, entry.person_username) == (None, "ed")
