"""workspace.services.snapshots: a turn's snapshot records the whole workspace."""

import pytest

from tests.workspace.helpers import _outline
from workspace import selectors
from workspace.models import WorkspaceSnapshot
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services
from workspace.services import snapshots as snapshots_services

pytestmark = pytest.mark.django_db


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
