"""The revisions' own copies of their text are dropped: 0012 moved them
into content blobs (docs/adr/0078). Reversing adds the column back, and
0012's reverse fills it from the blobs."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0012_document_revision_content_blobs"),
    ]

    operations = [
        migrations.RemoveField(model_name="documentrevision", name="content"),
        migrations.AlterField(
            model_name="documentrevision",
            name="body",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="workspace.contentblob"),
        ),
    ]
