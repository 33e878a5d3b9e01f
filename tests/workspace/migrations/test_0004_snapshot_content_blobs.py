"""workspace/0004 + 0005: existing snapshots keep their values, now stored by
content; the objective's history is recovered from what the turns saw.
Reversing gives the copied columns back."""

import pytest

from tests.support.migrations import migrate_to, migrate_to_latest, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("workspace", "0003_document_revisions")]
AFTER = [("workspace", "0005_snapshot_copies_dropped_objective_revisions")]
LONG = "".join(f"Paragraph {i} of a document that is long enough.\n" for i in range(300))


def _latest():
    migrate_to_latest()


def _old_rows(apps, owner):
    Thread = apps.get_model("workspace", "Thread")
    Snapshot = apps.get_model("workspace", "WorkspaceSnapshot")
    Objective = apps.get_model("workspace", "Objective")
    first = Thread.objects.create(owner_id=owner.pk, title="One", turn_index=3)
    second = Thread.objects.create(owner_id=owner.pk, title="Two", turn_index=1)
    prefs = [{"title": "Cite “sources” 🌍", "subtitle": "", "kind": "hard", "locked": True}]
    todos = [{"text": "Step", "done": False, "position": 0, "depth": 0}]
    values = [
        (first, 1, "", None, [], []),
        (first, 2, LONG, "Goal", prefs, todos),
        (first, 3, LONG.replace("Paragraph 7 ", "Paragraph seven "), "Goal", prefs, todos),
        (second, 1, "crlf\r\nkept\r\n", None, [], []),
    ]
    for thread, turn, content, objective, preferences, plan in values:
        Snapshot.objects.create(
            thread=thread,
            turn_index=turn,
            user_message=f"m{turn}",
            document_title="Doc",
            document_content=content,
            objective_text=objective,
            preferences_json=preferences,
            todos_json=plan,
        )
    Objective.objects.create(thread=first, text="Sharper goal")
    return [(thread.title, turn, content, preferences, plan) for thread, turn, content, _o, preferences, plan in values]


def test_existing_snapshots_read_back_as_they_were_and_an_unchanged_text_is_stored_once(owner):
    try:
        expected = _old_rows(start_at(BEFORE, people=[owner]), owner)
        _latest()
        from workspace.models import ContentBlob, ObjectiveRevision, WorkspaceSnapshot

        snapshots = WorkspaceSnapshot.objects.order_by("thread__title", "turn_index").select_related("thread")
        assert [
            (s.thread.title, s.turn_index, s.document_content, s.preferences_json, s.todos_json) for s in snapshots
        ] == expected
        third = snapshots.get(thread__title="One", turn_index=3)
        body = ContentBlob.objects.get(pk=third.document_body_id)
        assert body.text is None and len(body.delta) < 100  # the one edit, as a delta against turn 2
        # "" and [] are each stored once, whatever thread holds them.
        assert ContentBlob.objects.filter(sha256__in=ContentBlob.objects.filter(text="").values("sha256")).count() == 1
        assert list(
            ObjectiveRevision.objects.filter(thread__title="One").order_by("id").values_list("text", "author", "turn_index")
        ) == [("Goal", "system", 1), ("Sharper goal", "system", 3)]
    finally:
        newest_schema_restored()


@pytest.mark.heavy  # walks back over every later migration
def test_reversing_gives_the_copied_columns_back(owner):
    try:
        expected = _old_rows(start_at(BEFORE, people=[owner]), owner)
        _latest()
        apps = migrate_to(BEFORE)
        Snapshot = apps.get_model("workspace", "WorkspaceSnapshot")
        rows = Snapshot.objects.order_by("thread__title", "turn_index").values_list(
            "thread__title", "turn_index", "document_content", "preferences_json", "todos_json"
        )
        assert [tuple(row) for row in rows] == expected
    finally:
        newest_schema_restored()
