"""Each thread remembers the agent's mode (Explore, Plan, Execute); existing
threads are in Execute, what the agent could always do (docs/adr/0018)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0005_snapshot_copies_dropped_objective_revisions"),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="mode",
            field=models.CharField(
                choices=[("explore", "Explore"), ("plan", "Plan"), ("execute", "Execute")],
                default="execute",
                max_length=8,
            ),
        ),
    ]
