"""workspace.services.snapshots: a turn's snapshot records the whole workspace."""

import pytest

from tests.workspace.helpers import _outline
from workspace import selectors
from workspace.models import ContentBlob, Document, WorkspaceSnapshot
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


# --- stored by content (docs/adr/0015) ---------------------------------------------


@pytest.mark.parametrize(
    "content",
    ["", "plain", "line\r\nbreaks\r\nkept", "naïve café 🌍 日本語\n\n", "\ttabs and trailing spaces   "],
)
def test_every_snapshot_reads_back_exactly_as_captured(thread, content):
    long_start = "A paragraph that stays the same across turns.\n" * 60
    preferences_services.preference_add(thread=thread, title="Prefer “curly” quotes 🌍", respect_lock=False)
    captured = []
    for turn, text in enumerate([long_start, long_start + content, content, content + "x"], start=1):
        # Written around the service so the text is stored exactly as given (the service normalises line breaks).
        document_services.document_save(thread=thread, title=f"Doc {turn}", content="placeholder")
        Document.objects.filter(thread=thread).update(content=text)
        plan_services.todo_add(thread=thread, text=f"Step {turn} — ünïcode")
        snapshots_services.snapshot_capture(thread=thread, turn_index=turn, user_message=f"m{turn}")
        captured.append((f"Doc {turn}", text, turn))
    for title, text, turn in captured:
        stored = WorkspaceSnapshot.objects.get(thread=thread, turn_index=turn)
        assert (stored.document_title, stored.document_content) == (title, text)
        assert stored.preferences_json == [{"title": "Prefer “curly” quotes 🌍", "subtitle": "", "kind": "soft", "locked": False}]
        assert [t["text"] for t in stored.todos_json] == [f"Step {i} — ünïcode" for i in range(1, turn + 1)]
        assert list(stored.todos_json[0]) == ["text", "done", "position", "depth"]  # keys in captured order


def test_an_unchanged_workspace_costs_a_reference(thread):
    document_services.document_save(thread=thread, title="Doc", content="Body text " * 1000)
    plan_services.todo_add(thread=thread, text="Step")
    for turn in (1, 2, 3):
        snapshots_services.snapshot_capture(thread=thread, turn_index=turn, user_message=f"m{turn}")
    snapshots = list(WorkspaceSnapshot.objects.filter(thread=thread))
    assert len({s.document_body_id for s in snapshots}) == 1
    assert len({(s.preferences_body_id, s.todos_body_id) for s in snapshots}) == 1
    assert ContentBlob.objects.count() == 3  # the document, the preferences and the plan, once each


def test_an_unchanged_field_reuses_the_previous_snapshots_blob_without_looking_it_up(thread, django_assert_num_queries):
    # Before a turn only the workspace reading, the previous snapshot and the
    # insert are needed when nothing changed: no blob is searched by its hash.
    document_services.document_save(thread=thread, title="Doc", content="Body text " * 1000)
    first = snapshots_services.snapshot_capture(thread=thread, turn_index=1, user_message="m1")
    with django_assert_num_queries(6):  # 4 reads, the previous snapshot, insert (no savepoint of its own)
        second = snapshots_services.snapshot_capture(thread=thread, turn_index=2, user_message="m2")
    assert (second.document_body_id, second.preferences_body_id, second.todos_body_id) == (
        first.document_body_id,
        first.preferences_body_id,
        first.todos_body_id,
    )
    assert WorkspaceSnapshot.objects.get(pk=second.pk).document_content == "Body text " * 1000


def test_a_small_edit_is_stored_as_a_small_delta_against_the_previous_turn(thread):
    text = "".join(f"Paragraph {i}, long enough to matter in a document.\n" for i in range(600))
    document_services.document_save(thread=thread, title="Doc", content=text)
    first = snapshots_services.snapshot_capture(thread=thread, turn_index=1, user_message="m1")
    document_services.document_save(thread=thread, content=text.replace("Paragraph 300,", "Paragraph 300 (edited),"))
    second = snapshots_services.snapshot_capture(thread=thread, turn_index=2, user_message="m2")
    body = ContentBlob.objects.get(pk=second.document_body_id)
    assert body.text is None and body.base_id == first.document_body_id
    assert len(body.delta) < 100 and len(text) > 30_000
    assert WorkspaceSnapshot.objects.get(pk=second.pk).document_content == text.replace(
        "Paragraph 300,", "Paragraph 300 (edited),"
    )
