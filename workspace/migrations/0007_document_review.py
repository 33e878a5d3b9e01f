"""Each document revision records the turn it was written in, and the person's
keep / undo answers to an agent turn's changes are kept (docs/adr/0019)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0006_thread_mode"),
    ]

    operations = [
        migrations.AddField(
            model_name="documentrevision",
            name="turn_index",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.CreateModel(
            name="DocumentReviewDecision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("turn_index", models.PositiveIntegerField()),
                ("hunk", models.PositiveIntegerField()),
                ("decision", models.CharField(choices=[("kept", "Kept"), ("undone", "Undone")], max_length=6)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "document",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="review_decisions", to="workspace.document"
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("document", "turn_index", "hunk"), name="docreview_unique_hunk")],
            },
        ),
    ]
