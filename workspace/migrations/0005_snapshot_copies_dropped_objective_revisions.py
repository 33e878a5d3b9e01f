"""The snapshots' own copies of the document, preferences and plan are
dropped (0004 moved them into content blobs), and the objective keeps every
change with its author (ObjectiveRevision).

Existing objectives get their history from what the snapshots saw at each
turn start (author "system", dated when the turn started), then the live
value if it differs (dated when it was last written). Who wrote those is not
known; the standing objective (no value) is not a revision."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

BATCH = 500


def record_objective_history(apps, schema_editor):
    Objective = apps.get_model("workspace", "Objective")
    Snapshot = apps.get_model("workspace", "WorkspaceSnapshot")
    Revision = apps.get_model("workspace", "ObjectiveRevision")
    batch = []

    def add(revision):
        batch.append(revision)
        if len(batch) >= BATCH:
            Revision.objects.bulk_create(batch)
            batch.clear()

    for objective in Objective.objects.select_related("thread").order_by("thread_id").iterator(chunk_size=BATCH):
        last = None
        seen = Snapshot.objects.filter(thread_id=objective.thread_id).order_by("turn_index")
        for text, turn_index, captured_at in seen.values_list("objective_text", "turn_index", "captured_at"):
            if text is not None and text != last:
                # Seen at the start of turn N: written during or after turn N-1.
                add(
                    Revision(
                        thread_id=objective.thread_id,
                        text=text,
                        author="system",
                        turn_index=max(turn_index - 1, 0),
                        created_at=captured_at,
                    )
                )
            last = text if text is not None else last
        if objective.text != last:
            turn = objective.thread.turn_index
            add(
                Revision(
                    thread_id=objective.thread_id,
                    text=objective.text,
                    author="system",
                    turn_index=turn,
                    created_at=objective.updated_at,
                )
            )
    Revision.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0004_snapshot_content_blobs"),
    ]

    operations = [
        migrations.RemoveField(model_name="workspacesnapshot", name="document_content"),
        migrations.RemoveField(model_name="workspacesnapshot", name="preferences_json"),
        migrations.RemoveField(model_name="workspacesnapshot", name="todos_json"),
        migrations.AlterField(
            model_name="workspacesnapshot",
            name="document_body",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="workspace.contentblob"),
        ),
        migrations.AlterField(
            model_name="workspacesnapshot",
            name="preferences_body",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="workspace.contentblob"),
        ),
        migrations.AlterField(
            model_name="workspacesnapshot",
            name="todos_body",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="workspace.contentblob"),
        ),
        migrations.CreateModel(
            name="ObjectiveRevision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("text", models.TextField()),
                (
                    "author",
                    models.CharField(choices=[("person", "Person"), ("agent", "Agent"), ("system", "System")], max_length=6),
                ),
                ("turn_index", models.PositiveIntegerField(default=0)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "thread",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="objective_revisions",
                        to="workspace.thread",
                    ),
                ),
            ],
            options={
                "ordering": ["thread", "-id"],
                "indexes": [models.Index(fields=["thread", "-id"], name="objrev_thread_newest_idx")],
            },
        ),
        # Reversing drops the table, revisions and all.
        migrations.RunPython(record_objective_history, migrations.RunPython.noop),
    ]
