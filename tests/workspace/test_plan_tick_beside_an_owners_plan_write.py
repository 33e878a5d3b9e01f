"""A plan tick leaves its plan as the kept reading's (docs/adr/0140) while
the owner edits the plan at the same moment: the next prompt and the live
patches show the owner's edit. PostgreSQL only (its row locks make the
tick wait on the owner's write); two connections of one process stand for
the owner's request and the agent's tick."""

import threading
import time

import pytest
from django.db import connections, transaction

from workspace import events
from workspace.models import PlanChange, Thread
from workspace.selectors import workspace_reading_current, workspace_reading_for
from workspace.services import plan as plan_services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql_pass]


@pytest.fixture
def no_listeners(monkeypatch):
    monkeypatch.setattr(events, "_subscribers", [])


def _tick_waiting_on(thread, person_write, *, read_between=True):
    """The person's plan write holds its locks; the agent's tick waits on
    them, reads the plan when they go, and commits after a reading of the
    workspace was kept in between (a live patch of the person's write)."""
    person_in, person_go = threading.Event(), threading.Event()
    agent_ticked, agent_go = threading.Event(), threading.Event()
    errors = []

    def person():
        try:
            with transaction.atomic():
                person_write(Thread.objects.get(pk=thread.pk))
                person_in.set()
                person_go.wait(20)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
            person_in.set()
        finally:
            connections.close_all()

    def agent():
        try:
            with transaction.atomic():
                plan_services.todos_toggle_by_index(thread=Thread.objects.get(pk=thread.pk), indices=[1])
                agent_ticked.set()
                agent_go.wait(20)
        except Exception as exc:  # pragma: no cover
            errors.append(exc)
            agent_ticked.set()
        finally:
            connections.close_all()

    p = threading.Thread(target=person)
    p.start()
    assert person_in.wait(20)
    a = threading.Thread(target=agent)
    a.start()
    time.sleep(0.5)  # the tick waits on the person's locks
    assert not agent_ticked.is_set()
    person_go.set()
    p.join(20)
    assert agent_ticked.wait(20)
    if read_between:
        workspace_reading_current(thread=thread)  # a live patch of the person's write keeps its reading
    agent_go.set()
    a.join(20)
    assert not errors, errors


def test_a_step_the_person_adds_while_the_agent_ticks_is_in_the_next_prompt(thread, no_listeners):
    """The owner's new step vanished from the kept reading (the next prompt,
    the live patches) when a tick waited on the add."""
    plan_services.todo_add(thread=thread, text="Read the sources")
    plan_services.todo_add(thread=thread, text="Write the summary")
    workspace_reading_current(thread=thread)

    _tick_waiting_on(thread, lambda t: plan_services.todo_add(thread=t, text="Added by the person meanwhile"))

    reading = workspace_reading_current(thread=thread)
    assert "Added by the person meanwhile" in [step.text for step in reading.todos]
    assert reading == workspace_reading_for(thread=thread)


def test_a_step_the_person_renames_while_the_agent_ticks_is_renamed_in_the_next_prompt(thread, no_listeners):
    plan_services.todo_add(thread=thread, text="Read the sources")
    second = plan_services.todo_add(thread=thread, text="Write the summary")
    workspace_reading_current(thread=thread)

    _tick_waiting_on(thread, lambda t: plan_services.todo_update_text(todo=second, text="Write the abstract"))

    reading = workspace_reading_current(thread=thread)
    assert reading == workspace_reading_for(thread=thread)
    assert [step.text for step in reading.todos] == ["Read the sources", "Write the abstract"]


def test_a_step_the_person_removes_while_the_agent_ticks_stays_removed(thread, no_listeners):
    plan_services.todo_add(thread=thread, text="Read the sources")
    second = plan_services.todo_add(thread=thread, text="Write the summary")
    workspace_reading_current(thread=thread)

    _tick_waiting_on(thread, lambda t: plan_services.todo_delete(todo=second))

    reading = workspace_reading_current(thread=thread)
    assert reading == workspace_reading_for(thread=thread)
    assert [step.text for step in reading.todos] == ["Read the sources"]


def test_history_turn_numbers_under_a_concurrent_plan_write(thread, no_listeners):
    plan_services.todo_add(thread=thread, text="Read the sources")
    plan_services.todo_add(thread=thread, text="Write the summary")
    Thread.objects.filter(pk=thread.pk).update(turn_index=7)

    _tick_waiting_on(thread, lambda t: plan_services.todo_add(thread=t, text="Added by the person meanwhile"), read_between=False)

    turns = list(PlanChange.objects.filter(thread=thread).order_by("pk").values_list("action", "turn_index"))
    assert [turn for _action, turn in turns[-2:]] == [7, 7], turns


def test_a_step_the_person_moves_while_the_agent_ticks_is_in_its_new_place_in_the_next_prompt(thread, no_listeners):
    """The owner's reorder was undone in the kept reading: the tick's locking
    read waited on it and returned the old order."""
    plan_services.todo_add(thread=thread, text="Read the sources")
    plan_services.todo_add(thread=thread, text="Write the summary")
    third = plan_services.todo_add(thread=thread, text="Check the figures")
    workspace_reading_current(thread=thread)

    _tick_waiting_on(thread, lambda t: plan_services.todo_move(todo=third, direction="up"))

    reading = workspace_reading_current(thread=thread)
    assert [step.text for step in reading.todos] == ["Read the sources", "Check the figures", "Write the summary"]
    assert reading == workspace_reading_for(thread=thread)


def test_a_step_the_person_moves_while_the_agent_ticks_with_no_reading_between(thread, no_listeners):
    plan_services.todo_add(thread=thread, text="Read the sources")
    plan_services.todo_add(thread=thread, text="Write the summary")
    third = plan_services.todo_add(thread=thread, text="Check the figures")
    workspace_reading_current(thread=thread)

    _tick_waiting_on(thread, lambda t: plan_services.todo_move(todo=third, direction="up"), read_between=False)

    reading = workspace_reading_current(thread=thread)
    assert [step.text for step in reading.todos] == ["Read the sources", "Check the figures", "Write the summary"]
    assert reading == workspace_reading_for(thread=thread)
