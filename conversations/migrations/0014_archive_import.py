"""Imports written in steps behind a hidden thread (ArchiveImport), and a
turn's start time a default rather than auto_now_add so copies and imports
keep theirs (docs/adr/0049; the column itself does not change); staff reads
in the admin recorded as moderation actions (docs/adr/0050)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0013_turn_selection"),
        ("workspace", "0010_imports_keep_their_times"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="turn",
                    name="started_at",
                    field=models.DateTimeField(default=django.utils.timezone.now),
                ),
            ],
            database_operations=[],
        ),
        migrations.AlterField(
            model_name="moderationaction",
            name="action",
            field=models.CharField(
                choices=[
                    ("soft_delete", "Soft-deleted"),
                    ("restore", "Restored"),
                    ("lock_preference", "Locked a preference"),
                    ("unlock_preference", "Unlocked a preference"),
                    ("rename", "Renamed"),
                    ("view_workspace", "Viewed the workspace (read-only)"),
                    ("view_review", "Viewed the review (transcript, snapshots, feedback)"),
                    ("view_admin", "Viewed in the admin"),
                ],
                max_length=30,
            ),
        ),
        migrations.CreateModel(
            name="ArchiveImport",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("started_at", models.DateTimeField(auto_now_add=True)),
                ("touched_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "thread",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="archive_import", to="workspace.thread"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["touched_at"], name="archive_import_touched_idx")],
            },
        ),
    ]
