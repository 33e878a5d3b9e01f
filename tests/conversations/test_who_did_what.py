"""Who did what (docs/adr/0085), through the real socket, turn runner and
scripted model: the turn row and the chat bubble name the sender, the
prompt tells the agent who wrote the message, the agent's writes are
recorded for the person whose turn it was, an approval card and the
activity log say who answered, an MCP write is its token's person's, and
the trajectory preview and the staff review name the sender."""

import json

import pytest
from channels.db import database_sync_to_async

from conversations.mcp_server import THREAD_FIELD, call_tool
from conversations.models import ActivityLogEntry, Turn
from conversations.tokens import token_create
from conversations.turns import registry
from tests.support.fake_model import Reply, tool_call
from workspace.models import DocumentRevision, ObjectiveRevision
from workspace.services import preferences as preference_services

from .helpers import frame_containing, frames_until_turn_end

pytestmark = pytest.mark.django_db(transaction=True)

SENDER = 'class="bubble-author">Ada Lovelace</span>'


def _send(message):
    return json.dumps({"message": message, "HEADERS": {"HX-Request": "true"}})


@pytest.fixture
def named_owner(owner):
    owner.first_name, owner.last_name = "Ada", "Lovelace"
    owner.save()
    return owner


@database_sync_to_async
def _turn(thread, index=1):
    return Turn.objects.select_related("person").get(thread=thread, index=index)


async def test_a_turn_records_its_sender_and_the_chat_names_them_on_the_push_and_the_page(
    named_owner, thread, script, sockets, async_client
):
    script(Reply(text="Hello."))
    socket = await sockets(thread.pk, named_owner)
    await socket.send_to(text_data=_send("hi there"))
    frames = await frames_until_turn_end(socket)
    # The push every tab of the thread gets names the sender: never "You".
    assert any(SENDER in f for f in frames)
    assert not any('bubble-author">You<' in f for f in frames)
    row = await _turn(thread)
    assert (row.person_id, row.person_username) == (named_owner.pk, "owner")

    await async_client.aforce_login(named_owner)
    page = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    assert SENDER in page


async def test_the_prompt_names_the_person_who_wrote_the_current_message(named_owner, thread, script, sockets):
    model = script(Reply(text="Hello, Ada."))
    socket = await sockets(thread.pk, named_owner)
    await socket.send_to(text_data=_send("who am I?"))
    await frames_until_turn_end(socket)
    system = model.requests[0][0].content
    assert system.count("The current message was written by “Ada Lovelace”.") == 1
    # After the workspace block, before the mode.
    assert system.index("</workspace>") < system.index("written by “Ada Lovelace”") < system.index("# Mode:")


async def test_the_agents_edits_are_recorded_for_the_person_whose_turn_it_was(named_owner, thread, script, sockets):
    script(
        Reply(tool_calls=[tool_call("set_objective", "Noting the goal.", text="Write the launch note")]),
        Reply(tool_calls=[tool_call("append_to_document", "Starting the note.", text="A first line.")]),
        Reply(text="Done."),
    )
    socket = await sockets(thread.pk, named_owner)
    await socket.send_to(text_data=_send("start the note"))
    await frames_until_turn_end(socket)

    @database_sync_to_async
    def recorded():
        revision = DocumentRevision.objects.get(document__thread=thread)
        objective = ObjectiveRevision.objects.get(thread=thread)
        return [(r.author, r.person_id, r.person_username) for r in (revision, objective)]

    assert await recorded() == [("agent", named_owner.pk, "owner"), ("agent", named_owner.pk, "owner")]


async def test_an_approval_answer_names_who_answered_on_the_card_the_row_and_the_activity_log(
    named_owner, thread, script, sockets, async_client
):
    await database_sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": "Formal tone", "kind": "soft"}], respect_lock=False
    )
    script(
        Reply(tool_calls=[tool_call("remove_preferences", "Dropping the rule.", indices=[1])]),
        Reply(text="Kept it."),
    )
    socket = await sockets(thread.pk, named_owner)
    await socket.send_to(text_data=_send("drop the formal tone rule"))
    await frame_containing(socket, 'class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)
    await socket.send_json_to({"action": "approval", "turn": 1, "decision": "reject"})
    frames = await frames_until_turn_end(socket)
    assert any('approval-title">Rejected by Ada Lovelace</p>' in f for f in frames)

    row = await _turn(thread)
    assert (row.approval["answered_by"], row.approval["answered_by_name"]) == ("owner", "Ada Lovelace")

    @database_sync_to_async
    def answered_entry():
        return ActivityLogEntry.objects.get(thread=thread, kind=ActivityLogEntry.Kind.APPROVAL_ANSWERED)

    entry = await answered_entry()
    assert (entry.person_id, entry.person_username) == (named_owner.pk, "owner")

    # After a reload the card and the activity log say the same.
    await async_client.aforce_login(named_owner)
    page = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    assert 'approval-title">Rejected by Ada Lovelace</p>' in page
    log = (await async_client.get(f"/threads/{thread.pk}/activity/", HTTP_HX_REQUEST="true")).content.decode()
    assert 'class="activity-who">Ada Lovelace</span>' in log


async def test_the_trajectory_preview_and_the_staff_review_name_the_sender(named_owner, staff, thread, script, sockets, client):
    script(Reply(text="Hello."))
    socket = await sockets(thread.pk, named_owner)
    await socket.send_to(text_data=_send("hi there"))
    await frames_until_turn_end(socket)

    @database_sync_to_async
    def pages():
        client.force_login(named_owner)
        preview = client.get(f"/threads/{thread.pk}/trajectory/1/", HTTP_HX_REQUEST="true").content.decode()
        client.force_login(staff)
        review = client.get(f"/admin/workspace/thread/{thread.pk}/review/").content.decode()
        return preview, review

    preview, review = await pages()
    assert "<strong>Turn 1, Ada Lovelace:</strong> hi there" in preview
    assert "<strong>Person:</strong> Ada Lovelace</p>" in review


def test_an_mcp_write_is_recorded_as_the_tokens_person_in_the_history_and_the_activity_log(named_owner, thread):
    token = token_create(user=named_owner, name="Laptop")[0]
    result = call_tool(
        token,
        "set_objective",
        {THREAD_FIELD: str(thread.pk), "action_and_reasoning": "Recording the goal.", "text": "Ship it"},
    )
    assert not result.is_error
    revision = ObjectiveRevision.objects.get(thread=thread)
    assert (revision.author, revision.token_name, revision.person_id) == ("mcp", "Laptop", named_owner.pk)
    entry = ActivityLogEntry.objects.get(thread=thread, kind=ActivityLogEntry.Kind.MCP)
    assert entry.person_name == "Ada Lovelace"
