"""agent.tools.todos: the plan tools (add, toggle, update, remove, list), envelope and database effect."""

import pytest

from tests.agent.tools.helpers import call, db
from workspace import selectors
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db(transaction=True)


def _plan(thread):
    return [(t.text, t.depth, t.done) for t in selectors.todos_for(thread=thread)]


async def test_add_todos_outline_then_nested_under_parent(thread):
    result = await call(
        thread,
        "add_todos",
        steps=[{"text": "Outline sections", "depth": 0}, {"text": "Draft intro", "depth": 1}, {"text": "Cite"}],
    )
    assert result["success"] is True
    assert result["summary"] == "Added 3 steps: #1 'Outline sections', #2 'Draft intro', #3 'Cite'."
    result = await call(thread, "add_todos", steps=[{"text": "Draft body", "depth": 0}], parent_index=1)
    assert result["summary"] == "Added 1 step under step #1: #3 'Draft body'."
    assert await db(_plan, thread) == [
        ("Outline sections", 0, False),
        ("Draft intro", 1, False),
        ("Draft body", 1, False),
        ("Cite", 0, False),
    ]


async def test_add_todos_rejects_skipped_depth_and_bad_parent(thread):
    result = await call(thread, "add_todos", steps=[{"text": "A", "depth": 0}, {"text": "B", "depth": 2}])
    assert result["success"] is False
    assert "Step 2: depth 2 skips a level" in result["error"]
    result = await call(thread, "add_todos", steps=[{"text": "A"}], parent_index=4)
    assert result == {"success": False, "error": "Plan index 4 is out of range; the plan is empty."}
    result = await call(thread, "add_todos", steps=[])
    assert result["success"] is False and "steps" in result["error"]
    result = await call(thread, "add_todos", steps=[{"depth": 0}])
    assert result["success"] is False
    assert "steps → item 1 → text: Field required" in result["error"]
    assert await db(_plan, thread) == []


async def test_toggle_todos_flips_done_and_reports(thread):
    await db(plan_services.todos_add_outline, thread=thread, steps=[{"text": "A", "depth": 0}, {"text": "B", "depth": 1}])
    result = await call(thread, "toggle_todos", indices=[2])
    assert result == {"success": True, "summary": "1.1 'B' marked done."}
    assert await db(_plan, thread) == [("A", 0, False), ("B", 1, True)]


async def test_toggle_todos_out_of_range_changes_nothing(thread):
    await db(plan_services.todos_add_outline, thread=thread, steps=[{"text": "A", "depth": 0}])
    result = await call(thread, "toggle_todos", indices=[1, 3])
    assert result == {
        "success": False,
        "error": "Plan index 3 is out of range; the plan has 1 steps (1-based, in outline order).",
    }
    result = await call(thread, "toggle_todos", indices=[0])
    assert result["success"] is False and "indices → item 1" in result["error"]
    assert await db(_plan, thread) == [("A", 0, False)]


async def test_update_todos_rewrites_text(thread):
    await db(plan_services.todos_add_outline, thread=thread, steps=[{"text": "A", "depth": 0}, {"text": "B", "depth": 0}])
    result = await call(thread, "update_todos", updates=[{"index": 2, "text": "B, revised"}])
    assert result["success"] is True and "B, revised" in result["summary"]
    assert await db(_plan, thread) == [("A", 0, False), ("B, revised", 0, False)]
    result = await call(thread, "update_todos", updates=[{"index": 2}])
    assert result["success"] is False and "updates → item 1 → text: Field required" in result["error"]


async def test_remove_todos_removes_subtree(thread):
    await db(
        plan_services.todos_add_outline,
        thread=thread,
        steps=[{"text": "A", "depth": 0}, {"text": "A1", "depth": 1}, {"text": "B", "depth": 0}],
    )
    result = await call(thread, "remove_todos", indices=[1])
    assert result == {"success": True, "summary": "Removed 'A' and 1 sub-steps."}
    assert await db(_plan, thread) == [("B", 0, False)]
    result = await call(thread, "remove_todos", indices=[])
    assert result["success"] is False and "indices" in result["error"]


async def test_list_todos_shows_indices_numbers_and_marks(thread):
    assert (await call(thread, "list_todos"))["summary"] == "(no plan yet)"
    await db(
        plan_services.todos_add_outline,
        thread=thread,
        steps=[{"text": "Outline", "depth": 0}, {"text": "Draft 1", "depth": 1}, {"text": "Cite", "depth": 0}],
    )
    await call(thread, "toggle_todos", indices=[2])
    result = await call(thread, "list_todos")
    assert result["summary"] == "#1 1 [ ] Outline\n#2   1.1 [x] Draft 1\n#3 2 [ ] Cite"


# --- the plan's history (docs/adr/0090) ------------------------------------------


def _history(thread):
    from workspace.models import PlanChange

    return list(
        PlanChange.objects.filter(thread=thread)
        .order_by("id")
        .values_list("summary", "author", "person_username", "token_name", "turn_index")
    )


async def test_each_plan_tool_call_is_one_entry_of_the_history_by_the_agent_for_the_turns_person(owner, thread):
    from workspace.models import Thread

    await db(Thread.objects.filter(pk=thread.pk).update, turn_index=2)
    by = {"person": owner, "turn_index": 2}
    await call(thread, "add_todos", steps=[{"text": "Plan", "depth": 0}, {"text": "Draft", "depth": 1}], **by)
    await call(thread, "toggle_todos", indices=[1, 2], **by)
    await call(thread, "update_todos", updates=[{"index": 2, "text": "Draft it"}], **by)
    await call(thread, "remove_todos", indices=[1], **by)
    await call(thread, "list_todos", **by)  # reads: no entry

    assert await db(_history, thread) == [
        ("Added 2 steps: “Plan”, “Draft”", "agent", "owner", "", 2),
        ("Ticked “Plan”, “Draft”", "agent", "owner", "", 2),
        ("Renamed “Draft” to “Draft it”", "agent", "owner", "", 2),
        ("Removed “Plan” and its sub-step", "agent", "owner", "", 2),
    ]


async def test_a_failed_plan_tool_call_adds_nothing_to_the_history(owner, thread):
    await call(thread, "add_todos", steps=[{"text": "Only"}], person=owner)

    result = await call(thread, "toggle_todos", indices=[1, 7], person=owner)

    assert result["success"] is False
    assert [summary for summary, *_ in await db(_history, thread)] == ["Added “Only”"]


async def test_a_plan_tool_called_through_mcp_is_the_persons_with_the_token(owner, thread):
    from agent.context import Author
    from agent.tools.decorator import run_tool_call
    from agent.tools.todos import add_todos

    author = Author(kind="mcp", token_name="laptop", person=owner)
    arguments = {"action_and_reasoning": "Adding a step.", "steps": [{"text": "From the laptop"}]}
    await db(run_tool_call, add_todos.tool_spec, thread, arguments, author=author)

    assert await db(_history, thread) == [("Added “From the laptop”", "mcp", "owner", "laptop", 0)]


async def test_the_index_the_prompt_shows_before_a_nested_plans_step_is_the_one_its_tools_take(thread):
    """The prompt numbers the outline (1, 1.1, 2) for reading; a model that
    ticks "Cross-check citations" copies the #N before it, which is 4, not 2."""
    from agent.prompt import render_workspace_block

    await db(
        plan_services.todos_add_outline,
        thread=thread,
        steps=[
            {"text": "Outline three sections", "depth": 0},
            {"text": "Draft section 1", "depth": 1},
            {"text": "Draft section 2", "depth": 1},
            {"text": "Cross-check citations", "depth": 0},
        ],
    )
    block = await db(render_workspace_block, thread)
    [line] = [line for line in block.splitlines() if line.endswith("Cross-check citations")]
    assert line == "#4 2 [ ] Cross-check citations"
    index = int(line.split()[0].lstrip("#"))
    assert (await call(thread, "toggle_todos", indices=[index]))["success"] is True
    assert await db(_plan, thread) == [
        ("Outline three sections", 0, False),
        ("Draft section 1", 1, False),
        ("Draft section 2", 1, False),
        ("Cross-check citations", 0, True),
    ]
