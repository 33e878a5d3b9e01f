"""A turn may wait for the person's approval of a hard-to-undo change (docs/adr/0017)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0007_activity_kind_detail"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="approval",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="turn",
            name="status",
            field=models.CharField(
                choices=[
                    ("running", "Running"),
                    ("complete", "Complete"),
                    ("stopped", "Stopped"),
                    ("failed", "Failed"),
                    ("interrupted", "Interrupted"),
                    ("awaiting", "Awaiting approval"),
                ],
                default="running",
                max_length=12,
            ),
        ),
    ]
