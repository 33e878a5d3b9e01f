"""A thread deleted for good (its owner's account deleted, a failed fork's
rows removed, a delete from a shell) while the agent ticks a step of its plan: the delete
waits on the tick, or the tick on the delete, and neither is killed as a
deadlock. A plan write locks the thread's row before its plan rows; the
delete took the plan rows first (docs/adr/0140). PostgreSQL only (its row
locks); two connections of one process stand for the delete and the
agent's tick."""

import threading
import time

import pytest
from django.db import connections, transaction

from conversations import branch_cleanup
from workspace import events, write_counts
from workspace.models import Thread, Todo
from workspace.services import plan as plan_services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql_pass]


@pytest.fixture
def no_listeners(monkeypatch):
    monkeypatch.setattr(events, "_subscribers", [])


def _delete_while_the_agent_ticks(thread, delete):
    """The agent's tick holds the thread's row (its first lock) when the
    delete starts, and goes on to the plan rows while the delete waits."""
    tick_locked, tick_go = threading.Event(), threading.Event()
    errors = []

    def agent():
        try:
            with transaction.atomic():
                write_counts.lock_thread(thread.pk)
                tick_locked.set()
                tick_go.wait(20)
                plan_services.todos_toggle_by_index(thread=Thread.objects.get(pk=thread.pk), indices=[1])
        except Exception as exc:
            errors.append(exc)
        finally:
            tick_locked.set()
            connections.close_all()

    def deleter():
        try:
            delete()
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    a = threading.Thread(target=agent)
    a.start()
    assert tick_locked.wait(20)
    d = threading.Thread(target=deleter)
    d.start()
    time.sleep(0.5)  # the delete runs into the tick's lock
    tick_go.set()
    a.join(30)
    d.join(30)
    assert not errors, errors


def test_an_account_deleted_while_the_agent_ticks_a_step_of_its_thread(thread, owner, no_listeners):
    """An account deleted from a shell (staff's admin refuses an account
    that owns threads) takes its threads with it."""
    plan_services.todo_add(thread=thread, text="Read the sources")
    plan_services.todo_add(thread=thread, text="Write the summary")

    _delete_while_the_agent_ticks(thread, lambda: type(owner).objects.get(pk=owner.pk).delete())

    assert not type(owner).objects.filter(pk=owner.pk).exists()
    assert not Thread.objects.filter(pk=thread.pk).exists()
    assert not Todo.objects.filter(thread_id=thread.pk).exists()


def test_a_failed_forks_thread_removed_while_a_step_is_ticked(thread, no_listeners):
    """The sweep that removes what a failed fork wrote, beside a plan write."""
    plan_services.todo_add(thread=thread, text="Read the sources")
    plan_services.todo_add(thread=thread, text="Write the summary")

    _delete_while_the_agent_ticks(thread, lambda: branch_cleanup.discard(thread.pk))

    assert not Thread.objects.filter(pk=thread.pk).exists()
    assert not Todo.objects.filter(thread_id=thread.pk).exists()


def test_a_thread_deleted_from_a_shell_while_the_agent_ticks_a_step(thread, no_listeners):
    plan_services.todo_add(thread=thread, text="Read the sources")
    plan_services.todo_add(thread=thread, text="Write the summary")

    _delete_while_the_agent_ticks(thread, lambda: Thread.objects.get(pk=thread.pk).delete())

    assert not Thread.objects.filter(pk=thread.pk).exists()
    assert not Todo.objects.filter(thread_id=thread.pk).exists()
