"""Document, objective, plan and preference tools: envelope and database effect."""

import pytest

from workspace import selectors
from workspace.models import Preference
from workspace.services import document as document_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

from .tools_helpers import call, db

pytestmark = pytest.mark.django_db(transaction=True)


def _plan(thread):
    return [(t.text, t.depth, t.done) for t in selectors.todos_for(thread=thread)]


def _prefs(thread):
    return [(p.title, p.subtitle, p.kind, p.locked) for p in selectors.preferences_for(thread=thread)]


# --- document ------------------------------------------------------------------------


async def test_update_document_replaces_content_and_title(thread):
    result = await call(thread, "update_document", content="# Review\n\nBody.", title="Lit review draft")
    assert result["success"] is True
    assert "Lit review draft" in result["summary"]
    document = await db(selectors.document_for, thread=thread)
    assert (document.title, document.content) == ("Lit review draft", "# Review\n\nBody.")
    assert "artifact" not in result


async def test_update_document_without_content_fails_and_writes_nothing(thread):
    result = await call(thread, "update_document", title="Only a title")
    assert result["success"] is False
    assert "content" in result["error"] and "Field required" in result["error"]
    document = await db(selectors.document_for, thread=thread)
    assert document.pk is None


async def test_append_to_document_adds_to_the_end(thread):
    await db(document_services.document_save, thread=thread, content="First line")
    result = await call(thread, "append_to_document", text="Second line")
    assert result["success"] is True
    document = await db(selectors.document_for, thread=thread)
    assert document.content == "First line\nSecond line"


async def test_append_blank_text_fails_with_service_message(thread):
    result = await call(thread, "append_to_document", text="   ")
    assert result == {"success": False, "error": "Text to append cannot be empty."}


# --- objective -----------------------------------------------------------------------


async def test_set_objective_stores_the_text(thread):
    result = await call(thread, "set_objective", text="Write a 2-page review of CRISPR delivery methods")
    assert result["success"] is True
    assert await db(selectors.objective_text_for, thread=thread) == "Write a 2-page review of CRISPR delivery methods"


async def test_set_objective_empty_fails_and_keeps_standing_objective(thread):
    result = await call(thread, "set_objective", text="")
    assert result == {"success": False, "error": "Objective cannot be empty."}
    assert await db(selectors.objective_text_for, thread=thread) is None


# --- plan ----------------------------------------------------------------------------


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
    assert result["summary"] == "#1 [ ] 1 Outline\n  #2 [x] 1.1 Draft 1\n#3 [ ] 2 Cite"


# --- preferences ---------------------------------------------------------------------


async def test_add_preferences_records_items_without_duplicates(thread):
    result = await call(
        thread,
        "add_preferences",
        items=[{"title": "British English", "kind": "soft"}, {"title": "Cite sources", "subtitle": "APA", "kind": "hard"}],
    )
    assert result["success"] is True
    assert "Recorded 'British English' (soft)" in result["summary"]
    result = await call(thread, "add_preferences", items=[{"title": "british english", "kind": "soft"}])
    assert result["success"] is True and result["summary"].startswith("Skipped: 'british english' already recorded")
    assert await db(_prefs, thread) == [
        ("Cite sources", "APA", "hard", False),
        ("British English", "", "soft", False),
    ]


async def test_add_preferences_rejects_bad_kind_and_missing_title(thread):
    result = await call(thread, "add_preferences", items=[{"title": "Formal", "kind": "medium"}])
    assert result["success"] is False and "items → item 1 → kind" in result["error"]
    result = await call(thread, "add_preferences", items=[{"kind": "hard"}])
    assert result["success"] is False and "items → item 1 → title: Field required" in result["error"]
    assert await db(_prefs, thread) == []


async def test_list_preferences_hard_first_with_lock_marker(thread):
    assert (await call(thread, "list_preferences"))["summary"] == "(none recorded yet)"
    await db(preferences_services.preference_add, thread=thread, title="Academic tone", subtitle="Formal", kind="soft", respect_lock=False)
    locked = await db(preferences_services.preference_add, thread=thread, title="Citation required", kind="hard", respect_lock=False)
    await db(preferences_services.preference_set_locked, preference=locked, locked=True, respect_lock=False)
    result = await call(thread, "list_preferences")
    assert result["summary"] == "#1 [hard] Citation required (locked)\n#2 [soft] Academic tone — Formal"


async def _two_prefs_one_locked(thread):
    locked = await db(preferences_services.preference_add, thread=thread, title="Citation required", kind="hard", respect_lock=False)
    await db(preferences_services.preference_set_locked, preference=locked, locked=True, respect_lock=False)
    await db(preferences_services.preference_add, thread=thread, title="Academic tone", kind="soft", respect_lock=False)


async def test_update_preferences_skips_locked_and_reports_it(thread):
    await _two_prefs_one_locked(thread)
    result = await call(
        thread,
        "update_preferences",
        updates=[{"index": 1, "title": "No citations"}, {"index": 2, "subtitle": "Formal and objective"}],
    )
    assert result["success"] is True
    assert "Updated 'Academic tone'." in result["summary"]
    assert "Preference 'Citation required' is locked and cannot be modified; ask the user to unlock it first." in result["summary"]
    assert await db(_prefs, thread) == [
        ("Citation required", "", "hard", True),
        ("Academic tone", "Formal and objective", "soft", False),
    ]


async def test_update_preferences_all_locked_is_a_failure(thread):
    await _two_prefs_one_locked(thread)
    result = await call(thread, "update_preferences", updates=[{"index": 1, "kind": "soft"}])
    assert result == {
        "success": False,
        "error": "Preference 'Citation required' is locked and cannot be modified; ask the user to unlock it first.",
    }
    assert (await db(_prefs, thread))[0] == ("Citation required", "", "hard", True)


async def test_update_preferences_bad_index_fails(thread):
    await _two_prefs_one_locked(thread)
    result = await call(thread, "update_preferences", updates=[{"index": 3, "title": "X"}])
    assert result == {
        "success": False,
        "error": "Preference index 3 is out of range; there are 2 preferences (1-based).",
    }


async def test_remove_preferences_skips_locked_and_reports_it(thread):
    await _two_prefs_one_locked(thread)
    result = await call(thread, "remove_preferences", indices=[1, 2])
    assert result["success"] is True
    assert "Removed 'Academic tone'." in result["summary"]
    assert "is locked and cannot be removed; ask the user to unlock it first." in result["summary"]
    assert await db(_prefs, thread) == [("Citation required", "", "hard", True)]


async def test_remove_preferences_all_locked_is_a_failure(thread):
    await _two_prefs_one_locked(thread)
    result = await call(thread, "remove_preferences", indices=[1])
    assert result["success"] is False
    assert result["error"].endswith("ask the user to unlock it first.")
    assert await db(Preference.objects.filter(thread=thread).count) == 2
