"""Each turn records the mode it ran in (docs/adr/0018); turns from before
take their thread's mode, the only one known for them."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def from_thread(apps, schema_editor):
    Turn = apps.get_model("conversations", "Turn")
    Thread = apps.get_model("workspace", "Thread")
    Turn.objects.update(mode=Subquery(Thread.objects.filter(pk=OuterRef("thread_id")).values("mode")[:1]))


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0011_moderation_staff_workspace_view"),
        ("workspace", "0008_thread_chat_model"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="mode",
            field=models.CharField(
                choices=[("explore", "Explore"), ("plan", "Plan"), ("execute", "Execute")], default="execute", max_length=10
            ),
        ),
        migrations.RunPython(from_thread, migrations.RunPython.noop),
    ]
