"""What a turn row carries besides its message and answer — the approval
card (what was asked and answered, and whether an approved change could be
applied), the mode it ran in and the passage it asked about — is kept by
every copy of the thread: a branch (conversations.branching) and an
imported archive (conversations.archive). Without the card a copied
transcript would read as if a rejected rewrite had happened."""

import copy
import json

import pytest
from channels.db import database_sync_to_async

from agent.context import Selection
from conversations.archive import archive_bytes, import_archive, thread_archive
from conversations.branching import fork_thread
from conversations.models import Turn
from conversations.turns import approval_claims, registry, slot
from tests.support.fake_model import Reply, tool_call
from tests.support.web import database_rows
from workspace import selectors
from workspace.archive import ArchiveRefused
from workspace.models import DocumentRevision, Thread
from workspace.selectors import Access
from workspace.services import document as document_services
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db(transaction=True)

REJECTED = 'approval-title">Rejected by owner</p>'


@database_sync_to_async
def _prepare(thread):
    outline = plan_services.todo_add(thread=thread, text="Outline")
    plan_services.todo_add(thread=thread, text="Intro", parent=outline)
    plan_services.todo_add(thread=thread, text="Body", parent=outline)
    document_services.document_save(
        thread=thread,
        title="Notes",
        content="Intro line.\n\nThe middle part.\n\nA closing line.",
        author=DocumentRevision.Author.PERSON,
    )


async def _rejected_then_asked_about_a_selection(thread, script):
    """Turn 1 (Plan mode): the agent asks to remove a plan step with its
    sub-steps and the person rejects it. Turn 2 (Explore mode): a message about "The middle part."."""
    await _prepare(thread)
    script(
        Reply(tool_calls=[tool_call("remove_todos", "Dropping the outline.", indices=[1])]),
        Reply(text="Kept it, as you said."),
        Reply(text="That part is fine."),
        default=Reply(text="Branch answer."),
    )
    await registry.start_turn(thread=thread, user_message="drop the outline", mode=Thread.Mode.PLAN)
    await registry.wait_for_turn(thread.pk)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.REJECTED, person=thread.owner)
    await registry.wait_for_turn(thread.pk)
    fresh = await Thread.objects.aget(pk=thread.pk)
    await registry.start_turn(
        thread=fresh,
        user_message="is this part clear?",
        mode=Thread.Mode.EXPLORE,
        selection=Selection(start=13, end=29, text="The middle part."),
    )
    await registry.wait_for_turn(thread.pk)
    return await Thread.objects.aget(pk=thread.pk)


async def _page(async_client, user, thread) -> str:
    await async_client.aforce_login(user)
    return (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()


def _card(page: str, turn: int) -> str:
    return page.split(f'id="turn-{turn}-approval"', 1)[1].split("</section>", 1)[0]


def _as_shown(approval):
    """What a turn's approval shows, without the ids of the source thread's
    rows its request kept for the call (which a copy cannot keep)."""
    if approval is None:
        return None
    return {**approval, "request": {k: v for k, v in approval["request"].items() if k not in ("shown", "listed", "listed_as")}}


@database_sync_to_async
def _rows(thread):
    rows = Turn.objects.filter(thread=thread).order_by("index").values_list("mode", "selection", "approval")
    return [(mode, selection, _as_shown(approval)) for mode, selection, approval in rows]


async def test_a_branch_keeps_the_approval_card_mode_and_selection(owner, thread, script, async_client):
    source = await _rejected_then_asked_about_a_selection(thread, script)
    rows = await _rows(source)
    assert [(mode, selection) for mode, selection, _approval in rows] == [
        ("plan", None),
        ("explore", {"start": 13, "end": 29, "text": "The middle part."}),
    ]
    assert rows[0][2]["decision"] == "rejected" and rows[1][2] is None
    branch = await database_sync_to_async(fork_thread)(source=source, turn_index=2, user=owner)
    assert await _rows(branch) == await _rows(source)
    mode, _selection, approval = (await _rows(branch))[0]
    assert mode == "plan" and approval["decision"] == "rejected"
    assert approval["request"]["summary"] == "Remove 1 plan step together with 2 sub-steps."

    page = await _page(async_client, owner, branch)
    card = _card(page, 1)
    assert REJECTED in card and "Remove 1 plan step together with 2 sub-steps." in card and ">Approve</button>" not in card
    assert '<span class="step-status">Rejected</span>' in page  # the step in the reasoning, from the copied history


async def test_an_imported_thread_keeps_the_approval_card_mode_and_selection(owner, thread, script, async_client):
    source = await _rejected_then_asked_about_a_selection(thread, script)
    raw = await database_sync_to_async(archive_bytes)(source)
    turns = json.loads(raw)["transcript"]["turns"]
    assert [t["mode"] for t in turns] == ["plan", "explore"]
    assert turns[1]["selection"] == {"start": 13, "end": 29, "text": "The middle part."}
    assert turns[0]["approval"]["decision"] == "rejected"
    # The ids of this thread's rows the pending call was resolved by stay behind.
    assert "shown" not in turns[0]["approval"]["request"]
    assert "listed" not in turns[0]["approval"]["request"]
    assert "listed_as" not in turns[0]["approval"]["request"]

    imported = await database_sync_to_async(import_archive)(raw=raw, owner=owner)
    assert await _rows(imported) == await _rows(source)
    page = await _page(async_client, owner, imported)
    assert REJECTED in _card(page, 1) and "Remove 1 plan step together with 2 sub-steps." in _card(page, 1)


async def test_a_card_that_says_the_approved_change_was_not_applied_is_copied_too(owner, thread, script, async_client):
    await _prepare(thread)
    script(Reply(text="One."))
    await registry.start_turn(thread=thread, user_message="one")
    await registry.wait_for_turn(thread.pk)
    row = await Turn.objects.aget(thread=thread, index=1)
    row.approval = {
        "interrupt_id": "i-1",
        "decision": "approved",
        "outcome": "overlap",
        "request": {
            "kind": "document",
            "summary": "Replace the document “Notes”.",
            "details": [],
            "reason": "",
            "call_id": "c-1",
            "document": {"old": "a", "new": "b", "old_title": "Notes", "new_title": "Notes", "version": 1},
        },
    }
    await row.asave(update_fields=["approval"])
    source = await Thread.objects.aget(pk=thread.pk)
    branch = await database_sync_to_async(fork_thread)(source=source, turn_index=1, user=owner)
    imported = await database_sync_to_async(import_archive)(raw=await database_sync_to_async(archive_bytes)(source), owner=owner)
    for copy_ in (branch, imported):
        card = _card(await _page(async_client, owner, copy_), 1)
        assert "could not be applied: the same passage was edited meanwhile. Nothing was overwritten." in card


def _archive_with_a_turn(thread):
    document_services.document_save(thread=thread, title="Notes", content="Some text")
    slot.turn_begin(thread=thread, user_message="first")
    slot.turn_finish(thread=Thread.objects.get(pk=thread.pk), turn_index=1, answer="ok")
    return thread_archive(Thread.objects.get(pk=thread.pk))


def _with_turn_field(archive, key, value):
    changed = copy.deepcopy(archive)
    changed["transcript"]["turns"][0][key] = value
    return json.dumps(changed).encode()


REQUEST = {"kind": "plan", "summary": "Remove 1 plan step together with 2 sub-steps.", "details": ["“Outline”"]}
MALFORMED = [
    ("mode", "reckless", "transcript.turns[0].mode: expected one of"),
    ("mode", ["plan"], "transcript.turns[0].mode: expected one of"),
    ("selection", "The middle", "transcript.turns[0].selection: expected an object"),
    ("selection", {"start": 5, "end": 5, "text": "x"}, "transcript.turns[0].selection.end"),
    ("selection", {"start": 0, "end": 4, "text": "abc"}, "transcript.turns[0].selection.text: 3 characters, but it spans 4"),
    ("selection", {"start": 0, "end": 1, "text": ""}, "transcript.turns[0].selection.text: cannot be empty"),
    ("approval", ["approved"], "transcript.turns[0].approval: expected an object"),
    ("approval", {"decision": "approved"}, "transcript.turns[0].approval.request: expected an object"),
    ("approval", {"request": {**REQUEST, "kind": "everything"}}, "transcript.turns[0].approval.request.kind"),
    ("approval", {"request": {**REQUEST, "summary": {"x": 1}}}, "transcript.turns[0].approval.request.summary"),
    ("approval", {"request": {**REQUEST, "details": [["nested"]]}}, "transcript.turns[0].approval.request.details[0]"),
    ("approval", {"request": REQUEST, "decision": "maybe"}, "transcript.turns[0].approval.decision"),
    ("approval", {"request": REQUEST, "outcome": "<script>"}, "transcript.turns[0].approval.outcome"),
    ("approval", {"request": {**REQUEST, "document": {"old": 1, "new": ""}}}, "approval.request.document.old"),
]


@pytest.mark.parametrize("key, value, message", MALFORMED)
def test_a_malformed_turn_approval_mode_or_selection_is_refused_where_it_is(thread, owner, key, value, message):
    raw = _with_turn_field(_archive_with_a_turn(thread), key, value)
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=raw, owner=owner)
    assert message in refused.value.message
    assert database_rows() == before


def test_an_archive_from_before_turns_kept_their_mode_takes_the_threads(thread, owner):
    archive = _archive_with_a_turn(thread)
    archive["thread"]["mode"] = "plan"
    for key in ("mode", "selection", "approval"):
        del archive["transcript"]["turns"][0][key]
    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    row = Turn.objects.get(thread=imported, index=1)
    assert (row.mode, row.selection, row.approval) == ("plan", None, None)


def test_an_archived_turn_that_waited_for_an_approval_imports_as_interrupted(thread, owner):
    # Nothing paused comes with an archive, so no question could be answered: the turn ended.
    raw = _with_turn_field(_archive_with_a_turn(thread), "status", "awaiting")
    imported = import_archive(raw=raw, owner=owner)
    assert Turn.objects.get(thread=imported, index=1).status == Turn.Status.INTERRUPTED
    # The imported thread takes a message (nothing waits for an answer).
    slot.turn_begin(thread=imported, user_message="next")
    assert selectors.thread_for_user(user=owner, thread_id=imported.pk, level=Access.VIEW).turn_index == 2


UNANSWERED = 'class="approval is-unanswered"'
NOT_ANSWERED = 'approval-title">Not answered: this change was not made</p>'


async def test_a_thread_exported_while_its_card_waits_imports_with_a_card_saying_it_was_not_answered(
    owner, thread, script, async_client
):
    """The copy cannot answer the question (nothing paused came with it):
    its card and its turn say so, the change not made; a branch of the copy
    says the same; the thread exported still waits for its answer."""
    await _prepare(thread)
    script(Reply(tool_calls=[tool_call("remove_todos", "Dropping the outline.", indices=[1])]))
    await registry.start_turn(thread=thread, user_message="drop the outline", user=owner)
    await registry.wait_for_turn(thread.pk)
    source = await Thread.objects.aget(pk=thread.pk)
    assert (await Turn.objects.aget(thread=source, index=1)).status == Turn.Status.AWAITING

    imported = await database_sync_to_async(import_archive)(raw=await database_sync_to_async(archive_bytes)(source), owner=owner)
    row = await Turn.objects.aget(thread=imported, index=1)
    assert row.status == Turn.Status.INTERRUPTED
    assert row.notice == (
        "Interrupted: this turn was waiting for an approval when its thread was exported; the change it asked about was not made."
    )
    assert [t.text for t in await database_sync_to_async(selectors.todos_for)(thread=imported)] == ["Outline", "Intro", "Body"]
    branch = await database_sync_to_async(fork_thread)(source=imported, turn_index=1, user=owner)
    for copy_ in (imported, branch):
        page = await _page(async_client, owner, copy_)
        card = _card(page, 1)
        assert UNANSWERED in page and NOT_ANSWERED in card, card
        assert "Remove 1 plan step together with 2 sub-steps." in card and ">Approve</button>" not in card
        assert "Waiting for your approval" not in page
        assert "the change it asked about was not made." in page

    # The thread exported still waits: its card can be answered.
    page = await _page(async_client, owner, source)
    assert 'id="turn-1-approval" class="approval is-pending"' in page and ">Approve</button>" in _card(page, 1)


async def test_a_thread_whose_agent_gave_a_long_reason_is_restored_from_its_own_export(owner, thread, script, async_client):
    """The agent explained a removal at length (12 000 characters): the
    call is refused without a card (the reason is one sentence), the agent
    asks again in a sentence, and the thread's export imports back."""
    await _prepare(thread)
    script(
        Reply(tool_calls=[tool_call("remove_todos", "Dropping the outline because the brief changed. " * 250, indices=[1])]),
        Reply(tool_calls=[tool_call("remove_todos", "Dropping the outline: the brief changed.", indices=[1])]),
        Reply(text="Done."),
    )
    await registry.start_turn(thread=thread, user_message="drop the outline", user=owner)
    await registry.wait_for_turn(thread.pk)
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk)
    source = await Thread.objects.aget(pk=thread.pk)
    assert (await Turn.objects.aget(thread=source, index=1)).approval["request"]["reason"] == (
        "Dropping the outline: the brief changed."
    )

    imported = await database_sync_to_async(import_archive)(raw=await database_sync_to_async(archive_bytes)(source), owner=owner)
    row = await Turn.objects.aget(thread=imported, index=1)
    assert row.approval["decision"] == approval_claims.APPROVED and row.status == Turn.Status.COMPLETE
    assert [t.text for t in await database_sync_to_async(selectors.todos_for)(thread=imported)] == []
    card = _card(await _page(async_client, owner, imported), 1)
    assert "Approved by owner" in card and "Dropping the outline: the brief changed." in card
