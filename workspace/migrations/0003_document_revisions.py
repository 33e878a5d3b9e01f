"""Document revisions (docs/adr/0013): every version of a document with its
text, so a save based on an older version can be merged.

Existing documents get one revision for the version they are at now (author
"system"); their earlier versions were never kept, so a save based on one of
those is refused as a conflict rather than guessed at."""

import django.db.models.deletion
from django.db import migrations, models

BATCH = 500


def record_current_versions(apps, schema_editor):
    Document = apps.get_model("workspace", "Document")
    DocumentRevision = apps.get_model("workspace", "DocumentRevision")
    batch = []
    for document in Document.objects.order_by("pk").iterator(chunk_size=BATCH):
        batch.append(
            DocumentRevision(
                document_id=document.pk,
                version=document.version,
                title=document.title,
                content=document.content,
                author="system",
            )
        )
        if len(batch) >= BATCH:
            DocumentRevision.objects.bulk_create(batch)
            batch = []
    DocumentRevision.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0002_thread_owned_by_workspace"),
    ]

    operations = [
        migrations.CreateModel(
            name="DocumentRevision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("version", models.PositiveIntegerField()),
                ("title", models.CharField(max_length=200)),
                ("content", models.TextField(blank=True)),
                (
                    "author",
                    models.CharField(choices=[("person", "Person"), ("agent", "Agent"), ("system", "System")], max_length=6),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="revisions", to="workspace.document"
                    ),
                ),
            ],
            options={
                "ordering": ["document", "-version"],
                "constraints": [models.UniqueConstraint(fields=("document", "version"), name="docrev_unique_document_version")],
            },
        ),
        # Reversing drops the table, revisions and all.
        migrations.RunPython(record_current_versions, migrations.RunPython.noop),
    ]
