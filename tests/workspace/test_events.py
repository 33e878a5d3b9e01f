"""workspace.events: changes are delivered after commit, once per transaction,
never for a rolled-back write; `collecting` sees them at once."""

import pytest
from django.db import transaction

from workspace import events
from workspace.events import Change
from workspace.models import PlanChange
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def delivered(monkeypatch):
    batches: list[list[Change]] = []
    monkeypatch.setattr(events, "_subscribers", [batches.append])
    return batches


def test_a_write_is_announced_after_it_commits(thread, delivered):
    with transaction.atomic():
        objective_services.objective_set(thread=thread, text="Ship the report")
        assert delivered == []  # not yet: the transaction is still open
    assert delivered == [[Change(thread_id=thread.pk, surface="objective")]]


def test_a_rolled_back_write_announces_nothing(thread, delivered):
    with pytest.raises(RuntimeError), transaction.atomic():
        objective_services.objective_set(thread=thread, text="Never kept")
        raise RuntimeError("undo")
    assert delivered == []


def test_one_transaction_is_one_delivery_merged_per_surface(thread, delivered):
    with transaction.atomic():
        first = plan_services.todo_add(thread=thread, text="One")
        second = plan_services.todo_add(thread=thread, text="Two")
        plan_services.todo_delete(todo=first)
        preference_services.preference_add(thread=thread, title="Short", respect_lock=False)
    [batch] = delivered
    plan, history, prefs = batch
    assert (plan.surface, plan.ids, plan.reordered) == ("plan", frozenset({first.pk, second.pk}), True)
    # One entry of the plan's history per write: two adds and a delete.
    assert history.surface == "plan_history" and history.ids == frozenset(PlanChange.objects.values_list("id", flat=True))
    assert len(history.ids) == 3
    assert prefs.surface == "preferences" and len(prefs.ids) == 1


def test_a_savepoint_rolled_back_inside_a_kept_transaction_drops_only_its_own_batch(thread, delivered):
    with transaction.atomic():
        try:
            with transaction.atomic():
                objective_services.objective_set(thread=thread, text="Rolled back")
                raise RuntimeError("undo the inner block")
        except RuntimeError:
            pass
        step = plan_services.todo_add(thread=thread, text="Kept")
    entry = PlanChange.objects.get(thread=thread)
    assert delivered == [
        [
            Change(thread_id=thread.pk, surface="plan", ids=frozenset({step.pk})),
            Change(thread_id=thread.pk, surface="plan_history", ids=frozenset({entry.pk})),
        ]
    ]


def test_collecting_sees_changes_before_commit(thread, delivered):
    with transaction.atomic(), events.collecting() as seen:
        plan_services.todo_add(thread=thread, text="One")
        assert [c.surface for c in seen] == ["plan", "plan_history"]
        assert delivered == []


def test_a_failing_subscriber_never_fails_the_write(thread, monkeypatch, caplog):
    def broken(changes):
        raise RuntimeError("push failed")

    monkeypatch.setattr(events, "_subscribers", [broken])
    objective_services.objective_set(thread=thread, text="Still saved")
    assert thread.objective.text == "Still saved"
    assert any("change subscriber" in r.getMessage() for r in caplog.records)


def test_an_unknown_surface_is_a_programming_error(thread):
    with pytest.raises(ValueError):
        Change(thread_id=thread.pk, surface="moon")
