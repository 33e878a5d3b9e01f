"""Every write service announces what it changed, once its transaction has
committed, and a refused write announces nothing (docs/adr/0007)."""

import pytest

from conversations import services as thread_services
from conversations.turns import slot
from workspace import events
from workspace.errors import UserFacingError
from workspace.models import PlanChange, Preference, Todo
from workspace.services import artifacts as artifact_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def delivered(monkeypatch):
    batches = []
    monkeypatch.setattr(events, "_subscribers", [batches.append])
    return batches


@pytest.fixture
def workspace(thread):
    """Two steps (the second nested), two preferences, then nothing announced yet."""
    a = plan_services.todo_add(thread=thread, text="A")
    b = plan_services.todo_add(thread=thread, text="B")
    c = plan_services.todo_add(thread=thread, text="C", parent=b)
    hard = preference_services.preference_add(thread=thread, title="Hard", kind="hard", respect_lock=False)
    soft = preference_services.preference_add(thread=thread, title="Soft", respect_lock=False)
    rows = {"a": a, "b": b, "c": c, "hard": hard, "soft": soft}
    # The ids as they were: a deleted row's object forgets its own.
    return {"thread": thread, **rows, "pk": {name: row.pk for name, row in rows.items()}}


def _new_step(thread):
    return {Todo.objects.filter(thread=thread).order_by("-id").values_list("id", flat=True).first()}


def _new_preference(thread):
    return {Preference.objects.filter(thread=thread).order_by("-id").values_list("id", flat=True).first()}


# (name, the write, the surface, the ids it should name (given the workspace), reordered)
WRITES = [
    (
        "objective_set",
        lambda w: objective_services.objective_set(thread=w["thread"], text="Goal"),
        "objective",
        lambda w: set(),
        False,
    ),
    (
        "preference_add",
        lambda w: preference_services.preference_add(thread=w["thread"], title="New", respect_lock=False),
        "preferences",
        lambda w: _new_preference(w["thread"]),
        False,
    ),
    (
        "preferences_add",
        lambda w: preference_services.preferences_add(thread=w["thread"], items=[{"title": "New"}], respect_lock=True),
        "preferences",
        lambda w: _new_preference(w["thread"]),
        False,
    ),
    (
        "preference_update",
        lambda w: preference_services.preference_update(preference=w["soft"], title="Softer", respect_lock=False),
        "preferences",
        lambda w: {w["soft"].pk},
        False,
    ),
    (
        "preference_delete",
        lambda w: preference_services.preference_delete(preference=w["soft"], respect_lock=False),
        "preferences",
        lambda w: {w["pk"]["soft"]},
        False,
    ),
    (
        "preference_set_locked",
        lambda w: preference_services.preference_set_locked(preference=w["hard"], locked=True, respect_lock=False),
        "preferences",
        lambda w: {w["hard"].pk},
        False,
    ),
    (
        "preferences_update_by_index",
        lambda w: preference_services.preferences_update_by_index(
            thread=w["thread"], updates=[{"index": 2, "kind": "hard"}], respect_lock=True
        ),
        "preferences",
        lambda w: {w["soft"].pk},
        False,
    ),
    (
        "preferences_remove_by_index",
        lambda w: preference_services.preferences_remove_by_index(thread=w["thread"], indices=[1], respect_lock=True),
        "preferences",
        lambda w: {w["hard"].pk},
        False,
    ),
    ("todo_add", lambda w: plan_services.todo_add(thread=w["thread"], text="D"), "plan", lambda w: _new_step(w["thread"]), False),
    (
        "todos_add_outline",
        lambda w: plan_services.todos_add_outline(thread=w["thread"], steps=[{"text": "D"}], parent_index=1),
        "plan",
        lambda w: _new_step(w["thread"]),
        False,
    ),
    ("todo_update_text", lambda w: plan_services.todo_update_text(todo=w["a"], text="A2"), "plan", lambda w: {w["a"].pk}, False),
    ("todo_set_done", lambda w: plan_services.todo_set_done(todo=w["a"], done=True), "plan", lambda w: {w["a"].pk}, False),
    ("todo_delete", lambda w: plan_services.todo_delete(todo=w["b"]), "plan", lambda w: {w["b"].pk, w["c"].pk}, True),
    ("todo_indent", lambda w: plan_services.todo_indent(todo=w["b"]), "plan", lambda w: {w["b"].pk, w["c"].pk}, True),
    ("todo_outdent", lambda w: plan_services.todo_outdent(todo=w["c"]), "plan", lambda w: {w["c"].pk}, True),
    ("todo_move", lambda w: plan_services.todo_move(todo=w["b"], direction="up"), "plan", lambda w: {w["b"].pk, w["c"].pk}, True),
    (
        "todos_toggle_by_index",
        lambda w: plan_services.todos_toggle_by_index(thread=w["thread"], indices=[1, 3]),
        "plan",
        lambda w: {w["a"].pk, w["c"].pk},
        False,
    ),
    (
        "todos_update_by_index",
        lambda w: plan_services.todos_update_by_index(thread=w["thread"], updates=[{"index": 2, "text": "B2"}]),
        "plan",
        lambda w: {w["b"].pk},
        False,
    ),
    (
        "todos_remove_by_index",
        lambda w: plan_services.todos_remove_by_index(thread=w["thread"], indices=[2]),
        "plan",
        lambda w: {w["b"].pk, w["c"].pk},
        True,
    ),
    (
        "document_save",
        lambda w: document_services.document_save(thread=w["thread"], content="Text"),
        "document",
        lambda w: set(),
        False,
    ),
    (
        "document_append",
        lambda w: document_services.document_append(thread=w["thread"], text="More"),
        "document",
        lambda w: set(),
        False,
    ),
    (
        "artifact_create",
        lambda w: artifact_services.artifact_create(
            thread=w["thread"], artifact_type="data_table", title="T", payload={"rows": []}, turn_index=0
        ),
        "artifacts",
        lambda w: set(w["thread"].artifacts.values_list("id", flat=True)),
        False,
    ),
    (
        "thread_rename",
        lambda w: thread_services.thread_rename(thread=w["thread"], title="Renamed"),
        "thread",
        lambda w: set(),
        False,
    ),
    ("thread_soft_delete", lambda w: thread_services.thread_soft_delete(thread=w["thread"]), "thread", lambda w: set(), False),
    (
        "thread_set_mode",
        lambda w: thread_services.thread_set_mode(thread=w["thread"], mode="plan"),
        "mode",
        lambda w: set(),
        False,
    ),
]


@pytest.mark.parametrize("name, write, surface, ids, reordered", WRITES, ids=[w[0] for w in WRITES])
def test_each_write_announces_its_change_after_commit(workspace, delivered, name, write, surface, ids, reordered):
    write(workspace)
    [batch] = delivered
    [change] = [c for c in batch if c.surface == surface]
    assert change.thread_id == workspace["thread"].pk
    assert set(change.ids) == ids(workspace)
    assert change.reordered is reordered


PLAN_WRITES = [write for write in WRITES if write[2] == "plan"]


@pytest.mark.parametrize("name, write, surface, ids, reordered", PLAN_WRITES, ids=[w[0] for w in PLAN_WRITES])
def test_each_plan_write_announces_the_one_entry_it_added_to_the_plans_history(
    workspace, delivered, name, write, surface, ids, reordered
):
    before = set(PlanChange.objects.values_list("id", flat=True))
    write(workspace)
    added = set(PlanChange.objects.values_list("id", flat=True)) - before
    [batch] = delivered
    [change] = [c for c in batch if c.surface == "plan_history"]
    assert len(added) == 1 and set(change.ids) == added


def test_a_targeted_document_edit_is_announced_and_a_refused_one_is_not(workspace, delivered):
    document_services.document_save(thread=workspace["thread"], content="One two three.")
    delivered.clear()
    document_services.document_edit_passage(thread=workspace["thread"], passage="two", replacement="2")
    assert [c.surface for batch in delivered for c in batch] == ["document"]
    delivered.clear()
    with pytest.raises(UserFacingError):
        document_services.document_edit_passage(thread=workspace["thread"], passage="four", insert_after="!")
    assert delivered == []


def test_a_thread_titled_by_its_first_message_is_announced(owner, delivered):
    thread = thread_services.thread_create(owner=owner)
    slot.turn_begin(thread=thread, user_message="Plan a trip to Porto")
    assert [c.surface for batch in delivered for c in batch] == ["thread"]


def test_staff_restore_is_announced(workspace, staff, delivered):
    thread_services.thread_soft_delete(thread=workspace["thread"])
    thread_services.thread_restore(thread=workspace["thread"], staff_user=staff)
    assert [c.surface for batch in delivered for c in batch] == ["thread", "thread"]


@pytest.mark.parametrize(
    "refused",
    [
        lambda w: objective_services.objective_set(thread=w["thread"], text=" "),
        lambda w: plan_services.todo_indent(todo=w["a"]),
        lambda w: preference_services.preferences_remove_by_index(thread=w["thread"], indices=[9], respect_lock=True),
        lambda w: document_services.document_save(thread=w["thread"], content="x", base_version=99),
        lambda w: thread_services.thread_set_mode(thread=w["thread"], mode="reckless"),
    ],
    ids=["blank objective", "impossible indent", "unknown index", "stale document", "unknown mode"],
)
def test_a_refused_write_announces_nothing(workspace, delivered, refused):
    with pytest.raises(UserFacingError):
        refused(workspace)
    assert delivered == []
