from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0023_thread_member_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="documentpagesave",
            name="carried",
            field=models.BooleanField(default=True),
        ),
    ]
