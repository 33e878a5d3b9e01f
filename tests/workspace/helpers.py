"""Helpers shared by the workspace service and selector tests: the plan and
the preferences as plain tuples, a plan built from an outline, and the
thread's last-activity stamp."""

from workspace import selectors
from workspace.models import Thread
from workspace.services import plan as plan_services


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
