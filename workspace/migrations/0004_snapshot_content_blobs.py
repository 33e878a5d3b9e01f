"""Snapshots store their document text, preferences and plan by content
(docs/adr/0015): the blob table, the snapshots' references to it, and every
existing snapshot's values moved into it, thread by thread in turn order, each
a delta against the thread's previous snapshot where that is smaller.

The copied columns are dropped in 0005, in a transaction of their own
(PostgreSQL refuses to alter a table with row updates pending in the same one)."""

import json

import django.db.models.deletion
from django.db import migrations, models

from workspace import content_store

BATCH = 200


def _json_text(value) -> str:
    # As workspace.services.snapshots.snapshot_json stores it.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def store_snapshot_values(apps, schema_editor):
    Blob = apps.get_model("workspace", "ContentBlob")
    Snapshot = apps.get_model("workspace", "WorkspaceSnapshot")
    previous_thread = None
    previous: dict = {}
    batch = []
    rows = Snapshot.objects.order_by("thread_id", "turn_index").only(
        "pk", "thread_id", "document_content", "preferences_json", "todos_json"
    )
    for snapshot in rows.iterator(chunk_size=BATCH):
        if snapshot.thread_id != previous_thread:
            previous_thread, previous = snapshot.thread_id, {}
        values = {
            "document_body": snapshot.document_content,
            "preferences_body": _json_text(snapshot.preferences_json),
            "todos_body": _json_text(snapshot.todos_json),
        }
        for field, text in values.items():
            blob = content_store.store_text(Blob, text, base=previous.get(field))
            previous[field] = blob
            setattr(snapshot, f"{field}_id", blob.pk)
        batch.append(snapshot)
        if len(batch) >= BATCH:
            Snapshot.objects.bulk_update(batch, ["document_body", "preferences_body", "todos_body"])
            batch = []
    Snapshot.objects.bulk_update(batch, ["document_body", "preferences_body", "todos_body"])


def restore_snapshot_values(apps, schema_editor):
    Blob = apps.get_model("workspace", "ContentBlob")
    Snapshot = apps.get_model("workspace", "WorkspaceSnapshot")
    batch = []
    rows = Snapshot.objects.select_related("document_body", "preferences_body", "todos_body").order_by("pk")
    for snapshot in rows.iterator(chunk_size=BATCH):
        snapshot.document_content = content_store.read_text(Blob, snapshot.document_body)
        snapshot.preferences_json = json.loads(content_store.read_text(Blob, snapshot.preferences_body))
        snapshot.todos_json = json.loads(content_store.read_text(Blob, snapshot.todos_body))
        batch.append(snapshot)
        if len(batch) >= BATCH:
            Snapshot.objects.bulk_update(batch, ["document_content", "preferences_json", "todos_json"])
            batch = []
    Snapshot.objects.bulk_update(batch, ["document_content", "preferences_json", "todos_json"])


def _blob_reference():
    return models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="workspace.contentblob")


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0003_document_revisions"),
    ]

    operations = [
        migrations.CreateModel(
            name="ContentBlob",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("sha256", models.CharField(max_length=64, unique=True)),
                ("length", models.PositiveIntegerField()),
                ("text", models.TextField(blank=True, null=True)),
                ("delta", models.TextField(blank=True, null=True)),
                ("depth", models.PositiveSmallIntegerField(default=0)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "base",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="workspace.contentblob",
                    ),
                ),
                (
                    "keyframe",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="workspace.contentblob",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["keyframe", "depth"], name="contentblob_chain_idx")],
                "constraints": [
                    models.CheckConstraint(
                        condition=(
                            models.Q(
                                ("base__isnull", True),
                                ("delta__isnull", True),
                                ("depth", 0),
                                ("keyframe__isnull", True),
                                ("text__isnull", False),
                            )
                            | models.Q(
                                ("base__isnull", False),
                                ("delta__isnull", False),
                                ("keyframe__isnull", False),
                                ("text__isnull", True),
                            )
                        ),
                        name="contentblob_whole_or_delta",
                    )
                ],
            },
        ),
        migrations.AddField(model_name="workspacesnapshot", name="document_body", field=_blob_reference()),
        migrations.AddField(model_name="workspacesnapshot", name="preferences_body", field=_blob_reference()),
        migrations.AddField(model_name="workspacesnapshot", name="todos_body", field=_blob_reference()),
        migrations.RunPython(store_snapshot_values, restore_snapshot_values),
    ]
