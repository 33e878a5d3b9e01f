"""The Thread model moves from conversations to workspace (docs/adr/0006).

State only: the table keeps its name (conversations_thread) and every
foreign key keeps pointing at it, so nothing in the database changes.
conversations/0003 finishes the move (its own foreign keys, then the old
model's state is dropped)."""

import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

WORKSPACE_FOREIGN_KEYS = [
    ("objective", models.OneToOneField, "objective"),
    ("preference", models.ForeignKey, "preferences"),
    ("todo", models.ForeignKey, "todos"),
    ("document", models.OneToOneField, "document"),
    ("artifact", models.ForeignKey, "artifacts"),
    ("workspacesnapshot", models.ForeignKey, "snapshots"),
]


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("conversations", "0002_admin_names"),
        ("workspace", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Thread",
                    fields=[
                        ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ("title", models.CharField(default="New thread", max_length=200)),
                        ("turn_index", models.PositiveIntegerField(default=0)),
                        ("is_deleted", models.BooleanField(default=False)),
                        ("deleted_at", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_activity_at", models.DateTimeField(auto_now_add=True)),
                        ("running_turn_index", models.PositiveIntegerField(blank=True, null=True)),
                        ("running_since", models.DateTimeField(blank=True, null=True)),
                        ("cancel_requested", models.BooleanField(default=False)),
                        (
                            "owner",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="threads",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "conversations_thread",
                        "ordering": ["-last_activity_at"],
                        "indexes": [
                            models.Index(fields=["owner", "is_deleted", "-last_activity_at"], name="thread_owner_activity_idx")
                        ],
                    },
                ),
                *[
                    migrations.AlterField(
                        model_name=model_name,
                        name="thread",
                        field=field_class(
                            on_delete=django.db.models.deletion.CASCADE, related_name=related_name, to="workspace.thread"
                        ),
                    )
                    for model_name, field_class, related_name in WORKSPACE_FOREIGN_KEYS
                ],
            ],
        ),
    ]
