"""A turn keeps the passage of the document its message asked about
(docs/adr/0019), so reruns of it can send it again."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0012_turn_mode"),
    ]

    operations = [
        migrations.AddField(
            model_name="turn",
            name="selection",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
