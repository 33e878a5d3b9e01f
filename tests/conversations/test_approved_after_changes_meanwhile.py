"""An approved call does what its card said, though the person (or another
editor) changed the workspace while the model wrote the call or while the
card waited (docs/adr/0118). Through the real turn runner: the turn asks,
the owner's edit lands, the owner approves, the run resumes."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from langchain_core.messages import ToolMessage

from conversations.models import Turn
from conversations.turns import approval_claims, registry
from tests.support.fake_model import Reply, tool_call
from tests.support.requests import as_another_request
from workspace import selectors
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services
from workspace.services.document import document_save

pytestmark = pytest.mark.django_db(transaction=True)


async def _card_waiting(thread) -> Turn:
    for _ in range(200):
        row = await database_sync_to_async(Turn.objects.get)(thread=thread, index=1)
        if row.status == Turn.Status.AWAITING:
            return row
        await asyncio.sleep(0.05)
    raise AssertionError(f"the turn never asked: {row.status}")


async def _approve(thread, owner):
    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk)


@database_sync_to_async
def _plan(thread) -> list[str]:
    return [step.text for step in selectors.plan_steps(thread=thread)]


@database_sync_to_async
def _titles(thread) -> list[str]:
    return [preference.title for preference in selectors.preferences_for(thread=thread)]


def _tool_results(model) -> list[str]:
    return [m.content for m in model.requests[-1] if isinstance(m, ToolMessage)]


def _report(paragraphs: int = 12) -> str:
    return "".join(f"Paragraph {i}: the findings hold across every region we sampled.\n\n" for i in range(paragraphs))


async def test_an_approved_rewrite_keeps_what_the_owner_wrote_while_the_model_wrote_it(owner, thread, script):
    report = _report()
    await database_sync_to_async(document_save)(thread=thread, title="Report", content=report)
    owners_text = report.replace("Paragraph 4: the findings", "Paragraph 4: the owner's careful findings")
    # Paragraphs 5 to 10 go: enough of the text for the agent to ask first.
    rewrite = "".join(report.split("\n\n")[i] + "\n\n" for i in (0, 1, 2, 3, 4, 11))

    def the_owner_edits_while_the_model_thinks(messages):
        as_another_request(
            lambda: document_save(thread=thread, content=owners_text, base_version=1, author="person", person=owner)
        )
        return Reply(tool_calls=[tool_call("update_document", "Tightening the report.", content=rewrite)])

    script(the_owner_edits_while_the_model_thinks, Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="tighten it")
    await _card_waiting(thread)
    await _approve(thread, owner)

    document = await database_sync_to_async(lambda: selectors.document_for(thread=thread).content)()
    assert "Paragraph 7" not in document  # the approved removal was made
    assert "Paragraph 4: the owner's careful findings" in document


async def test_a_sub_step_the_owner_adds_while_the_card_waits_is_not_removed_with_the_step(owner, thread, script):
    await database_sync_to_async(plan_services.todos_add_outline)(
        thread=thread,
        steps=[
            {"text": "Collect figures", "depth": 0},
            {"text": "Draft", "depth": 0},
            {"text": "Intro", "depth": 1},
            {"text": "Body", "depth": 1},
            {"text": "Cite sources", "depth": 0},
        ],
    )
    model = script(Reply(tool_calls=[tool_call("remove_todos", "Dropping the draft.", indices=[2])]), Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="drop the draft part")
    row = await _card_waiting(thread)
    assert "“Draft” and its 2 sub-steps" in row.approval["request"]["details"]

    await database_sync_to_async(plan_services.todos_add_outline)(
        thread=thread, steps=[{"text": "Keep the Q3 caveat", "depth": 0}], parent_index=2
    )
    await _approve(thread, owner)

    plan = await _plan(thread)
    assert plan == ["Collect figures", "Draft", "Intro", "Body", "Keep the Q3 caveat", "Cite sources"]
    [result] = _tool_results(model)
    assert "changed while the person was asked" in result


async def test_a_preference_the_card_left_out_as_locked_is_not_removed_once_unlocked(owner, thread, script):
    await database_sync_to_async(preference_services.preferences_add)(
        thread=thread,
        items=[{"title": "Formal tone", "kind": "hard"}, {"title": "Short answers", "kind": "soft"}],
        respect_lock=False,
    )
    formal = await database_sync_to_async(lambda: selectors.preferences_for(thread=thread)[0])()
    await database_sync_to_async(preference_services.preference_set_locked)(preference=formal, locked=True, respect_lock=False)
    model = script(Reply(tool_calls=[tool_call("remove_preferences", "Dropping both.", indices=[1, 2])]), Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="drop them")
    row = await _card_waiting(thread)
    assert row.approval["request"]["details"] == ["“Short answers” (soft)"]

    # The owner unlocks "Formal tone" to reword it, then approves the card.
    await database_sync_to_async(preference_services.preference_set_locked)(preference=formal, locked=False, respect_lock=False)
    await _approve(thread, owner)

    titles = await _titles(thread)
    assert "Formal tone" in titles
    [result] = _tool_results(model)
    assert "changed while the person was asked" in result


async def test_a_sub_step_rewritten_while_the_card_waits_is_not_removed_with_the_step(owner, thread, script):
    await database_sync_to_async(plan_services.todos_add_outline)(
        thread=thread,
        steps=[
            *({"text": f"Step {i}", "depth": 0} for i in range(100)),
            {"text": "Ethics board", "depth": 0},
            *({"text": f"Option {i}", "depth": 1} for i in range(3)),
            *({"text": f"Step {i}", "depth": 0} for i in range(104, 300)),
        ],
    )
    model = script(Reply(tool_calls=[tool_call("remove_todos", "Dropping the group.", indices=[101])]), Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="drop the ethics group")
    row = await _card_waiting(thread)
    assert row.approval["request"]["details"] == ["“Ethics board” and its 3 sub-steps"]

    # While the card waits, the owner turns one option into a confirmed booking.
    await database_sync_to_async(plan_services.todos_update_by_index)(
        thread=thread, updates=[{"index": 103, "text": "Booked for 12 March (confirmed)"}]
    )
    await _approve(thread, owner)

    plan = await _plan(thread)
    assert "Booked for 12 March (confirmed)" in plan and "Ethics board" in plan and len(plan) == 300
    [result] = _tool_results(model)
    assert "changed while the person was asked" in result


async def test_a_preference_reworded_while_the_card_waits_is_not_removed(owner, thread, script):
    await database_sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": f"Rule {i}", "kind": "soft"} for i in range(100)], respect_lock=False
    )
    model = script(Reply(tool_calls=[tool_call("remove_preferences", "Dropping rule 40.", indices=[41])]), Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="drop rule 40")
    row = await _card_waiting(thread)
    assert row.approval["request"]["details"] == ["“Rule 40” (soft)"]

    # While the card waits, someone rewords that row into a new hard rule.
    await database_sync_to_async(preference_services.preferences_update_by_index)(
        thread=thread, updates=[{"index": 41, "title": "Never quote paywalled sources", "kind": "hard"}], respect_lock=False
    )
    await _approve(thread, owner)

    titles = await _titles(thread)
    assert "Never quote paywalled sources" in titles and len(titles) == 100
    [result] = _tool_results(model)
    assert "changed while the person was asked" in result


async def test_an_approved_removal_of_unchanged_rows_still_removes_them(owner, thread, script):
    await database_sync_to_async(preference_services.preferences_add)(
        thread=thread,
        items=[{"title": "Formal tone", "kind": "hard"}, {"title": "Short answers", "kind": "soft"}],
        respect_lock=False,
    )
    script(Reply(tool_calls=[tool_call("remove_preferences", "Dropping it.", indices=[2])]), Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="drop short answers")
    await _card_waiting(thread)
    # Another preference changes meanwhile: not one the card lists.
    await database_sync_to_async(preference_services.preferences_update_by_index)(
        thread=thread, updates=[{"index": 1, "title": "Formal, warm tone"}], respect_lock=False
    )
    await _approve(thread, owner)
    titles = await _titles(thread)
    assert titles == ["Formal, warm tone"]


async def test_a_sub_step_ticked_while_the_card_waits_is_still_removed_with_the_step(owner, thread, script):
    await database_sync_to_async(plan_services.todos_add_outline)(
        thread=thread,
        steps=[
            {"text": "Collect figures", "depth": 0},
            {"text": "Draft", "depth": 0},
            {"text": "Intro", "depth": 1},
            {"text": "Body", "depth": 1},
            {"text": "Cite sources", "depth": 0},
        ],
    )
    script(Reply(tool_calls=[tool_call("remove_todos", "Dropping the draft.", indices=[2])]), Reply(text="Done."))
    await registry.start_turn(thread=thread, user_message="drop the draft part")
    await _card_waiting(thread)
    # Ticked, not reworded: the card's words still hold.
    await database_sync_to_async(plan_services.todos_toggle_by_index)(thread=thread, indices=[3])
    await _approve(thread, owner)
    plan = await _plan(thread)
    assert plan == ["Collect figures", "Cite sources"]
