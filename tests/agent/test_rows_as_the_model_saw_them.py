"""The agent's plan and preference calls act on the rows as its prompt
showed them: an index names the row shown at that #N, and a row someone
changed since keeps their change (docs/adr/0113, 0115). The real agent loop,
a scripted model, and the person's edits made on another connection while
the model "thinks"."""

import pytest
from asgiref.sync import sync_to_async
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent.approval_request import ApprovalRequest
from agent.builder import build_agent
from agent.context import AgentContext
from conversations.turns.approval_claims import APPROVED
from conversations.turns.approval_record import TurnApproval
from conversations.turns.run import Resume, resumed_call
from tests.agent.scripted_turn import tool_results_of_a_turn
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call
from tests.support.requests import as_another_request
from workspace import selectors
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)


def _plan(thread):
    return [(step.text, step.done) for step in selectors.plan_steps(thread=thread)]


def _steps(thread, *texts, parent_index=None):
    plan_services.todos_add_outline(thread=thread, steps=[{"text": t, "depth": 0} for t in texts], parent_index=parent_index)


def _preferences(thread):
    return [p.title for p in selectors.preferences_for(thread=thread)]


async def test_a_step_the_person_adds_above_while_the_model_thinks_does_not_turn_its_tick_onto_another(thread):
    await sync_to_async(_steps)(thread, "Collect figures", "Draft", "Cite sources")

    def reply(messages):
        # Shown #1 Collect figures, #2 Draft, #3 Cite sources; the person then
        # adds a sub-step under the first, and "Cite sources" is now #4.
        as_another_request(lambda: _steps(thread, "Ask finance", parent_index=1))
        return Reply(tool_calls=[tool_call("toggle_todos", "Ticking off the citations.", indices=[3])])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert "Cite sources" in result.content
    assert await sync_to_async(_plan)(thread) == [
        ("Collect figures", False),
        ("Ask finance", False),
        ("Draft", False),
        ("Cite sources", True),
    ]


async def test_a_removal_of_a_step_the_person_removed_meanwhile_removes_nothing_else_and_says_so(thread):
    await sync_to_async(_steps)(thread, "Collect figures", "Draft", "Cite sources")

    def reply(messages):
        as_another_request(lambda: plan_services.todos_remove_by_index(thread=thread, indices=[2]))
        return Reply(tool_calls=[tool_call("remove_todos", "Dropping the draft step.", indices=[2])])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert "Step #2 of the plan you were shown was removed since, so nothing was changed" in result.content
    # Before, index 2 was "Cite sources" by then, and it went.
    assert await sync_to_async(_plan)(thread) == [("Collect figures", False), ("Cite sources", False)]


async def test_two_calls_of_one_reply_both_mean_the_plan_the_reply_was_shown(thread):
    await sync_to_async(_steps)(thread, "Collect figures", "Draft", "Cite sources")
    # The sub-step goes in under #1 before the rewrite runs: "Cite sources" is #4 by then.
    calls = [
        tool_call("add_todos", "Adding a sub-step.", steps=[{"text": "Ask finance", "depth": 0}], parent_index=1),
        tool_call("update_todos", "Sharpening the last step.", updates=[{"index": 3, "text": "Cite every source"}]),
    ]
    results = await tool_results_of_a_turn(thread, [Reply(tool_calls=calls)])
    assert all('"success": true' in r.content for r in results), [r.content for r in results]
    assert await sync_to_async(_plan)(thread) == [
        ("Collect figures", False),
        ("Ask finance", False),
        ("Draft", False),
        ("Cite every source", False),
    ]


async def test_a_step_the_reply_added_itself_is_found_past_the_end_of_what_it_was_shown(thread):
    calls = [
        tool_call("add_todos", "Laying out the plan.", steps=[{"text": "Collect figures", "depth": 0}]),
        tool_call("toggle_todos", "Ticking off the first step.", indices=[1]),
    ]
    await tool_results_of_a_turn(thread, [Reply(tool_calls=calls)])
    assert await sync_to_async(_plan)(thread) == [("Collect figures", True)]


async def test_a_step_the_reply_adds_then_ticks_is_its_own_though_the_person_added_one_meanwhile(thread):
    await sync_to_async(_steps)(thread, "Collect figures", "Draft", "Cite sources")

    def reply(messages):
        # Shown #1 to #3; the person adds a sub-step under #1 while the model thinks.
        as_another_request(lambda: _steps(thread, "Ask finance", parent_index=1))
        return Reply(
            tool_calls=[
                tool_call("add_todos", "Adding a last step.", steps=[{"text": "Send to the board", "depth": 0}]),
                # Its new step comes after the three it was shown: #4.
                tool_call("toggle_todos", "Ticking the step I just added.", indices=[4]),
            ]
        )

    await tool_results_of_a_turn(thread, [reply])

    assert await sync_to_async(_plan)(thread) == [
        ("Collect figures", False),
        ("Ask finance", False),
        ("Draft", False),
        ("Cite sources", False),
        ("Send to the board", True),
    ]


def _add_preference(thread, title, kind):
    preference_services.preference_add(thread=thread, title=title, kind=kind, respect_lock=False)


async def test_a_preference_the_person_adds_meanwhile_does_not_turn_an_edit_onto_another(thread):
    for title, kind in (("Cite sources", "hard"), ("Short answers", "soft"), ("British spelling", "soft")):
        await sync_to_async(_add_preference)(thread, title, kind)

    def reply(messages):
        # Shown #3 British spelling; a hard one added now comes before the soft ones.
        as_another_request(lambda: _add_preference(thread, "No jargon", "hard"))
        return Reply(tool_calls=[tool_call("update_preferences", "As asked.", updates=[{"index": 3, "kind": "hard"}])])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert "British spelling" in result.content
    kinds = await sync_to_async(lambda: {p.title: p.kind for p in selectors.preferences_for(thread=thread)})()
    assert kinds == {"Cite sources": "hard", "No jargon": "hard", "Short answers": "soft", "British spelling": "hard"}


async def test_the_removal_the_person_approves_is_of_the_preference_the_card_named(thread):
    """Asked, answered and resumed as conversations.turns does it: the card
    names the preference the model was shown at #3, and the resumed call
    removes that one though the person added two hard ones meanwhile."""
    for title, kind in (("Cite sources", "hard"), ("Short answers", "soft"), ("British spelling", "soft")):
        await sync_to_async(_add_preference)(thread, title, kind)

    def reply(messages):
        as_another_request(lambda: _add_preference(thread, "No jargon", "hard"))
        return Reply(tool_calls=[tool_call("remove_preferences", "The person asked to drop it.", indices=[3])])

    model = ScriptedChatModel(script=[reply, Reply(text="Removed.")])
    graph = build_agent(model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(thread.pk)}}
    await graph.ainvoke({"messages": [HumanMessage("drop it")]}, config, context=AgentContext(thread=thread, turn_index=1))
    [pending] = (await graph.aget_state(config)).interrupts
    assert pending.value["details"] == ["“British spelling” (soft)"]

    # While the card waits, another hard preference moves the soft ones down again.
    await sync_to_async(_add_preference)(thread, "Plain words", "hard")
    row = TurnApproval(interrupt_id=pending.id, request=ApprovalRequest.from_json(pending.value))
    answer = resumed_call(Resume(decision=APPROVED, approval=row))
    await graph.ainvoke(
        Command(resume={pending.id: {"approved": True}}),
        config,
        context=AgentContext(thread=thread, turn_index=1, resuming=answer),
    )
    assert await sync_to_async(_preferences)(thread) == ["Cite sources", "No jargon", "Plain words", "Short answers"]


async def test_a_step_the_person_ticks_while_the_model_thinks_stays_ticked(thread):
    await sync_to_async(_steps)(thread, "Collect figures", "Draft", "Cite sources")

    def reply(messages):
        # Shown "#2 [ ] Draft"; the person ticks it; the model ticks it too.
        as_another_request(lambda: plan_services.todos_toggle_by_index(thread=thread, indices=[2]))
        return Reply(tool_calls=[tool_call("toggle_todos", "Ticking off the draft and the citations.", indices=[2, 3])])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert "'Draft' is already marked done: it was marked so after you were shown the plan" in result.content
    assert await sync_to_async(_plan)(thread) == [("Collect figures", False), ("Draft", True), ("Cite sources", True)]


async def test_a_step_the_person_rewrites_while_the_model_thinks_keeps_their_text(thread):
    await sync_to_async(_steps)(thread, "Collect figures", "Draft")

    def reply(messages):
        as_another_request(
            lambda: plan_services.todos_update_by_index(thread=thread, updates=[{"index": 2, "text": "Draft the summary"}])
        )
        updates = [{"index": 2, "text": "Draft the report"}, {"index": 1, "text": "Collect Q1 figures"}]
        return Reply(tool_calls=[tool_call("update_todos", "Sharpening the steps.", updates=updates)])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert "Step 'Draft the summary' was rewritten after you were shown it (it read 'Draft')" in result.content
    assert await sync_to_async(_plan)(thread) == [("Collect Q1 figures", False), ("Draft the summary", False)]


async def test_a_step_the_person_rewrites_or_ticks_while_the_model_thinks_is_not_removed(thread):
    await sync_to_async(_steps)(thread, *(f"Step {i}" for i in range(300)))

    def reply(messages):
        # Shown "#4 [ ] Step 3" and "#251 [ ] Step 250"; the person rewrites the
        # first with their notes and ticks the second: neither is redundant now.
        def the_person_edits():
            plan_services.todos_update_by_index(thread=thread, updates=[{"index": 4, "text": "Step 3: call Dr Ruiz (Ann)"}])
            plan_services.todos_toggle_by_index(thread=thread, indices=[251])

        as_another_request(the_person_edits)
        return Reply(tool_calls=[tool_call("remove_todos", "These look redundant.", indices=[4, 251, 6])])

    [result] = await tool_results_of_a_turn(thread, [reply])
    plan = await sync_to_async(_plan)(thread)
    assert ("Step 3: call Dr Ruiz (Ann)", False) in plan and ("Step 250", True) in plan
    assert ("Step 5", False) not in plan and len(plan) == 299  # the unchanged step shown as #6 went
    assert "'Step 3: call Dr Ruiz (Ann)' (not done) was changed after you were shown it (it read 'Step 3'" in result.content
    assert "'Step 250' (done) was changed after you were shown it" in result.content


async def test_a_removal_of_steps_all_changed_meanwhile_changes_nothing_and_records_no_history(thread):
    await sync_to_async(_steps)(thread, "Collect figures", "Draft")

    def reply(messages):
        as_another_request(lambda: plan_services.todos_toggle_by_index(thread=thread, indices=[2]))
        return Reply(tool_calls=[tool_call("remove_todos", "Dropping the draft.", indices=[2])])

    history = await sync_to_async(lambda: thread.plan_changes.count())()
    [result] = await tool_results_of_a_turn(thread, [reply])
    assert await sync_to_async(_plan)(thread) == [("Collect figures", False), ("Draft", True)]
    assert "was changed after you were shown it" in result.content
    assert await sync_to_async(lambda: thread.plan_changes.count())() == history + 1  # the person's tick only


async def test_a_preference_the_person_edits_while_the_model_thinks_keeps_their_edit(thread):
    await sync_to_async(_add_preference)(thread, "Short answers", "soft")

    def reply(messages):
        as_another_request(
            lambda: preference_services.preferences_update_by_index(
                thread=thread, updates=[{"index": 1, "title": "Answers under 100 words"}], respect_lock=False
            )
        )
        return Reply(tool_calls=[tool_call("update_preferences", "As asked.", updates=[{"index": 1, "kind": "hard"}])])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert '"success": false' in result.content and "was edited after you were shown it" in result.content
    kinds = await sync_to_async(lambda: [(p.title, p.kind) for p in selectors.preferences_for(thread=thread)])()
    assert kinds == [("Answers under 100 words", "soft")]


async def test_a_preference_the_reply_adds_then_edits_is_its_own_though_the_person_added_a_hard_one(thread):
    for title, kind in (("Cite sources", "hard"), ("Short answers", "soft"), ("British spelling", "soft")):
        await sync_to_async(_add_preference)(thread, title, kind)

    def reply(messages):
        # A hard preference goes before the soft ones the model was shown.
        as_another_request(lambda: _add_preference(thread, "No jargon", "hard"))
        return Reply(
            tool_calls=[
                tool_call("add_preferences", "Recording it.", items=[{"title": "Tables over prose", "kind": "soft"}]),
                tool_call("update_preferences", "Making it firm, as asked.", updates=[{"index": 4, "kind": "hard"}]),
            ]
        )

    await tool_results_of_a_turn(thread, [reply])

    kinds = await sync_to_async(lambda: {p.title: p.kind for p in selectors.preferences_for(thread=thread)})()
    assert kinds == {
        "Cite sources": "hard",
        "No jargon": "hard",
        "Short answers": "soft",
        "British spelling": "soft",
        "Tables over prose": "hard",
    }
