"""A thread remembers the model last chosen in its chat."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0007_document_review"),
    ]

    operations = [
        migrations.AddField(
            model_name="thread",
            name="chat_model",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
    ]
