"""`selectors.workspace_reading_for`, the prompt's read of the workspace, is
hand-written SQL for speed: it must return exactly what the ORM returns."""

import datetime

import pytest

from conversations.services import thread_create
from workspace import selectors
from workspace.models import Artifact, Document, Objective, Preference, Todo
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db


def orm_reading(thread) -> selectors.WorkspaceReading:
    document = Document.objects.filter(thread=thread).values_list("title", "content", "updated_at").first()
    artifact = (
        Artifact.objects.filter(thread=thread).order_by("-id").values_list("id", "artifact_type", "turn_index", "title").first()
    )
    return selectors.WorkspaceReading(
        objective_text=Objective.objects.filter(thread=thread).values_list("text", flat=True).first(),
        preferences=[
            (p.kind, p.title, p.subtitle, p.locked) for p in selectors.preferences_for(thread=thread)
        ],
        todos=[(t.text, t.done, t.depth) for t in selectors.todos_for(thread=thread)],
        document=document,
        latest_artifact=artifact,
    )


def test_reading_of_an_empty_workspace(thread):
    reading = selectors.workspace_reading_for(thread=thread)
    assert reading == selectors.WorkspaceReading(
        objective_text=None, preferences=[], todos=[], document=None, latest_artifact=None
    )


def test_reading_matches_the_orm_with_the_same_types(owner, thread):
    objective_services.objective_set(thread=thread, text="Compare the two surveys")
    preferences_services.preference_add(thread=thread, title="Short sentences", kind="soft", respect_lock=False)
    locked = preferences_services.preference_add(
        thread=thread, title="Cite \"every\" figure", subtitle="Peer-reviewed", kind="hard", respect_lock=False
    )
    preferences_services.preference_set_locked(preference=locked, locked=True, respect_lock=False)
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": "Gather", "depth": 0}, {"text": "Search", "depth": 1}, {"text": "Write", "depth": 0}]
    )
    plan_services.todos_toggle_by_index(thread=thread, indices=[2])
    document_services.document_save(thread=thread, title="Report", content="Intro — *draft*.")
    for title in ("First", "Second"):
        artifacts_services.artifact_create(
            thread=thread, artifact_type="table", title=title, payload={"columns": [], "rows": []}, turn_index=1
        )
    # Another thread's workspace stays out of it.
    other = thread_create(owner=owner, title="Other")
    objective_services.objective_set(thread=other, text="Something else")
    plan_services.todo_add(thread=other, text="Not ours")

    reading = selectors.workspace_reading_for(thread=thread)

    assert reading == orm_reading(thread)
    assert reading.preferences[0] == ("hard", 'Cite "every" figure', "Peer-reviewed", True)
    assert reading.todos == [("Gather", False, 0), ("Search", True, 1), ("Write", False, 0)]
    assert all(type(done) is bool for _, done, _ in reading.todos)
    assert isinstance(reading.document[2], datetime.datetime) and reading.document[2].tzinfo is not None
    assert reading.latest_artifact[1:] == ("table", 1, "Second")
    assert reading.latest_artifact[0] == Artifact.objects.get(title="Second").pk
    assert Preference.objects.filter(thread=thread).count() == 2 and Todo.objects.filter(thread=thread).count() == 3
