"""Second half of moving Thread to workspace (docs/adr/0006): this app's
foreign keys now name workspace.Thread, and the old model leaves this app's
state. The table and its rows are untouched. The content type follows the
model, so admin history and permissions keep pointing at it."""

import django.db.models.deletion
from django.db import migrations, models


def move_content_type(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="workspace", model="thread").exists():
        ContentType.objects.filter(app_label="conversations", model="thread").update(app_label="workspace")


def move_content_type_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="conversations", model="thread").exists():
        ContentType.objects.filter(app_label="workspace", model="thread").update(app_label="conversations")


def _thread_fk(field_class, related_name, **extra):
    return field_class(on_delete=django.db.models.deletion.CASCADE, related_name=related_name, to="workspace.thread", **extra)


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("conversations", "0002_admin_names"),
        ("workspace", "0002_thread_owned_by_workspace"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="branchlink", name="thread", field=_thread_fk(models.OneToOneField, "branch_link")
                ),
                migrations.AlterField(model_name="branchlink", name="parent", field=_thread_fk(models.ForeignKey, "child_links")),
                migrations.AlterField(model_name="feedback", name="thread", field=_thread_fk(models.ForeignKey, "feedback")),
                migrations.AlterField(
                    model_name="moderationaction",
                    name="thread",
                    field=_thread_fk(models.ForeignKey, "moderation_actions"),
                ),
                migrations.AlterField(
                    model_name="activitylogentry", name="thread", field=_thread_fk(models.ForeignKey, "activity")
                ),
                migrations.DeleteModel(name="Thread"),
            ],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
