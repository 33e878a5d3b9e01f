"""workspace.services.plan, checked against what the database holds afterwards:
adding, outlines, edits, indent/outdent/move, batches by index."""

import pytest
from django.db import transaction

from tests.workspace.helpers import _outline, _plan, _positions
from workspace import plan_tree, selectors
from workspace.errors import InvalidInput, NotFound
from workspace.models import TODO_MAX_DEPTH, TODO_TEXT_MAX_CHARS, Todo
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db


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
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": "A.1", "depth": 0}, {"text": "A.1.a", "depth": 1}], parent_index=1
    )
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


def test_todo_place_reorders_within_a_level_with_subtrees_and_dense_positions(thread):
    """What a drag in the tree does: the step goes before another step of its
    level (or last), its sub-steps with it; a drop onto another level is refused."""
    todos = _outline(thread, ("A", 0), ("A.1", 1), ("A.2", 1), ("A.2.a", 2), ("B", 0), ("C", 0))
    a, a1, a2, _, b, c = todos
    plan_services.todo_place(todo=c, before=a)
    assert _plan(thread) == [("C", 0), ("A", 0), ("A.1", 1), ("A.2", 1), ("A.2.a", 2), ("B", 0)]
    plan_services.todo_place(todo=a2, before=a1)
    assert _plan(thread) == [("C", 0), ("A", 0), ("A.2", 1), ("A.2.a", 2), ("A.1", 1), ("B", 0)]
    plan_services.todo_place(todo=a, before=None)
    assert _plan(thread) == [("C", 0), ("B", 0), ("A", 0), ("A.2", 1), ("A.2.a", 2), ("A.1", 1)]
    assert _positions(thread) == list(range(6))
    for todo, before in ((a1, b), (b, a2), (c, a1), (a2, a)):
        with pytest.raises(InvalidInput, match="only reorders a step among the steps at its own level"):
            plan_services.todo_place(todo=todo, before=before)
    assert _plan(thread) == [("C", 0), ("B", 0), ("A", 0), ("A.2", 1), ("A.2.a", 2), ("A.1", 1)]


def test_todos_toggle_by_index_reports_outline_numbers_and_ignores_duplicates(thread):
    _outline(thread, ("A", 0), ("A.1", 1), ("B", 0))
    result = plan_services.todos_toggle_by_index(thread=thread, indices=[2, 2, 3])
    assert result.done == ["1.1 'A.1' marked done", "2 'B' marked done"]
    assert list(Todo.objects.order_by("position").values_list("done", flat=True)) == [False, True, True]
    plan_services.todos_toggle_by_index(thread=thread, indices=[3])
    assert not Todo.objects.get(text="B").done


def test_todos_toggle_by_index_flips_done_and_open_steps_in_one_call(thread):
    _outline(thread, ("A", 0), ("B", 0), ("C", 0))
    plan_services.todos_toggle_by_index(thread=thread, indices=[1])
    before = Todo.objects.get(text="A").updated_at
    result = plan_services.todos_toggle_by_index(thread=thread, indices=[1, 3])
    assert result.done == ["1 'A' marked not done", "3 'C' marked done"]
    assert dict(Todo.objects.values_list("text", "done")) == {"A": False, "B": False, "C": True}
    assert Todo.objects.get(text="A").updated_at > before


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


def test_the_menus_rule_for_moves_is_what_the_services_accept(thread):
    """static/js/plan.js enables a step's Indent / Move up when it has a previous
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
