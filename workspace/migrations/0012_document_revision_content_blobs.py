"""Document revisions store their text by content (docs/adr/0078): each
revision refers to a content blob, and every existing revision's text is
moved into one, document by document in version order, each a delta
against the revision before it where that is smaller.

The copied column is dropped in 0013, in a transaction of its own
(PostgreSQL refuses to alter a table with row updates pending in the same one)."""

import django.db.models.deletion
from django.db import migrations, models

from workspace import content_store

# Revisions read and written at a time: memory holds one batch of texts.
BATCH = 200


def store_revision_texts(apps, schema_editor):
    Blob = apps.get_model("workspace", "ContentBlob")
    Revision = apps.get_model("workspace", "DocumentRevision")
    previous_document, base, base_text = None, None, None
    batch = []
    rows = Revision.objects.order_by("document_id", "version").only("pk", "document_id", "content")
    for revision in rows.iterator(chunk_size=BATCH):
        if revision.document_id != previous_document:
            previous_document, base, base_text = revision.document_id, None, None
        base = content_store.store_text(Blob, revision.content, base=base, base_text=base_text)
        base_text = revision.content
        revision.body_id = base.pk
        batch.append(revision)
        if len(batch) >= BATCH:
            Revision.objects.bulk_update(batch, ["body"])
            batch = []
    Revision.objects.bulk_update(batch, ["body"])


def restore_revision_texts(apps, schema_editor):
    Blob = apps.get_model("workspace", "ContentBlob")
    Revision = apps.get_model("workspace", "DocumentRevision")
    batch = []
    rows = Revision.objects.select_related("body").order_by("document_id", "version")
    revisions = rows.iterator(chunk_size=BATCH)

    def bodies():
        for revision in revisions:
            batch.append(revision)
            yield revision.body

    for text in content_store.read_texts(Blob, bodies()):
        batch[-1].content = text
        if len(batch) >= BATCH:
            Revision.objects.bulk_update(batch, ["content"])
            batch.clear()
    Revision.objects.bulk_update(batch, ["content"])


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0011_thread_running_columns_moved"),
    ]

    operations = [
        migrations.AddField(
            model_name="documentrevision",
            name="body",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="workspace.contentblob"
            ),
        ),
        migrations.RunPython(store_revision_texts, restore_revision_texts),
    ]
