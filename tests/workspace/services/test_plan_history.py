"""The plan's history (docs/adr/0090): every plan service records one entry
per change, in the change's own transaction, saying what changed (the
steps by their text as it was), who (a person, the agent on a person's
behalf, a person through MCP, or a script) and during or after which turn;
a change that changes nothing, and a refused one, record nothing."""

import pytest
from django.db import transaction

from tests.workspace.helpers import _outline
from workspace.errors import InvalidInput, NotFound
from workspace.models import PlanChange, Thread, Todo
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db

PERSON, AGENT, MCP = PlanChange.Author.PERSON, PlanChange.Author.AGENT, PlanChange.Author.MCP


def _history(thread):
    """(action, summary) of every entry, oldest first."""
    return list(PlanChange.objects.filter(thread=thread).order_by("id").values_list("action", "summary"))


def _who(thread):
    return list(
        PlanChange.objects.filter(thread=thread)
        .order_by("id")
        .values_list("author", "person_id", "person_username", "token_name", "turn_index")
    )


def _step(thread, text):
    return Todo.objects.get(thread=thread, text=text)


def test_each_of_a_persons_plan_edits_is_one_entry_saying_what_changed(owner, thread):
    by = {"author": PERSON, "person": owner}
    draft = plan_services.todo_add(thread=thread, text="Draft", **by)
    plan_services.todo_add(thread=thread, text="Intro", parent=draft, **by)
    review = plan_services.todo_add(thread=thread, text="Review", **by)
    plan_services.todo_update_text(todo=review, text="Review with Bea", **by)
    plan_services.todo_set_done(todo=review, done=True, **by)
    plan_services.todo_set_done(todo=review, done=False, **by)
    plan_services.todo_move(todo=review, direction="up", **by)
    plan_services.todo_move(todo=review, direction="down", **by)
    plan_services.todo_indent(todo=review, **by)
    plan_services.todo_outdent(todo=review, **by)
    plan_services.todo_place(todo=review, before=draft, **by)
    plan_services.todo_delete(todo=draft, **by)

    assert _history(thread) == [
        ("added", "Added “Draft”"),
        ("added", "Added “Intro” under “Draft”"),
        ("added", "Added “Review”"),
        ("renamed", "Renamed “Review” to “Review with Bea”"),
        ("ticked", "Ticked “Review with Bea”"),
        ("unticked", "Unticked “Review with Bea”"),
        ("moved", "Moved “Review with Bea” up: 2 → 1"),
        ("moved", "Moved “Review with Bea” down: 1 → 2"),
        ("moved", "Indented “Review with Bea”: 2 → 1.2"),
        ("moved", "Outdented “Review with Bea”: 1.2 → 2"),
        ("moved", "Moved “Review with Bea”: 2 → 1"),
        ("removed", "Removed “Draft” and its sub-step"),
    ]
    assert {row[:3] for row in _who(thread)} == {(PERSON, owner.pk, "owner")}


def test_an_edit_records_whoever_made_it_not_the_owner(owner, other_user, thread):
    step = plan_services.todo_add(thread=thread, text="Outline", author=PERSON, person=owner)
    plan_services.todo_set_done(todo=step, done=True, author=PERSON, person=other_user)

    assert [row[:3] for row in _who(thread)] == [(PERSON, owner.pk, "owner"), (PERSON, other_user.pk, "intruder")]


def test_each_agent_tool_call_is_one_entry_however_many_steps_it_touched(owner, thread):
    by = {"author": AGENT, "person": owner}
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": "Plan", "depth": 0}, {"text": "Draft", "depth": 1}, {"text": "Ship", "depth": 0}], **by
    )
    plan_services.todos_add_outline(thread=thread, steps=[{"text": "Edit"}], parent_index=1, **by)
    plan_services.todos_toggle_by_index(thread=thread, indices=[2, 3], **by)
    plan_services.todos_toggle_by_index(thread=thread, indices=[2, 4], **by)
    plan_services.todos_toggle_by_index(thread=thread, indices=[3], **by)
    plan_services.todos_update_by_index(thread=thread, updates=[{"index": 4, "text": "Ship it"}], **by)
    plan_services.todos_update_by_index(
        thread=thread, updates=[{"index": 2, "text": "Draft it"}, {"index": 3, "text": "Edit it"}], **by
    )
    plan_services.todos_remove_by_index(thread=thread, indices=[1, 2, 4], **by)

    assert _history(thread) == [
        ("added", "Added 3 steps: “Plan”, “Draft”, “Ship”"),
        ("added", "Added “Edit” under “Plan”"),
        ("ticked", "Ticked “Draft”, “Edit”"),
        ("toggled", "Ticked “Ship”; unticked “Draft”"),
        ("unticked", "Unticked “Edit”"),
        ("renamed", "Renamed “Ship” to “Ship it”"),
        ("renamed", "Renamed 2 steps: “Draft” to “Draft it”; “Edit” to “Edit it”"),
        ("removed", "Removed 2 steps: “Plan” and its 2 sub-steps, “Ship it”"),
    ]
    # The agent, on the turn's person's behalf.
    assert {row[:3] for row in _who(thread)} == {(AGENT, owner.pk, "owner")}


def test_a_change_through_mcp_records_the_person_and_the_token(owner, thread):
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": "From my laptop"}], author=MCP, token_name="laptop", person=owner
    )

    assert _who(thread) == [(MCP, owner.pk, "owner", "laptop", 0)]


def test_a_script_records_the_system_and_nobody(thread):
    plan_services.todo_add(thread=thread, text="Seeded")

    assert _who(thread) == [(PlanChange.Author.SYSTEM, None, "", "", 0)]


def test_an_entry_records_the_turn_counter_as_it_is_when_written(owner, thread):
    plan_services.todo_add(thread=thread, text="Before any turn", author=PERSON, person=owner)
    Thread.objects.filter(pk=thread.pk).update(turn_index=3)  # the caller's row still says 0
    plan_services.todo_add(thread=thread, text="During turn 3", author=AGENT, person=owner)

    assert [row[4] for row in _who(thread)] == [0, 3]


def test_a_change_that_changes_nothing_records_nothing(owner, thread):
    by = {"author": PERSON, "person": owner}
    first, second = _outline(thread, ("First", 0), ("Second", 0))
    before = _history(thread)

    plan_services.todo_update_text(todo=first, text="First", **by)
    plan_services.todo_set_done(todo=first, done=False, **by)
    plan_services.todo_place(todo=first, before=second, **by)  # where it already is
    plan_services.todos_update_by_index(thread=thread, updates=[{"index": 2, "text": "Second"}], **by)

    assert _history(thread) == before


@pytest.mark.parametrize(
    "refused",
    [
        lambda steps: plan_services.todo_indent(todo=steps[0]),
        lambda steps: plan_services.todo_move(todo=steps[0], direction="up"),
        lambda steps: plan_services.todos_toggle_by_index(thread=steps[0].thread, indices=[1, 9]),
        lambda steps: plan_services.todo_add(thread=steps[0].thread, text="   "),
    ],
    ids=["indent the first step", "move the first step up", "an index out of range", "blank text"],
)
def test_a_refused_change_records_nothing(thread, refused):
    steps = _outline(thread, ("First", 0), ("Second", 0))
    before = _history(thread)

    with pytest.raises(InvalidInput):
        refused(steps)

    assert _history(thread) == before


def test_a_step_deleted_meanwhile_is_refused_and_records_nothing(owner, thread):
    [step] = _outline(thread, ("Gone soon", 0))
    Todo.objects.filter(pk=step.pk).delete()
    before = _history(thread)

    with pytest.raises(NotFound):
        plan_services.todo_set_done(todo=step, done=True, author=PERSON, person=owner)

    assert _history(thread) == before


def test_a_rename_names_the_text_as_stored_not_as_the_caller_last_read_it(owner, thread):
    [step] = _outline(thread, ("Old", 0))
    Todo.objects.filter(pk=step.pk).update(text="Renamed in another tab")

    plan_services.todo_update_text(todo=step, text="Mine", author=PERSON, person=owner)

    assert _history(thread)[-1] == ("renamed", "Renamed “Renamed in another tab” to “Mine”")


def test_the_entry_rolls_back_with_the_change(owner, thread):
    with pytest.raises(RuntimeError), transaction.atomic():
        plan_services.todo_add(thread=thread, text="Never kept", author=PERSON, person=owner)
        raise RuntimeError("undo")

    assert _history(thread) == []


def test_long_texts_and_long_lists_are_cut_in_the_summary(thread):
    plan_services.todo_add(thread=thread, text="x" * 900)
    plan_services.todos_add_outline(thread=thread, steps=[{"text": f"Step {n}"} for n in range(1, 15)])

    one, many = [summary for _action, summary in _history(thread)]
    # The step's text up to the limit, the ellipsis included.
    assert one == "Added “" + "x" * (plan_services.PLAN_SUMMARY_STEP_CHARS - 1) + "…”"
    assert many == "Added 14 steps: " + ", ".join(f"“Step {n}”" for n in range(1, 11)) + " and 4 more"
