"""workspace.services.preferences, checked against what the database holds
afterwards: fields, batches by index (hard first), locks, stale objects."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.workspace.helpers import _prefs
from workspace import selectors
from workspace.errors import InvalidInput, NotFound, PreferenceLocked
from workspace.models import PREFERENCE_TITLE_MAX_CHARS, Preference, Thread
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db

# The agent is told the preference is locked and the user must unlock it
# first (docs/adr/0072); the agent tools' tests pin the full text.
LOCKED_HINT = "ask the user to unlock it first."


def test_preference_add_appends_with_cleaned_fields(thread):
    first = preferences_services.preference_add(
        thread=thread, title=" APA style ", subtitle=" 7th ed ", kind="hard", respect_lock=True
    )
    second = preferences_services.preference_add(thread=thread, title="Be brief", respect_lock=False)
    assert (first.title, first.subtitle, first.kind, first.locked) == ("APA style", "7th ed", "hard", False)
    assert second.kind == "soft"
    assert second.position > first.position


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"title": ""}, "Title cannot be empty."),
        ({"title": "x" * (PREFERENCE_TITLE_MAX_CHARS + 1)}, "Title is too long"),
        ({"title": "ok", "kind": "medium"}, "Kind must be 'hard' or 'soft', not 'medium'."),
        ({"title": "ok", "subtitle": "s" * 501}, "Subtitle is too long"),
    ],
)
def test_preference_add_refuses_bad_input(thread, kwargs, message):
    with pytest.raises(InvalidInput) as exc:
        preferences_services.preference_add(thread=thread, respect_lock=False, **kwargs)
    assert exc.value.message.startswith(message)
    assert not Preference.objects.exists()


def test_preferences_add_dedupes_case_insensitively_within_and_across_batches(thread):
    preferences_services.preference_add(thread=thread, title="Use British spelling", respect_lock=False)
    result = preferences_services.preferences_add(
        thread=thread,
        items=[
            {"title": "use british SPELLING", "kind": "hard"},
            {"title": "Cite sources", "kind": "hard"},
            {"title": "cite sources"},
        ],
        respect_lock=True,
    )
    assert _prefs(thread) == [("Cite sources", "hard", False), ("Use British spelling", "soft", False)]
    assert result.done == ["recorded 'Cite sources' (hard)"]
    assert len(result.skipped) == 2
    assert all("already recorded" in skipped for skipped in result.skipped)


def test_preferences_add_writes_a_batch_in_order_with_one_insert_and_one_count(thread):
    preferences_services.preference_add(thread=thread, title="First", respect_lock=False)
    before = Thread.objects.get(pk=thread.pk).preferences_writes
    with CaptureQueriesContext(connection) as queries:
        result = preferences_services.preferences_add(
            thread=thread, items=[{"title": f"Added {i}", "subtitle": f"s{i}"} for i in range(3)], respect_lock=True
        )
    rows = list(
        Preference.objects.filter(thread=thread).order_by("position", "id").values_list("pk", "title", "subtitle", "position")
    )
    assert [(title, subtitle) for _, title, subtitle, _ in rows] == [("First", ""), *((f"Added {i}", f"s{i}") for i in range(3))]
    assert [position for *_, position in rows] == [0, 1, 2, 3]
    assert result.added == {pk: (title, subtitle, "soft") for pk, title, subtitle, _ in rows[1:]}
    assert Thread.objects.get(pk=thread.pk).preferences_writes == before + 1
    assert sum("INSERT" in query["sql"] for query in queries.captured_queries) == 1


def test_preferences_add_validates_every_item_before_writing(thread):
    with pytest.raises(InvalidInput) as exc:
        preferences_services.preferences_add(
            thread=thread, items=[{"title": "Fine"}, {"title": "Bad", "kind": "nope"}], respect_lock=True
        )
    assert exc.value.message.startswith("Item 2: Kind must be")
    assert not Preference.objects.exists()
    with pytest.raises(InvalidInput, match="at least one"):
        preferences_services.preferences_add(thread=thread, items=[], respect_lock=True)


def test_preference_update_changes_only_given_fields(thread):
    preference = preferences_services.preference_add(thread=thread, title="Tone", subtitle="formal", respect_lock=False)
    preferences_services.preference_update(preference=preference, kind="hard", respect_lock=True)
    preference.refresh_from_db()
    assert (preference.title, preference.subtitle, preference.kind) == ("Tone", "formal", "hard")


def test_preference_update_validates(thread):
    preference = preferences_services.preference_add(thread=thread, title="Tone", respect_lock=False)
    with pytest.raises(InvalidInput):
        preferences_services.preference_update(preference=preference, title=" ", respect_lock=False)
    with pytest.raises(InvalidInput):
        preferences_services.preference_update(preference=Preference.objects.get(), kind="maybe", respect_lock=False)
    assert _prefs(thread) == [("Tone", "soft", False)]


def test_locked_preference_refuses_the_agent_and_accepts_the_person(thread):
    preference = preferences_services.preference_add(thread=thread, title="No jargon", respect_lock=False)
    preferences_services.preference_set_locked(preference=preference, locked=True, respect_lock=False)
    with pytest.raises(PreferenceLocked) as exc:
        preferences_services.preference_update(preference=preference, title="Some jargon", respect_lock=True)
    assert exc.value.message == "Preference 'No jargon' is locked and cannot be modified; ask the user to unlock it first."
    with pytest.raises(PreferenceLocked) as exc:
        preferences_services.preference_delete(preference=preference, respect_lock=True)
    assert exc.value.message == "Preference 'No jargon' is locked and cannot be removed; ask the user to unlock it first."
    assert _prefs(thread) == [("No jargon", "soft", True)]

    preferences_services.preference_update(preference=preference, title="Some jargon", respect_lock=False)
    assert _prefs(thread) == [("Some jargon", "soft", True)]
    preferences_services.preference_delete(preference=preference, respect_lock=False)
    assert _prefs(thread) == []


def test_preference_set_locked_is_refused_on_the_agent_path(thread):
    preference = preferences_services.preference_add(thread=thread, title="No jargon", respect_lock=False)
    with pytest.raises(PreferenceLocked, match="Only the user"):
        preferences_services.preference_set_locked(preference=preference, locked=True, respect_lock=True)
    assert not Preference.objects.get().locked
    preferences_services.preference_set_locked(preference=preference, locked=True, respect_lock=False)
    assert Preference.objects.get().locked
    preferences_services.preference_set_locked(preference=preference, locked=False, respect_lock=False)
    assert not Preference.objects.get().locked


def test_preferences_update_by_index_uses_hard_first_order(mixed_preferences):
    thread = mixed_preferences
    result = preferences_services.preferences_update_by_index(
        thread=thread, updates=[{"index": 1, "title": "B2"}, {"index": 3, "kind": "hard"}], respect_lock=True
    )
    assert result.done == ["updated 'B2'", "updated 'A'"]
    assert _prefs(thread) == [("A", "hard", False), ("B2", "hard", False), ("D", "hard", False), ("C", "soft", False)]


def test_preferences_update_by_index_skips_locked_on_agent_path(mixed_preferences):
    thread = mixed_preferences
    preferences_services.preference_set_locked(preference=Preference.objects.get(title="D"), locked=True, respect_lock=False)
    result = preferences_services.preferences_update_by_index(
        thread=thread, updates=[{"index": 2, "title": "D2"}, {"index": 4, "title": "C2"}], respect_lock=True
    )
    assert result.done == ["updated 'C2'"]
    assert result.skipped == ["Preference 'D' is locked and cannot be modified; " + LOCKED_HINT]
    assert [p.title for p in selectors.preferences_for(thread=thread)] == ["B", "D", "A", "C2"]

    preferences_services.preferences_update_by_index(thread=thread, updates=[{"index": 2, "title": "D2"}], respect_lock=False)
    assert Preference.objects.filter(title="D2", locked=True).exists()


@pytest.mark.parametrize(
    "updates, message",
    [
        ([{"index": 5, "title": "x"}], "Preference index 5 is out of range; there are 4 preferences (1-based)."),
        ([{"index": 0, "title": "x"}], "Preference index 0 is out of range"),
        ([{"index": "1", "title": "x"}], "Index '1' is not a number."),
        ([{"index": 1}], "Update for index 1 changes nothing"),
        ([{"index": 1, "title": "ok"}, {"index": 2, "kind": "odd"}], "Kind must be"),
        ([], "Give at least one update."),
    ],
)
def test_preferences_update_by_index_bad_batch_changes_nothing(mixed_preferences, updates, message):
    before = _prefs(mixed_preferences)
    with pytest.raises(InvalidInput) as exc:
        preferences_services.preferences_update_by_index(thread=mixed_preferences, updates=updates, respect_lock=True)
    assert exc.value.message.startswith(message)
    assert _prefs(mixed_preferences) == before


def test_preferences_update_by_index_on_empty_list_says_so(thread):
    with pytest.raises(InvalidInput) as exc:
        preferences_services.preferences_update_by_index(thread=thread, updates=[{"index": 1, "title": "x"}], respect_lock=True)
    assert exc.value.message == "Preference index 1 is out of range; there are no preferences yet."


def test_preferences_remove_by_index_removes_by_hard_first_index_and_ignores_duplicates(mixed_preferences):
    result = preferences_services.preferences_remove_by_index(thread=mixed_preferences, indices=[3, 1, 3], respect_lock=True)
    assert result.done == ["removed 'A'", "removed 'B'"]
    assert [p.title for p in selectors.preferences_for(thread=mixed_preferences)] == ["D", "C"]


def test_preferences_remove_by_index_skips_locked_then_person_removes_it(mixed_preferences):
    thread = mixed_preferences
    preferences_services.preference_set_locked(preference=Preference.objects.get(title="B"), locked=True, respect_lock=False)
    result = preferences_services.preferences_remove_by_index(thread=thread, indices=[1, 2], respect_lock=True)
    assert result.done == ["removed 'D'"]
    assert result.skipped == ["Preference 'B' is locked and cannot be removed; " + LOCKED_HINT]
    preferences_services.preferences_remove_by_index(thread=thread, indices=[1], respect_lock=False)
    assert [p.title for p in selectors.preferences_for(thread=thread)] == ["A", "C"]


def test_preferences_remove_by_index_out_of_range_changes_nothing(mixed_preferences):
    with pytest.raises(InvalidInput, match="Preference index 9 is out of range; there are 4"):
        preferences_services.preferences_remove_by_index(thread=mixed_preferences, indices=[1, 9], respect_lock=True)
    assert Preference.objects.count() == 4
    with pytest.raises(InvalidInput, match="at least one"):
        preferences_services.preferences_remove_by_index(thread=mixed_preferences, indices=[], respect_lock=True)


# --- stale preference objects (another tab or the agent changed the row meanwhile) ---


def test_agent_edit_with_a_stale_object_still_respects_a_lock_set_meanwhile(thread):
    loaded = preferences_services.preference_add(thread=thread, title="No jargon", respect_lock=False)
    preferences_services.preference_set_locked(preference=Preference.objects.get(pk=loaded.pk), locked=True, respect_lock=False)
    with pytest.raises(PreferenceLocked):
        preferences_services.preference_update(preference=loaded, title="Jargon is fine", respect_lock=True)
    with pytest.raises(PreferenceLocked):
        preferences_services.preference_delete(preference=loaded, respect_lock=True)
    assert _prefs(thread) == [("No jargon", "soft", True)]


def test_person_edit_with_a_stale_object_keeps_a_lock_set_meanwhile(thread):
    loaded = preferences_services.preference_add(thread=thread, title="No jargon", respect_lock=False)
    preferences_services.preference_set_locked(preference=Preference.objects.get(pk=loaded.pk), locked=True, respect_lock=False)
    preferences_services.preference_update(preference=loaded, title="Plain words", respect_lock=False)
    assert _prefs(thread) == [("Plain words", "soft", True)]


def test_editing_a_preference_deleted_meanwhile_does_not_bring_it_back(thread):
    loaded = preferences_services.preference_add(thread=thread, title="Gone soon", respect_lock=False)
    preferences_services.preference_delete(preference=Preference.objects.get(pk=loaded.pk), respect_lock=False)
    for write in (
        lambda: preferences_services.preference_update(preference=loaded, title="Back?", respect_lock=False),
        lambda: preferences_services.preference_set_locked(preference=loaded, locked=True, respect_lock=False),
        lambda: preferences_services.preference_delete(preference=loaded, respect_lock=False),
    ):
        with pytest.raises(NotFound) as exc:
            write()
        assert exc.value.message == "That preference no longer exists."
    assert not Preference.objects.exists()


def test_an_agent_batch_keeps_a_persons_edit_committed_after_the_batch_read_the_rows(thread, monkeypatch):
    """The agent's batch reads the preferences, then the person's rename
    commits, then the batch writes the same title: the person's title stays
    and the agent is told (the race between the batch's read and its write)."""
    shown = preferences_services.preference_add(thread=thread, title="Formal tone", respect_lock=False)
    read_before_the_person = selectors.preferences_for(thread=thread)
    preferences_services.preference_update(
        preference=Preference.objects.get(pk=shown.pk), title="Warm but formal", respect_lock=False
    )
    monkeypatch.setattr(preferences_services.selectors, "preferences_for", lambda thread: read_before_the_person)

    result = preferences_services.preferences_update_by_index(
        thread=thread,
        updates=[{"index": 1, "title": "Casual tone"}],
        respect_lock=True,
        values_shown={shown.pk: ("Formal tone", "", "soft")},
    )

    monkeypatch.undo()  # the rows as stored, not the batch's stale objects
    assert _prefs(thread) == [("Warm but formal", "soft", False)]
    assert result.skipped == ["'Formal tone' was edited after you were shown it, so it was not changed"]
    assert result.updated == {}


# --- a batch is one write: one locked read, one count, one change -------------------


def _writes(thread) -> int:
    return Thread.objects.values_list("preferences_writes", flat=True).get(pk=thread.pk)


def test_an_update_batch_reads_the_rows_locked_once_and_counts_its_write_once(mixed_preferences):
    thread = mixed_preferences
    before = _writes(thread)
    with CaptureQueriesContext(connection) as queries:
        result = preferences_services.preferences_update_by_index(
            thread=thread,
            updates=[{"index": 1, "title": "B2"}, {"index": 2, "subtitle": "dee"}, {"index": 1, "kind": "soft"}],
            respect_lock=True,
        )
    assert result.done == ["updated 'B2'", "updated 'D'", "updated 'B2'"]
    assert _prefs(thread) == [("D", "hard", False), ("A", "soft", False), ("B2", "soft", False), ("C", "soft", False)]
    assert Preference.objects.get(title="D").subtitle == "dee"
    assert _writes(thread) == before + 1
    statements = [query["sql"] for query in queries.captured_queries if "SAVEPOINT" not in query["sql"]]
    # The batch's own transaction (a savepoint inside the test's), not one per item.
    assert sum("SAVEPOINT" in query["sql"] for query in queries.captured_queries) == 2
    # The list as shown, the rows locked, three saves, the count.
    assert len(statements) == 1 + 1 + 3 + 1, statements


def test_a_remove_batch_deletes_its_rows_at_once_and_counts_its_write_once(mixed_preferences):
    thread = mixed_preferences
    preferences_services.preference_set_locked(preference=Preference.objects.get(title="D"), locked=True, respect_lock=False)
    before = _writes(thread)
    result = preferences_services.preferences_remove_by_index(thread=thread, indices=[1, 2, 4], respect_lock=True)
    assert result.done == ["removed 'B'", "removed 'C'"]
    assert result.skipped == ["Preference 'D' is locked and cannot be removed; " + LOCKED_HINT]
    assert [p.title for p in selectors.preferences_for(thread=thread)] == ["D", "A"]
    assert _writes(thread) == before + 1


def test_a_batch_that_changes_nothing_counts_no_write(mixed_preferences):
    thread = mixed_preferences
    before = _writes(thread)
    preferences_services.preferences_update_by_index(thread=thread, updates=[{"index": 1, "title": "B"}], respect_lock=True)
    Preference.objects.filter(title="B").update(locked=True)
    result = preferences_services.preferences_remove_by_index(thread=thread, indices=[1], respect_lock=True)
    assert result.done == []
    assert _writes(thread) == before
