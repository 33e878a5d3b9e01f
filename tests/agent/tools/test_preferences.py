"""agent.tools.preferences: the preference tools (add, list, update, remove; locks), envelope and database effect."""

import pytest

from tests.agent.tools.helpers import call, db
from workspace import selectors
from workspace.models import Preference
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db(transaction=True)


def _prefs(thread):
    return [(p.title, p.subtitle, p.kind, p.locked) for p in selectors.preferences_for(thread=thread)]


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
    await db(
        preferences_services.preference_add,
        thread=thread,
        title="Academic tone",
        subtitle="Formal",
        kind="soft",
        respect_lock=False,
    )
    locked = await db(
        preferences_services.preference_add, thread=thread, title="Citation required", kind="hard", respect_lock=False
    )
    await db(preferences_services.preference_set_locked, preference=locked, locked=True, respect_lock=False)
    result = await call(thread, "list_preferences")
    assert result["summary"] == "#1 [hard] Citation required (locked)\n#2 [soft] Academic tone — Formal"


async def _two_prefs_one_locked(thread):
    locked = await db(
        preferences_services.preference_add, thread=thread, title="Citation required", kind="hard", respect_lock=False
    )
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
    assert (
        "Preference 'Citation required' is locked and cannot be modified; ask the user to unlock it first." in result["summary"]
    )
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
        "refused": True,  # not run at all: the activity log says so
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
