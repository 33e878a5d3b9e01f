"""Every write in workspace.services and the reads in workspace.selectors,
checked against what the database holds afterwards."""

import pytest
from django.conf import settings
from django.db import transaction

from workspace import plan_tree, selectors
from workspace.errors import DocumentConflict, InvalidInput, NotFound, PreferenceLocked
from workspace.models import (
    OBJECTIVE_MAX_CHARS,
    PREFERENCE_TITLE_MAX_CHARS,
    TODO_MAX_DEPTH,
    TODO_TEXT_MAX_CHARS,
    Artifact,
    Document,
    Objective,
    Preference,
    Thread,
    Todo,
    WorkspaceSnapshot,
)
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services
from workspace.services import snapshots as snapshots_services

pytestmark = pytest.mark.django_db

# The seeds word it "locked and cannot be modified/removed ... the user must
# unlock it first" (core seed §5.2); the agent tools' tests pin the full text.
LOCKED_HINT = "ask the user to unlock it first."


def _plan(thread):
    return [(t.text, t.depth) for t in selectors.todos_for(thread=thread)]


def _positions(thread):
    return [t.position for t in selectors.todos_for(thread=thread)]


def _prefs(thread):
    return [(p.title, p.kind, p.locked) for p in selectors.preferences_for(thread=thread)]


def _outline(thread, *steps):
    """Build a plan from (text, depth) pairs."""
    plan_services.todos_add_outline(thread=thread, steps=[{"text": t, "depth": d} for t, d in steps])
    return selectors.todos_for(thread=thread)


def _activity(thread):
    return Thread.objects.values_list("last_activity_at", flat=True).get(pk=thread.pk)


# --- objective ------------------------------------------------------------------


def test_objective_set_creates_then_replaces_the_single_objective(thread):
    before = _activity(thread)
    objective_services.objective_set(thread=thread, text="  Draft a review  ")
    objective_services.objective_set(thread=thread, text="Draft a systematic review")
    assert list(Objective.objects.filter(thread=thread).values_list("text", flat=True)) == ["Draft a systematic review"]
    assert _activity(thread) > before


@pytest.mark.parametrize(
    "text, message",
    [("", "Objective cannot be empty."), ("   ", "Objective cannot be empty."), (None, "Objective must be text.")],
)
def test_objective_set_refuses_empty_text(thread, text, message):
    objective_services.objective_set(thread=thread, text="Keep me")
    with pytest.raises(InvalidInput) as exc:
        objective_services.objective_set(thread=thread, text=text)
    assert exc.value.message == message
    assert selectors.objective_text_for(thread=thread) == "Keep me"


def test_objective_set_refuses_over_long_text(thread):
    with pytest.raises(InvalidInput, match="too long"):
        objective_services.objective_set(thread=thread, text="x" * (OBJECTIVE_MAX_CHARS + 1))
    assert not Objective.objects.filter(thread=thread).exists()
    assert selectors.objective_text_for(thread=thread) is None


# --- preferences -----------------------------------------------------------------


def test_preference_add_appends_with_cleaned_fields(thread):
    first = preferences_services.preference_add(thread=thread, title=" APA style ", subtitle=" 7th ed ", kind="hard", respect_lock=True)
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


def test_preferences_add_validates_every_item_before_writing(thread):
    with pytest.raises(InvalidInput) as exc:
        preferences_services.preferences_add(thread=thread, items=[{"title": "Fine"}, {"title": "Bad", "kind": "nope"}], respect_lock=True)
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


@pytest.fixture
def mixed_preferences(thread):
    """Added soft, hard, soft, hard: indices are hard first (B=1, D=2), then soft (A=3, C=4)."""
    for title, kind in (("A", "soft"), ("B", "hard"), ("C", "soft"), ("D", "hard")):
        preferences_services.preference_add(thread=thread, title=title, kind=kind, respect_lock=False)
    return thread


def test_preferences_for_lists_hard_before_soft_then_by_position(mixed_preferences):
    assert [p.title for p in selectors.preferences_for(thread=mixed_preferences)] == ["B", "D", "A", "C"]


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


# --- plan -------------------------------------------------------------------------


def test_todo_add_at_end_and_under_a_parent(thread):
    a = plan_services.todo_add(thread=thread, text="A")
    plan_services.todo_add(thread=thread, text="B")
    plan_services.todo_add(thread=thread, text="A.1", parent=a)
    plan_services.todo_add(thread=thread, text="A.2", parent=a)
    a1 = Todo.objects.get(text="A.1")
    plan_services.todo_add(thread=thread, text="A.1.a", parent=a1)
    assert _plan(thread) == [("A", 0), ("A.1", 1), ("A.1.a", 2), ("A.2", 1), ("B", 0)]
    assert _positions(thread) == [0, 1, 2, 3, 4]


def test_todo_add_refuses_bad_text_and_a_missing_parent(thread):
    a = plan_services.todo_add(thread=thread, text="A")
    with pytest.raises(InvalidInput, match="Step text cannot be empty"):
        plan_services.todo_add(thread=thread, text="  ")
    with pytest.raises(InvalidInput, match="too long"):
        plan_services.todo_add(thread=thread, text="x" * (TODO_TEXT_MAX_CHARS + 1))
    gone = Todo.objects.get(pk=a.pk)
    plan_services.todo_delete(todo=gone)
    with pytest.raises(NotFound):
        plan_services.todo_add(thread=thread, text="orphan", parent=a)
    assert _plan(thread) == []


def test_todo_add_refuses_nesting_past_the_depth_limit(thread):
    parent = None
    for level in range(TODO_MAX_DEPTH + 1):
        parent = plan_services.todo_add(thread=thread, text=f"level {level}", parent=parent)
    with pytest.raises(InvalidInput, match="at most"):
        plan_services.todo_add(thread=thread, text="too deep", parent=parent)
    assert len(_plan(thread)) == TODO_MAX_DEPTH + 1


def test_todos_add_outline_at_end_and_under_parent_index(thread):
    _outline(thread, ("A", 0), ("B", 0))
    plan_services.todos_add_outline(thread=thread, steps=[{"text": "A.1", "depth": 0}, {"text": "A.1.a", "depth": 1}], parent_index=1)
    assert _plan(thread) == [("A", 0), ("A.1", 1), ("A.1.a", 2), ("B", 0)]
    plan_services.todos_add_outline(thread=thread, steps=[{"text": "A.2"}], parent_index=1)
    assert _plan(thread) == [("A", 0), ("A.1", 1), ("A.1.a", 2), ("A.2", 1), ("B", 0)]
    assert _positions(thread) == list(range(5))


@pytest.mark.parametrize(
    "steps, parent_index, message",
    [
        ([], None, "Give at least one step."),
        ([{"text": "x", "depth": 1}], None, "Step 1: depth 1 skips a level"),
        ([{"text": "x"}, {"text": "y", "depth": 2}], None, "Step 2: depth 2 skips a level"),
        ([{"text": "x", "depth": -1}], None, "Step 1: depth must be a whole number"),
        ([{"text": "x", "depth": "1"}], None, "Step 1: depth must be a whole number"),
        ([{"text": "x"}, {"text": ""}], None, "Step 2: Step text cannot be empty."),
        ([{"text": "x"}], 3, "Plan index 3 is out of range; the plan has 2 steps"),
        ([{"text": "x"}], 0, "Plan index 0 is out of range"),
    ],
)
def test_todos_add_outline_refuses_bad_outlines(thread, steps, parent_index, message):
    _outline(thread, ("A", 0), ("B", 0))
    with pytest.raises(InvalidInput) as exc:
        plan_services.todos_add_outline(thread=thread, steps=steps, parent_index=parent_index)
    assert exc.value.message.startswith(message)
    assert _plan(thread) == [("A", 0), ("B", 0)]


def test_todos_add_outline_refuses_past_the_depth_limit(thread):
    steps = [{"text": f"l{d}", "depth": d} for d in range(TODO_MAX_DEPTH + 1)]
    plan_services.todos_add_outline(thread=thread, steps=steps)
    with pytest.raises(InvalidInput, match="at most"):
        plan_services.todos_add_outline(thread=thread, steps=[{"text": "deeper"}], parent_index=TODO_MAX_DEPTH + 1)
    assert len(_plan(thread)) == TODO_MAX_DEPTH + 1


def test_todo_update_text_and_set_done(thread):
    todo = plan_services.todo_add(thread=thread, text="Draft")
    plan_services.todo_update_text(todo=todo, text="  Draft intro ")
    plan_services.todo_set_done(todo=todo, done=True)
    stored = Todo.objects.get()
    assert (stored.text, stored.done) == ("Draft intro", True)
    with pytest.raises(InvalidInput):
        plan_services.todo_update_text(todo=stored, text="")
    assert Todo.objects.get().text == "Draft intro"
    plan_services.todo_set_done(todo=stored, done=False)
    assert Todo.objects.get().done is False


def test_todo_delete_removes_exactly_the_subtree(thread):
    todos = _outline(thread, ("A", 0), ("A.1", 1), ("A.1.a", 2), ("A.2", 1), ("B", 0))
    assert plan_services.todo_delete(todo=todos[1]) == 2
    assert _plan(thread) == [("A", 0), ("A.2", 1), ("B", 0)]
    assert _positions(thread) == [0, 1, 2]
    with pytest.raises(NotFound):
        plan_services.todo_delete(todo=todos[1])


def test_todo_indent_moves_the_subtree_under_the_previous_sibling(thread):
    todos = _outline(thread, ("A", 0), ("A.1", 1), ("B", 0), ("B.1", 1), ("C", 0))
    plan_services.todo_indent(todo=todos[2])
    assert _plan(thread) == [("A", 0), ("A.1", 1), ("B", 1), ("B.1", 2), ("C", 0)]


@pytest.mark.parametrize("which", [0, 1])
def test_todo_indent_of_a_first_child_is_refused(thread, which):
    todos = _outline(thread, ("A", 0), ("A.1", 1), ("B", 0))
    with pytest.raises(InvalidInput, match="cannot be indented"):
        plan_services.todo_indent(todo=todos[which])
    assert _plan(thread) == [("A", 0), ("A.1", 1), ("B", 0)]


def test_todo_indent_refuses_past_the_depth_limit(thread):
    steps = [("A", 0)] + [(f"l{d}", d) for d in range(1, TODO_MAX_DEPTH + 1)]
    todos = _outline(thread, ("Z", 0), *steps)
    with pytest.raises(InvalidInput, match="at most"):
        plan_services.todo_indent(todo=todos[1])
    assert len(_plan(thread)) == TODO_MAX_DEPTH + 2


def test_todo_outdent_places_the_step_after_its_parent_subtree(thread):
    todos = _outline(thread, ("A", 0), ("A.1", 1), ("A.1.a", 2), ("A.2", 1), ("B", 0))
    plan_services.todo_outdent(todo=todos[1])
    # A.1 keeps its child; the sibling that followed it stays under A.
    assert _plan(thread) == [("A", 0), ("A.2", 1), ("A.1", 0), ("A.1.a", 1), ("B", 0)]
    with pytest.raises(InvalidInput, match="already at the top level"):
        plan_services.todo_outdent(todo=todos[0])


def test_todo_move_up_down_within_its_level_only(thread):
    todos = _outline(thread, ("A", 0), ("A.1", 1), ("A.2", 1), ("B", 0), ("B.1", 1))
    plan_services.todo_move(todo=todos[3], direction="up")
    assert _plan(thread) == [("B", 0), ("B.1", 1), ("A", 0), ("A.1", 1), ("A.2", 1)]
    plan_services.todo_move(todo=todos[1], direction="down")
    assert _plan(thread) == [("B", 0), ("B.1", 1), ("A", 0), ("A.2", 1), ("A.1", 1)]
    for todo, direction, word in ((todos[1], "down", "last"), (todos[4], "up", "first"), (todos[3], "up", "first")):
        with pytest.raises(InvalidInput, match=f"already the {word}"):
            plan_services.todo_move(todo=todo, direction=direction)
    with pytest.raises(InvalidInput, match="'up' or 'down'"):
        plan_services.todo_move(todo=todos[0], direction="left")
    assert _plan(thread) == [("B", 0), ("B.1", 1), ("A", 0), ("A.2", 1), ("A.1", 1)]


def test_move_among_siblings_reorders_whole_subtrees_at_one_level():
    from workspace import plan_tree

    depths = [0, 0, 1, 0]  # A, B, B.1, C
    assert plan_tree.move_among_siblings(depths, 3, 0) == plan_tree.Layout(order=[3, 0, 1, 2], depths=[0, 0, 0, 1])
    assert plan_tree.move_among_siblings(depths, 1, 0) == plan_tree.Layout(order=[1, 2, 0, 3], depths=[0, 1, 0, 0])
    assert plan_tree.move_among_siblings(depths, 0, 0).order == [0, 1, 2, 3]
    for bad in (3, -1, "1", True):
        with pytest.raises(InvalidInput, match="out of range; this level has 3 steps"):
            plan_tree.move_among_siblings(depths, 0, bad)


def test_todos_toggle_by_index_reports_outline_numbers_and_ignores_duplicates(thread):
    _outline(thread, ("A", 0), ("A.1", 1), ("B", 0))
    result = plan_services.todos_toggle_by_index(thread=thread, indices=[2, 2, 3])
    assert result.done == ["1.1 'A.1' marked done", "2 'B' marked done"]
    assert list(Todo.objects.order_by("position").values_list("done", flat=True)) == [False, True, True]
    plan_services.todos_toggle_by_index(thread=thread, indices=[3])
    assert not Todo.objects.get(text="B").done


def test_todos_toggle_by_index_out_of_range_changes_nothing(thread):
    _outline(thread, ("A", 0))
    with pytest.raises(InvalidInput) as exc:
        plan_services.todos_toggle_by_index(thread=thread, indices=[1, 2])
    assert exc.value.message == "Plan index 2 is out of range; the plan has 1 steps (1-based, in outline order)."
    assert not Todo.objects.get().done
    with pytest.raises(InvalidInput, match="at least one"):
        plan_services.todos_toggle_by_index(thread=thread, indices=[])


def test_todos_on_an_empty_plan_say_so(thread):
    with pytest.raises(InvalidInput) as exc:
        plan_services.todos_remove_by_index(thread=thread, indices=[1])
    assert exc.value.message == "Plan index 1 is out of range; the plan is empty."


def test_todos_update_by_index(thread):
    _outline(thread, ("A", 0), ("B", 0))
    result = plan_services.todos_update_by_index(thread=thread, updates=[{"index": 2, "text": "Bee"}])
    assert result.done == ["rewrote step to 'Bee'"]
    assert _plan(thread) == [("A", 0), ("Bee", 0)]
    with pytest.raises(InvalidInput, match="Update 2: Step text cannot be empty"):
        plan_services.todos_update_by_index(thread=thread, updates=[{"index": 1, "text": "Ay"}, {"index": 2, "text": ""}])
    with pytest.raises(InvalidInput, match="Plan index 3"):
        plan_services.todos_update_by_index(thread=thread, updates=[{"index": 3, "text": "x"}])
    with pytest.raises(InvalidInput, match="at least one"):
        plan_services.todos_update_by_index(thread=thread, updates=[])
    assert _plan(thread) == [("A", 0), ("Bee", 0)]


def test_todos_remove_by_index_removes_subtrees_and_handles_ancestor_and_duplicates(thread):
    _outline(thread, ("A", 0), ("A.1", 1), ("A.1.a", 2), ("B", 0), ("C", 0), ("C.1", 1))
    # 3 (A.1.a) lies inside 1 (A); 4 is listed twice.
    result = plan_services.todos_remove_by_index(thread=thread, indices=[3, 1, 4, 4])
    assert _plan(thread) == [("C", 0), ("C.1", 1)]
    assert _positions(thread) == [0, 1]
    assert "removed 'A.1.a'" in result.done and "removed 'B'" in result.done
    assert Todo.objects.count() == 2
    result = plan_services.todos_remove_by_index(thread=thread, indices=[1])
    assert result.done == ["removed 'C' and 1 sub-steps"]
    assert not Todo.objects.exists()


def test_todos_remove_by_index_parent_first_removes_its_children_once(thread):
    _outline(thread, ("A", 0), ("A.1", 1), ("B", 0))
    result = plan_services.todos_remove_by_index(thread=thread, indices=[1, 2])
    assert result.done == ["removed 'A' and 1 sub-steps"]
    assert _plan(thread) == [("B", 0)]


def test_todos_remove_by_index_out_of_range_changes_nothing(thread):
    _outline(thread, ("A", 0), ("B", 0))
    with pytest.raises(InvalidInput, match="Plan index 5 is out of range"):
        plan_services.todos_remove_by_index(thread=thread, indices=[1, 5])
    assert _plan(thread) == [("A", 0), ("B", 0)]


# --- selectors over the plan ------------------------------------------------------


def test_plan_steps_carry_outline_numbers_in_pre_order(thread):
    _outline(thread, ("A", 0), ("A.1", 1), ("A.1.a", 2), ("A.2", 1), ("B", 0))
    steps = selectors.plan_steps(thread=thread)
    assert [(s.number, s.text, s.depth) for s in steps] == [
        ("1", "A", 0), ("1.1", "A.1", 1), ("1.1.1", "A.1.a", 2), ("1.2", "A.2", 1), ("2", "B", 0)
    ]


def test_the_menus_rule_for_moves_is_what_the_services_accept(thread):
    """static/js/live.js enables a step's Indent / Move up when it has a previous
    sibling, Move down when it has a next one, Outdent below the top level:
    exactly what the services accept."""
    _outline(thread, ("A", 0), ("A.1", 1), ("A.1.a", 2), ("A.2", 1), ("B", 0), ("C", 0))
    steps = selectors.plan_steps(thread=thread)
    depths = [s.depth for s in steps]
    for i, step in enumerate(steps):
        has_previous = plan_tree.sibling(depths, i, -1) is not None
        for allowed, operation in (
            (has_previous, lambda t: plan_services.todo_indent(todo=t)),
            (step.depth > 0, lambda t: plan_services.todo_outdent(todo=t)),
            (has_previous, lambda t: plan_services.todo_move(todo=t, direction="up")),
            (plan_tree.sibling(depths, i, 1) is not None, lambda t: plan_services.todo_move(todo=t, direction="down")),
        ):
            before = _plan(thread)
            sid = transaction.savepoint()
            try:
                operation(Todo.objects.get(pk=step.pk))
                accepted = True
            except InvalidInput:
                accepted = False
            transaction.savepoint_rollback(sid)
            assert accepted == allowed, (step.number, operation)
            assert _plan(thread) == before


def test_outline_numbers_restart_counters_below_a_new_parent():
    depths = [0, 1, 2, 2, 1, 0, 1, 2]
    assert plan_tree.outline_numbers(depths) == ["1", "1.1", "1.1.1", "1.1.2", "1.2", "2", "2.1", "2.1.1"]


# --- document ---------------------------------------------------------------------


def test_document_starts_empty_at_version_zero_and_each_save_bumps_it(thread):
    draft = selectors.document_for(thread=thread)
    assert (draft.pk, draft.title, draft.content, draft.version) == (None, "Untitled", "", 0)
    first = document_services.document_save(thread=thread, title="Review", content="# Intro", base_version=0)
    assert first.version == 1
    second = document_services.document_save(thread=thread, content="# Intro\n\nMore", base_version=1)
    assert (second.title, second.content, second.version) == ("Review", "# Intro\n\nMore", 2)
    document_services.document_save(thread=thread, title="Review v2")
    stored = Document.objects.get(thread=thread)
    assert (stored.title, stored.content, stored.version) == ("Review v2", "# Intro\n\nMore", 3)


def test_document_save_on_a_stale_version_is_a_conflict_and_changes_nothing(thread):
    document_services.document_save(thread=thread, content="mine", base_version=0)
    document_services.document_save(thread=thread, content="agent's edit")
    with pytest.raises(DocumentConflict) as exc:
        document_services.document_save(thread=thread, content="stale text", base_version=1)
    assert exc.value.current_version == 2
    assert "changed since you loaded it" in exc.value.message
    stored = Document.objects.get(thread=thread)
    assert (stored.content, stored.version) == ("agent's edit", 2)


def test_document_conflict_on_a_never_saved_document_creates_nothing(thread):
    with pytest.raises(DocumentConflict):
        document_services.document_save(thread=thread, content="x", base_version=4)
    assert not Document.objects.filter(thread=thread).exists()


def test_document_save_refuses_over_the_size_cap_and_bad_title(thread):
    document_services.document_save(thread=thread, content="keep", base_version=0)
    limit = settings.HAICO_DOCUMENT_MAX_CHARS
    with pytest.raises(InvalidInput, match="too long"):
        document_services.document_save(thread=thread, content="x" * (limit + 1), base_version=1)
    with pytest.raises(InvalidInput, match="Document title cannot be empty"):
        document_services.document_save(thread=thread, title="  ", base_version=1)
    with pytest.raises(InvalidInput, match="must be text"):
        document_services.document_save(thread=thread, content=["not", "text"], base_version=1)
    stored = Document.objects.get(thread=thread)
    assert (stored.content, stored.version) == ("keep", 1)
    document_services.document_save(thread=thread, content="x" * limit, base_version=1)
    assert len(Document.objects.get(thread=thread).content) == limit


def test_document_append_adds_a_line_and_bumps_the_version(thread):
    document_services.document_append(thread=thread, text="First")
    document_services.document_append(thread=thread, text="Second")
    stored = Document.objects.get(thread=thread)
    assert (stored.content, stored.version) == ("First\nSecond", 2)
    with pytest.raises(InvalidInput, match="cannot be empty"):
        document_services.document_append(thread=thread, text="  ")
    with pytest.raises(InvalidInput, match="too long"):
        document_services.document_append(thread=thread, text="x" * settings.HAICO_DOCUMENT_MAX_CHARS)
    assert Document.objects.get(thread=thread).content == "First\nSecond"


# --- artifacts ----------------------------------------------------------------------


def test_artifact_create_stores_the_payload_newest_first(thread):
    older = artifacts_services.artifact_create(thread=thread, artifact_type="table", title="T", payload={"columns": ["a"], "rows": [[1]]}, turn_index=1)
    newer = artifacts_services.artifact_create(thread=thread, artifact_type="line_chart", title=None, payload={}, turn_index=2)
    assert [a.pk for a in selectors.artifacts_for(thread=thread)] == [newer.pk, older.pk]
    assert selectors.latest_artifact_for(thread=thread) == newer
    assert [a.pk for a in selectors.artifacts_for(thread=thread, artifact_type="table")] == [older.pk]
    assert Artifact.objects.get(pk=older.pk).payload == {"columns": ["a"], "rows": [[1]]}
    assert newer.title == ""


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"artifact_type": ""}, "Artifact type cannot be empty."),
        ({"artifact_type": "t" * 51}, "Artifact type is too long"),
        ({"title": "t" * 201}, "Artifact title is too long"),
        ({"payload": [1, 2]}, "Artifact payload must be a JSON object."),
        ({"payload": {"when": object()}}, "Artifact payload must be plain JSON"),
        ({"payload": {"v": float("nan")}}, "Artifact payload must be plain JSON"),
        ({"payload": {"blob": "x" * artifacts_services.ARTIFACT_PAYLOAD_MAX_BYTES}}, "Artifact payload is too large"),
    ],
)
def test_artifact_create_refuses_bad_input(thread, kwargs, message):
    args = {"thread": thread, "artifact_type": "table", "title": "T", "payload": {}, "turn_index": 0} | kwargs
    with pytest.raises(InvalidInput) as exc:
        artifacts_services.artifact_create(**args)
    assert exc.value.message.startswith(message)
    assert not Artifact.objects.exists()


# --- snapshots and objective history --------------------------------------------------


def test_snapshot_capture_records_the_whole_workspace(thread):
    objective_services.objective_set(thread=thread, text="Goal")
    preferences_services.preference_add(thread=thread, title="Soft one", respect_lock=False)
    hard = preferences_services.preference_add(thread=thread, title="Hard one", kind="hard", respect_lock=False)
    preferences_services.preference_set_locked(preference=hard, locked=True, respect_lock=False)
    todos = _outline(thread, ("A", 0), ("A.1", 1))
    plan_services.todo_set_done(todo=todos[1], done=True)
    document_services.document_save(thread=thread, title="Doc", content="Body")
    snapshot = snapshots_services.snapshot_capture(thread=thread, turn_index=1, user_message="hello")
    stored = WorkspaceSnapshot.objects.get(pk=snapshot.pk)
    assert (stored.turn_index, stored.user_message, stored.objective_text) == (1, "hello", "Goal")
    assert (stored.document_title, stored.document_content) == ("Doc", "Body")
    assert stored.preferences_json == [
        {"title": "Hard one", "subtitle": "", "kind": "hard", "locked": True},
        {"title": "Soft one", "subtitle": "", "kind": "soft", "locked": False},
    ]
    assert stored.todos_json == [
        {"text": "A", "done": False, "position": 0, "depth": 0},
        {"text": "A.1", "done": True, "position": 1, "depth": 1},
    ]


def test_snapshot_of_an_empty_workspace(thread):
    stored = snapshots_services.snapshot_capture(thread=thread, turn_index=1, user_message="hi")
    assert (stored.objective_text, stored.document_title, stored.document_content) == (None, "Untitled", "")
    assert (stored.preferences_json, stored.todos_json) == ([], [])
    assert selectors.snapshot_for(thread=thread, turn_index=1) == stored


def test_objective_history_collapses_repeats_and_ends_with_the_live_value(thread):
    snapshots_services.snapshot_capture(thread=thread, turn_index=1, user_message="m1")  # standing objective
    objective_services.objective_set(thread=thread, text="First")
    snapshots_services.snapshot_capture(thread=thread, turn_index=2, user_message="m2")
    snapshots_services.snapshot_capture(thread=thread, turn_index=3, user_message="m3")  # unchanged: collapsed
    objective_services.objective_set(thread=thread, text="Second")
    snapshots_services.snapshot_capture(thread=thread, turn_index=4, user_message="m4")
    objective_services.objective_set(thread=thread, text="Third")
    history = selectors.objective_history(thread=thread)
    assert [(e.text, e.turn_index) for e in history] == [(None, 1), ("First", 2), ("Second", 4), ("Third", None)]
    assert history[-1].at is not None


def test_objective_history_of_a_new_thread_is_the_standing_objective(thread):
    assert [(e.text, e.turn_index, e.at) for e in selectors.objective_history(thread=thread)] == [(None, None, None)]
    assert selectors.STANDING_OBJECTIVE.startswith("Understand what the user is trying to achieve")


def test_writes_touch_the_thread_activity(thread):
    stamps = [_activity(thread)]
    preferences_services.preference_add(thread=thread, title="P", respect_lock=False)
    stamps.append(_activity(thread))
    plan_services.todo_add(thread=thread, text="T")
    stamps.append(_activity(thread))
    document_services.document_save(thread=thread, content="D")
    stamps.append(_activity(thread))
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


# --- NUL characters (PostgreSQL refuses them; the services say so first) ------------


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda t: objective_services.objective_set(thread=t, text="a\x00b"), "Objective cannot contain NUL characters."),
        (lambda t: preferences_services.preference_add(thread=t, title="a\x00b", respect_lock=False), "Title cannot contain NUL characters."),
        (lambda t: plan_services.todo_add(thread=t, text="a\x00b"), "Step text cannot contain NUL characters."),
        (lambda t: document_services.document_save(thread=t, content="a\x00b"), "Document content cannot contain NUL characters."),
        (
            lambda t: artifacts_services.artifact_create(thread=t, artifact_type="table", title="T", payload={"v": "a\x00b"}, turn_index=0),
            "Artifact payload cannot contain NUL characters.",
        ),
    ],
)
def test_text_with_nul_characters_is_refused_with_a_message(thread, write, message):
    with pytest.raises(InvalidInput) as exc:
        write(thread)
    assert exc.value.message == message
    assert not any(m.objects.filter(thread=thread).exists() for m in (Objective, Preference, Todo, Document, Artifact))


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


def test_editing_a_step_deleted_meanwhile_says_so(thread):
    loaded = plan_services.todo_add(thread=thread, text="Gone soon")
    plan_services.todo_delete(todo=Todo.objects.get(pk=loaded.pk))
    for write in (
        lambda: plan_services.todo_update_text(todo=loaded, text="Back?"),
        lambda: plan_services.todo_set_done(todo=loaded, done=True),
    ):
        with pytest.raises(NotFound) as exc:
            write()
        assert exc.value.message == "That plan step no longer exists."
    assert not Todo.objects.exists()
