"""Approvals of hard-to-undo agent changes, driven through the real agent,
checkpointer and socket with the scripted model (docs/adr/0017): approve,
reject, reload then approve, a server restart then approve, Stop, and the
guard that refuses another turn meanwhile."""

import json
import re

import pytest
from channels.db import database_sync_to_async
from langchain_core.messages import ToolMessage

from agent import checkpointer as checkpointers
from conversations.models import ActivityLogEntry, Turn
from conversations.turns import approval_claims, process, registry, slot
from tests.conversations.helpers import frame_containing, frames_until_turn_end, stored_slot
from tests.support.fake_model import Reply, tool_call
from workspace import selectors
from workspace.models import DocumentRevision, Preference, Thread
from workspace.services import document as document_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)

CARD = 'id="turn-1-approval"'


@database_sync_to_async
def _add_preferences(thread, *titles):
    preference_services.preferences_add(thread=thread, items=[{"title": t, "kind": "soft"} for t in titles], respect_lock=False)


@database_sync_to_async
def _titles(thread):
    return [p.title for p in selectors.preferences_for(thread=thread)]


@database_sync_to_async
def _row(thread, index=1):
    return Turn.objects.get(thread=thread, index=index)


@database_sync_to_async
def _log(thread):
    return list(ActivityLogEntry.objects.filter(thread=thread).order_by("pk").values_list("message", flat=True))


@database_sync_to_async
def _fresh(thread):
    return Thread.objects.get(pk=thread.pk)


def _removal_script(script):
    return script(
        Reply(tool_calls=[tool_call("remove_preferences", "Dropping the rule you no longer want.", indices=[1])]),
        Reply(text="Done as you decided."),
    )


async def _ask(thread, owner, script, sockets):
    await _add_preferences(thread, "Formal tone", "Short paragraphs")
    model = _removal_script(script)
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule")
    frames = await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)
    return model, socket, frames[-1]


async def test_an_approved_removal_runs_and_the_turn_goes_on(owner, thread, script, sockets):
    model, socket, card = await _ask(thread, owner, script, sockets)
    assert "Remove 1 preference." in card and "“Formal tone” (soft)" in card
    assert ">Approve</button>" in card and ">Reject</button>" in card
    assert 'data-state="awaiting"' in card and "Waiting for your approval." in card
    assert await _titles(thread) == ["Formal tone", "Short paragraphs"]  # nothing removed yet
    row = await _row(thread)
    assert row.status == Turn.Status.AWAITING and (await database_sync_to_async(stored_slot)(thread)).turn_index is None

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    frames = await frames_until_turn_end(socket)
    # The card names who answered, the same in every tab.
    assert any('approval-title">Approved by owner</p>' in f for f in frames)
    assert "Done as you decided." in frames[-1]
    assert await _titles(thread) == ["Short paragraphs"]
    assert (await _row(thread)).status == Turn.Status.COMPLETE
    log = await _log(thread)
    assert "Approval asked: Remove 1 preference." in log and "Approved: Remove 1 preference." in log
    # The model called once before the pause and once after, with the tool's real result.
    results = [m for m in model.requests[-1] if isinstance(m, ToolMessage)]
    assert len(model.requests) == 2 and '"success": true' in results[-1].content


async def test_a_rejected_removal_is_not_made_and_the_agent_is_told(owner, thread, script, sockets):
    model, socket, _card = await _ask(thread, owner, script, sockets)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.REJECTED, person=owner)
    frames = await frames_until_turn_end(socket)
    assert any('approval-title">Rejected by owner</p>' in f for f in frames)
    assert "Done as you decided." in frames[-1]
    assert await _titles(thread) == ["Formal tone", "Short paragraphs"]
    [result] = [m for m in model.requests[-1] if isinstance(m, ToolMessage)]
    assert "The person rejected this change" in result.content and '"rejected": true' in result.content
    assert '<span class="step-status">Rejected</span>' in "".join(frames)  # the step in the reasoning says so
    assert "Rejected: Remove 1 preference." in await _log(thread)


async def test_a_new_message_is_refused_while_an_approval_waits(owner, thread, script, sockets):
    _model, socket, _card = await _ask(thread, owner, script, sockets)
    await socket.send_json_to({"message": "something else"})
    [notice] = await frame_containing(socket, 'id="chat-notice"')
    assert "Answer the pending approval first" in notice
    assert (await _fresh(thread)).turn_index == 1
    # Nor can the waiting turn be retried, or branched from.
    await socket.send_json_to({"action": "retry", "turn": 1})
    [notice] = await frame_containing(socket, 'id="chat-notice"')
    assert "waiting for your approval" in notice


async def test_the_answer_is_validated(owner, thread, script, sockets):
    _model, socket, _card = await _ask(thread, owner, script, sockets)
    for bad in ({"action": "approval", "turn": 1, "decision": "maybe"}, {"action": "approval", "turn": 1}):
        await socket.send_json_to(bad)
        [notice] = await frame_containing(socket, 'id="chat-notice"')
        assert "Choose Approve or Reject." in notice
    await socket.send_json_to({"action": "approval", "turn": "x", "decision": "approve"})
    [notice] = await frame_containing(socket, 'id="chat-notice"')
    assert "Choose a turn to answer." in notice
    await socket.send_json_to({"action": "approval", "turn": 2, "decision": "approve"})
    [notice] = await frame_containing(socket, 'id="chat-notice"')
    assert "No approval is waiting" in notice
    assert (await _row(thread)).status == Turn.Status.AWAITING


async def test_a_second_answer_from_another_tab_is_refused(owner, thread, script, sockets):
    _model, socket, _card = await _ask(thread, owner, script, sockets)
    other = await sockets(thread.pk, owner)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED)
    await other.send_json_to({"action": "approval", "turn": 1, "decision": "reject"})
    frames = await frame_containing(other, "No approval is waiting")
    await frames_until_turn_end(socket)
    assert await _titles(thread) == ["Short paragraphs"] and frames


async def test_reload_shows_the_pending_card_and_its_approve_still_works(owner, thread, script, sockets, async_client):
    _model, socket, _card = await _ask(thread, owner, script, sockets)
    await socket.disconnect()
    await async_client.aforce_login(owner)
    page = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    assert CARD + ' class="approval is-pending"' in page and ">Approve</button>" in page
    assert "Dropping the rule you no longer want." in page  # the step that asked
    assert 'data-state="awaiting"' in page
    # A socket that connects now is sent the card too (a page built before the pause).
    again = await sockets(thread.pk, owner)
    await frame_containing(again, CARD + ' class="approval is-pending"')
    await again.send_json_to({"action": "approval", "turn": 1, "decision": "approve"})
    frames = await frames_until_turn_end(again)
    assert "Done as you decided." in frames[-1]
    assert await _titles(thread) == ["Short paragraphs"]


async def test_a_server_that_dies_between_the_answer_and_the_change_leaves_a_card_that_does_not_claim_it(
    owner, thread, script, sockets, monkeypatch, client, settings
):
    settings.HAICO_INSTANCE = "web-1"  # a server that knows its successor by name
    _model, socket, _card = await _ask(thread, owner, script, sockets)
    await socket.disconnect()
    # The answer is claimed (answer_approval's first step), then the server dies before the change runs.
    await database_sync_to_async(approval_claims.turn_answer_claim)(
        thread=await _fresh(thread), turn=1, decision=approval_claims.APPROVED, person=owner
    )
    await checkpointers.close_checkpointer()
    monkeypatch.setattr(process, "BOOT", "the-next-boot")
    assert await database_sync_to_async(slot.turns_release_predecessor)() == 1

    assert (await _row(thread)).status == Turn.Status.INTERRUPTED
    assert await _titles(thread) == ["Formal tone", "Short paragraphs"]
    await database_sync_to_async(client.force_login)(owner)
    page = (await database_sync_to_async(client.get)(f"/threads/{thread.pk}/workspace/")).content.decode()
    card = page.split(CARD, 1)[1].split("</section>", 1)[0]
    assert "the server stopped before the turn finished: check the workspace for whether it was made" in card


async def test_after_a_server_restart_the_approval_waits_and_resumes(owner, thread, script, sockets, monkeypatch):
    _model, socket, _card = await _ask(thread, owner, script, sockets)
    await socket.disconnect()
    # The server goes away: its saver is closed, and the next process is a new boot of the same instance.
    await registry.stop_all_turns()
    await checkpointers.close_checkpointer()
    monkeypatch.setattr(process, "BOOT", "the-next-boot")
    assert await database_sync_to_async(slot.turns_release_predecessor)() == 0
    assert await database_sync_to_async(slot.turns_release_stale)() == 0
    assert (await _row(thread)).status == Turn.Status.AWAITING

    socket = await sockets(thread.pk, owner)
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await socket.send_json_to({"action": "approval", "turn": 1, "decision": "approve"})
    frames = await frames_until_turn_end(socket)
    assert "Done as you decided." in frames[-1]
    assert await _titles(thread) == ["Short paragraphs"]
    assert (await _row(thread)).boot == "the-next-boot"


async def test_stop_on_a_pending_approval_rejects_it_and_ends_the_turn(owner, thread, script, sockets):
    model, socket, _card = await _ask(thread, owner, script, sockets)
    await socket.send_json_to({"action": "stop"})
    frames = await frames_until_turn_end(socket)
    assert "Stopped" in frames[-1] and "Done as you decided." not in "".join(frames)
    assert await _titles(thread) == ["Formal tone", "Short paragraphs"]
    row = await _row(thread)
    assert row.status == Turn.Status.STOPPED and (await database_sync_to_async(stored_slot)(thread)).turn_index is None
    assert len(model.requests) == 1  # the agent did not go on
    assert "Rejected (Stop): Remove 1 preference." in await _log(thread)

    # The thread takes the next message, and its history has the call answered.
    script(Reply(text="Fine."))
    await registry.start_turn(thread=thread, user_message="ok")
    frames = await frames_until_turn_end(socket)
    assert "Fine." in frames[-1]
    [result] = [m for m in registry.agents.model.requests[-1] if isinstance(m, ToolMessage)]
    assert "pressed Stop instead of approving" in result.content


async def test_a_small_change_runs_without_asking(owner, thread, script, sockets):
    await _add_preferences(thread, "Formal tone")
    script(
        Reply(tool_calls=[tool_call("add_preferences", "Noting your rule.", items=[{"title": "Be brief", "kind": "hard"}])]),
        Reply(text="Noted."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="be brief")
    frames = await frames_until_turn_end(socket)
    assert "Noted." in frames[-1] and "is-pending" not in "".join(frames)
    assert sorted(await _titles(thread)) == ["Be brief", "Formal tone"]


@database_sync_to_async
def _write_document(thread, content):
    from workspace.models import DocumentRevision
    from workspace.services import document as document_services

    document_services.document_save(thread=thread, content=content, author=DocumentRevision.Author.PERSON)


async def test_the_document_card_previews_what_would_be_removed(owner, thread, script, sockets):
    report = "\n\n".join(f"Paragraph {n} says something worth keeping." for n in range(1, 9))
    await _write_document(thread, report)
    script(
        Reply(
            tool_calls=[
                tool_call("update_document", "Rewriting it shorter.", content="Paragraph 1 says something worth keeping.")
            ]
        ),
        Reply(text="Shorter now."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="make it short")
    card = (await frame_containing(socket, CARD + ' class="approval is-pending"'))[-1]
    assert "Replace the document" in card and "of its text would be removed" in card
    assert "Preview of the document change" in card and "Removed line: " in card
    assert "Paragraph 8 says something worth keeping." in card
    await socket.send_json_to({"action": "approval", "turn": 1, "decision": "approve"})
    frames = await frames_until_turn_end(socket)
    assert "Shorter now." in frames[-1]
    document = await database_sync_to_async(selectors.document_for)(thread=thread)
    assert document.content == "Paragraph 1 says something worth keeping."


async def test_a_waiting_turn_cannot_be_branched_from(owner, thread, script, sockets):
    from conversations.branching import fork_thread
    from workspace.errors import UserFacingError

    await _ask(thread, owner, script, sockets)
    with pytest.raises(UserFacingError, match="waiting for your approval"):
        await database_sync_to_async(fork_thread)(source=await _fresh(thread), turn_index=1, user=owner)


async def test_two_changes_asked_in_one_step_are_asked_one_after_the_other(owner, thread, script, sockets):
    await _add_preferences(thread, "Formal tone", "Short paragraphs", "Cite sources")
    script(
        Reply(
            tool_calls=[
                tool_call("remove_preferences", "Dropping the first rule.", indices=[1]),
                tool_call("remove_preferences", "Dropping the third rule.", indices=[3]),
            ]
        ),
        Reply(text="Both answered."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop two rules")
    first = (await frame_containing(socket, CARD + ' class="approval is-pending"'))[-1]
    await registry.wait_for_turn(thread.pk)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED)
    second = (await frame_containing(socket, CARD + ' class="approval is-pending"'))[-1]
    assert first != second
    await registry.wait_for_turn(thread.pk)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.REJECTED)
    frames = await frames_until_turn_end(socket)
    assert "Both answered." in frames[-1]
    assert len(await _titles(thread)) == 2  # one removed, one kept
    assert (await _row(thread)).status == Turn.Status.COMPLETE


async def test_the_card_shows_what_the_agent_and_person_wrote_as_text(owner, thread, script, sockets, async_client):
    payload = '<img src=x onerror="alert(1)">'
    await _add_preferences(thread, payload)
    script(Reply(tool_calls=[tool_call("remove_preferences", f"Dropping {payload}.", indices=[1])]), Reply(text="ok"))
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop it")
    card = (await frame_containing(socket, CARD + ' class="approval is-pending"'))[-1]
    await registry.wait_for_turn(thread.pk)
    await async_client.aforce_login(owner)
    page = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    for html in (card, page):
        assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html and payload not in html


REPORT = "\n\n".join(f"Paragraph {n} says something worth keeping." for n in range(1, 9))
OVERLAP = "Approved by owner, but it could not be applied: the same passage was edited meanwhile. Nothing was overwritten."


async def test_an_approved_rewrite_refused_as_an_overlap_says_so_on_the_card(owner, thread, script, sockets, async_client):
    await _write_document(thread, REPORT)
    script(
        Reply(tool_calls=[tool_call("update_document", "Rewriting it shorter.", content="Paragraph 1 is now short.")]),
        Reply(text="I could not rewrite it; you changed it meanwhile."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="make it short")
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)
    # While the question waits, the person rewrites the passage the agent's text replaces.
    mine = REPORT.replace("Paragraph 1 says something worth keeping.", "Paragraph 1 is what I wrote myself.")
    await _write_document(thread, mine)

    await socket.send_json_to({"action": "approval", "turn": 1, "decision": "approve"})
    frames = await frames_until_turn_end(socket)
    # The card as the page shows it last (under load one frame may carry
    # the plain "approved" card and the one that replaces it, in that order).
    last_card = "".join(frames).rsplit(CARD, 1)[1].split("</section>", 1)[0]
    assert OVERLAP in last_card and "is-not-applied" in last_card
    assert "Approved by owner</p>" not in last_card
    document = await database_sync_to_async(selectors.document_for)(thread=thread)
    assert document.content == mine  # nothing of the person's was overwritten
    row = await _row(thread)
    assert row.status == Turn.Status.COMPLETE and row.approval["decision"] == "approved"
    assert row.approval["outcome"] == "overlap"

    # After a reload the card says the same.
    await async_client.aforce_login(owner)
    page = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    card = page.split(CARD, 1)[1].split("</section>", 1)[0]
    assert OVERLAP in card and ">Approve</button>" not in card


async def test_an_approved_change_that_applies_still_says_approved(owner, thread, script, sockets, async_client):
    await _write_document(thread, REPORT)
    script(
        Reply(tool_calls=[tool_call("update_document", "Rewriting it shorter.", content="Paragraph 1 is now short.")]),
        Reply(text="Shorter now."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="make it short")
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)
    # An edit elsewhere than the passage the agent rewrites is merged, not an overlap.
    await _write_document(thread, REPORT + "\n\nA closing line of mine.")
    await socket.send_json_to({"action": "approval", "turn": 1, "decision": "approve"})
    frames = await frames_until_turn_end(socket)
    assert "Approved by owner</p>" in [f for f in frames if CARD in f][-1]
    assert "could not be applied" not in "".join(frames)
    assert "outcome" not in (await _row(thread)).approval


@database_sync_to_async
def _outline(thread):
    from workspace.services import plan as plan_services

    outline = plan_services.todo_add(thread=thread, text="Outline")
    plan_services.todo_add(thread=thread, text="Intro", parent=outline)


async def test_a_turn_resumed_after_its_approval_goes_on_in_its_own_mode(owner, thread, script, sockets):
    await _outline(thread)
    model = script(
        Reply(tool_calls=[tool_call("remove_todos", "Dropping the outline.", indices=[1])]),
        Reply(text="Removed it."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop the outline", mode=Thread.Mode.PLAN)
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)
    # While the question waits, the person switches the thread to Explore for the next turns.
    from conversations.services import thread_set_mode

    await database_sync_to_async(thread_set_mode)(thread=await _fresh(thread), mode=Thread.Mode.EXPLORE)
    await registry.answer_approval(thread=await _fresh(thread), turn=1, decision=approval_claims.APPROVED)
    frames = await frames_until_turn_end(socket)
    assert "Removed it." in frames[-1]
    prompts = [m.content for request in model.requests for m in request if m.type == "system"]
    assert len(prompts) == 2 and all("# Mode: Plan" in prompt for prompt in prompts)
    assert model.tool_lists[0] == model.tool_lists[1] and "update_document" not in model.tool_lists[1]
    assert (await _row(thread)).mode == Thread.Mode.PLAN


async def test_an_editors_turn_resumed_by_the_owners_answer_stays_the_editors_in_usage(
    owner, thread, script, sockets, django_user_model
):
    from conversations.models import ModelUsage
    from conversations.sharing import thread_member_add

    editor = await database_sync_to_async(django_user_model.objects.create_user)(username="bob", password="pw-bob-123456")
    await database_sync_to_async(thread_member_add)(thread=thread, who="bob", role="editor", by=owner)
    await _add_preferences(thread, "Formal tone", "Short paragraphs")
    _removal_script(script)
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule", user=editor)
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    frames = await frames_until_turn_end(socket)
    assert any('approval-title">Approved by owner</p>' in f for f in frames)
    # Both model calls, before the pause and after the owner's answer, are the editor's.
    payers = await database_sync_to_async(
        lambda: list(ModelUsage.objects.filter(thread=thread).values_list("user__username", flat=True))
    )()
    assert payers == ["bob", "bob"]


async def test_calls_beside_one_that_waits_for_approval_run_once_and_in_order_after_it_is_approved(owner, thread, script):
    """One reply: add_todos, a document rewrite that removes most of the
    text (asks first), toggle_todos, add_preferences. The calls of a reply
    run one at a time in the model's order (docs/adr/0130): the add runs,
    the rewrite pauses the turn, the toggle and the preference run. The
    person approves and the run resumes with only the rewrite to run: it
    must not wait for calls that completed before the pause. Every other
    call ran exactly once, the rewrite applied once, the turn complete."""
    from conversations.turns import approval_claims
    from workspace.models import DocumentRevision, Preference, Todo
    from workspace.services import document as document_services
    from workspace.services import plan as plan_services

    long_notes = "".join(f"Paragraph {n} of the notes, with the reasoning that belongs to it.\n\n" for n in range(1, 80))

    @database_sync_to_async
    def prepare():
        document_services.document_save(thread=thread, title="Notes", content=long_notes, author=DocumentRevision.Author.PERSON)
        plan_services.todos_add_outline(thread=thread, steps=[{"text": "Collect"}])

    @database_sync_to_async
    def stored():
        return (
            sorted(Todo.objects.filter(thread=thread).values_list("text", "done")),
            list(Preference.objects.filter(thread=thread).values_list("title", "kind")),
            selectors.document_for(thread=thread).content,
        )

    await prepare()
    script(
        Reply(
            tool_calls=[
                tool_call("add_todos", "Adding the writing step.", steps=[{"text": "Write"}]),
                tool_call("update_document", "Replacing the notes with a short summary.", content="# Summary\n\nShort."),
                tool_call("toggle_todos", "Ticking off collecting.", indices=[1]),
                tool_call("add_preferences", "Noting the short style.", items=[{"title": "Short", "kind": "soft"}]),
            ]
        ),
        Reply(text="Done."),
    )
    await registry.start_turn(thread=thread, user_message="summarise")
    await registry.wait_for_turn(thread.pk, timeout=60)
    assert (await _row(thread)).status == Turn.Status.AWAITING
    # The calls around the paused one ran while the card waited.
    todos, preferences, content = await stored()
    assert todos == [("Collect", True), ("Write", False)] and preferences == [("Short", "soft")]
    assert content == long_notes

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk, timeout=60)
    row = await _row(thread)
    assert row.status == Turn.Status.COMPLETE, (row.status, row.notice)
    assert await stored() == ([("Collect", True), ("Write", False)], [("Short", "soft")], "# Summary\n\nShort.")


# --- a call after one that waits for the person (docs/adr/0130) ----------------------


@database_sync_to_async
def _steps(thread):
    return [(s.text, s.done, s.depth) for s in selectors.plan_steps(thread=thread)]


def _results(model):
    return [json.loads(m.content) for m in model.requests[-1] if isinstance(m, ToolMessage)]


async def _approve_the_card(thread, owner):
    await registry.start_turn(thread=thread, user_message="tidy up")
    await registry.wait_for_turn(thread.pk, timeout=60)
    assert (await _row(thread)).status == Turn.Status.AWAITING
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk, timeout=60)
    row = await _row(thread)
    assert row.status == Turn.Status.COMPLETE, (row.status, row.notice)


async def test_an_approved_group_removal_is_not_refused_for_a_later_rename_of_its_sub_step_in_the_same_reply(
    owner, thread, script
):
    """One reply removes step #1 with its sub-step (the card asks first),
    then renames the sub-step #2. The rename comes after the removal in the
    model's order, so it is held back while the card waits instead of
    running first and making the approved removal refused as "changed while
    the person was asked". The person approves: the group is gone, and the
    model is told the rename waited for call 1 and to make it again."""
    await database_sync_to_async(plan_services.todos_add_outline)(
        thread=thread, steps=[{"text": "Collect"}, {"text": "sources", "depth": 1}, {"text": "Write"}]
    )
    model = script(
        Reply(
            tool_calls=[
                tool_call("remove_todos", "Dropping the collecting group.", indices=[1]),
                tool_call("update_todos", "Naming the sources step.", updates=[{"index": 2, "text": "primary sources"}]),
            ]
        ),
        Reply(text="Done."),
    )
    await _approve_the_card(thread, owner)
    removed, renamed = _results(model)
    assert await _steps(thread) == [("Write", False, 0)], (removed, renamed)
    assert removed["success"] is True, removed
    assert renamed["success"] is False and "call 1 of this reply (remove_todos) waits" in renamed["error"], renamed
    assert "make this call again" in renamed["error"]


async def test_an_approved_preference_removal_is_not_refused_for_a_later_edit_of_it_in_the_same_reply(owner, thread, script):
    """As above for preferences: remove #1 (asks), then make #1 hard. The
    edit is held back; the approved removal runs."""
    await _add_preferences(thread, "Formal tone", "Short paragraphs")
    model = script(
        Reply(
            tool_calls=[
                tool_call("remove_preferences", "Dropping the formal tone rule.", indices=[1]),
                tool_call("update_preferences", "Making it strict.", updates=[{"index": 1, "kind": "hard"}]),
            ]
        ),
        Reply(text="Done."),
    )
    await _approve_the_card(thread, owner)
    removed, hardened = _results(model)
    kinds = await database_sync_to_async(lambda: list(Preference.objects.filter(thread=thread).values_list("title", "kind")))()
    assert kinds == [("Short paragraphs", "soft")], (removed, hardened)
    assert "call 1 of this reply (remove_preferences) waits" in hardened["error"], hardened


async def test_an_append_after_a_rewrite_that_waits_is_held_back_not_merged_into_it(owner, thread, script):
    """One reply rewrites most of a long document (asks first), then appends
    a conclusion. In the model's order the append comes after the rewrite;
    run before the answer it was merged into the approved rewrite. It is
    held back: the document is the approved rewrite, and the model is told
    to append again."""
    long_notes = "".join(f"Paragraph {n} of the notes, with the reasoning that belongs to it.\n\n" for n in range(1, 80))
    await database_sync_to_async(document_services.document_save)(
        thread=thread, title="Notes", content=long_notes, author=DocumentRevision.Author.PERSON
    )
    model = script(
        Reply(
            tool_calls=[
                tool_call("update_document", "Replacing the notes with a summary.", content="# Summary\n\nShort."),
                tool_call("append_to_document", "Adding the conclusion.", text="## Conclusion\n\nIt holds."),
            ]
        ),
        Reply(text="Done."),
    )
    await _approve_the_card(thread, owner)
    rewritten, appended = _results(model)
    assert rewritten["success"] is True, rewritten
    assert "call 1 of this reply (update_document) waits" in appended["error"], appended
    assert (await database_sync_to_async(selectors.document_for)(thread=thread)).content == "# Summary\n\nShort."


async def test_a_later_call_on_rows_the_card_does_not_list_runs_before_the_answer(owner, thread, script):
    """Only what the card lists waits: a rename of another step of the
    plan, and a second removal of other preferences (asked on its own card
    after the first answer, as before), run as the model wrote them."""
    await database_sync_to_async(plan_services.todos_add_outline)(
        thread=thread, steps=[{"text": "Collect"}, {"text": "sources", "depth": 1}, {"text": "Write"}]
    )
    model = script(
        Reply(
            tool_calls=[
                tool_call("remove_todos", "Dropping the collecting group.", indices=[1]),
                tool_call("update_todos", "Naming the writing step.", updates=[{"index": 3, "text": "Write it up"}]),
            ]
        ),
        Reply(text="Done."),
    )
    await registry.start_turn(thread=thread, user_message="tidy up")
    await registry.wait_for_turn(thread.pk, timeout=60)
    assert await _steps(thread) == [("Collect", False, 0), ("sources", False, 1), ("Write it up", False, 0)]
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk, timeout=60)
    assert await _steps(thread) == [("Write it up", False, 0)], _results(model)


async def test_a_rejected_removal_beside_calls_on_other_surfaces_runs_each_of_them_once(owner, thread, script):
    """A pin: a reply adds a step, removes a preference (asks), ticks a
    step; the person rejects. The add and the tick ran once each (the plan
    is not what the card is about), the preference stays, and the model is
    told of the rejection."""
    await _add_preferences(thread, "Formal tone")
    await database_sync_to_async(plan_services.todos_add_outline)(thread=thread, steps=[{"text": "Collect"}])
    model = script(
        Reply(
            tool_calls=[
                tool_call("add_todos", "Adding a step.", steps=[{"text": "Write"}]),
                tool_call("remove_preferences", "Dropping the formal tone rule.", indices=[1]),
                tool_call("toggle_todos", "Ticking collect.", indices=[1]),
            ]
        ),
        Reply(text="Done."),
    )
    await registry.start_turn(thread=thread, user_message="go")
    await registry.wait_for_turn(thread.pk, timeout=60)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.REJECTED, person=owner)
    await registry.wait_for_turn(thread.pk, timeout=60)
    row = await _row(thread)
    assert row.status == Turn.Status.COMPLETE, (row.status, row.notice)
    assert await _steps(thread) == [("Collect", True, 0), ("Write", False, 0)]
    assert await _titles(thread) == ["Formal tone"]
    added, removed, ticked = _results(model)
    assert removed.get("rejected") is True and added["success"] and ticked["success"]


async def test_the_trace_lists_each_call_once_in_the_replys_order_after_an_approval(owner, thread, script, async_client):
    """A pin: a reply adds a step, removes a preference (asks), ticks a
    step, adds a preference; the person approves. The page's reasoning
    lists the four sentences once each, in the reply's order, and every
    call ran once."""
    await _add_preferences(thread, "Formal tone")
    await database_sync_to_async(plan_services.todos_add_outline)(thread=thread, steps=[{"text": "Collect"}])
    script(
        Reply(
            tool_calls=[
                tool_call("add_todos", "Adding the writing step.", steps=[{"text": "Write"}]),
                tool_call("remove_preferences", "Dropping the formal tone rule.", indices=[1]),
                tool_call("toggle_todos", "Ticking off collecting.", indices=[1]),
                tool_call("add_preferences", "Noting the short style.", items=[{"title": "Short", "kind": "soft"}]),
            ]
        ),
        Reply(text="Done."),
    )
    await _approve_the_card(thread, owner)
    await async_client.aforce_login(owner)
    html = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    steps = re.findall(r'<li id="turn-1-step-\d+" class="reasoning-step">([^<]*)</li>', html)
    assert steps == [
        "Adding the writing step.",
        "Dropping the formal tone rule.",
        "Ticking off collecting.",
        "Noting the short style.",
    ], steps
    assert await _steps(thread) == [("Collect", True, 0), ("Write", False, 0)]
    assert await _titles(thread) == ["Short"]


@pytest.mark.parametrize("how", ["provider disabled", "model deleted"])
async def test_a_turn_whose_model_staff_took_away_while_its_card_waited_records_and_says_the_model_it_went_on_with(
    owner, thread, script, sockets, how
):
    """The rest runs on the owner's default (docs/adr/0062); the turn row
    names that model (its Regenerate and archive follow it) and its end
    says which model was taken away and which one finished."""
    from agent.models import CatalogueModel, Provider

    lab = await database_sync_to_async(Provider.objects.create)(name="Lab", base_url="http://127.0.0.1:9/v1", api_key="sk-lab")
    chosen = await database_sync_to_async(CatalogueModel.objects.create)(provider=lab, name="lab-big", label="Big")
    key = f"catalogue:{chosen.pk}"
    await database_sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": t, "kind": "soft"} for t in ("Formal tone", "Short")], respect_lock=False
    )
    script(
        Reply(tool_calls=[tool_call("remove_preferences", "Dropping the rule.", indices=[1])]),
        Reply(text="Done as you decided."),
    )
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="drop the formal tone rule", model_name=key, user=owner)
    await frame_containing(socket, CARD + ' class="approval is-pending"')
    await registry.wait_for_turn(thread.pk)

    def take_away():
        if how == "provider disabled":
            Provider.objects.filter(pk=lab.pk).update(enabled=False)
        else:
            CatalogueModel.objects.filter(pk=chosen.pk).delete()

    await database_sync_to_async(take_away)()
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    frames = await frames_until_turn_end(socket)
    assert "Done as you decided." in frames[-1]
    assert [c.key for c in script.choices] == [key, "env:scripted-default"]
    row = await database_sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert row.status == Turn.Status.COMPLETE and row.model_name == "env:scripted-default"
    named = "The model this turn began with" if how == "model deleted" else "“Big (Lab)”"
    said = f"{named} is no longer offered, so this turn went on with “scripted-default” instead."
    assert row.notice == said and said in frames[-1]
