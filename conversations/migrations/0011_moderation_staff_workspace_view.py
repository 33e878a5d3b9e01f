"""Staff opening a thread's read-only workspace view is a recorded moderation action."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0010_access_tokens"),
    ]

    operations = [
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
                ],
                max_length=30,
            ),
        ),
    ]
