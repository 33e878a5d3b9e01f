"""Activity log entries get a kind (what happened) and the operator's detail."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("conversations", "0006_feedback_scopes_aspects_ratings")]

    operations = [
        migrations.AddField(
            model_name="activitylogentry",
            name="kind",
            field=models.CharField(
                choices=[
                    ("provider_error", "Provider error"),
                    ("retry", "Retry"),
                    ("truncation", "Cut off"),
                    ("tool_failure", "Tool failure"),
                    ("refused_call", "Refused call"),
                    ("cap_reached", "Cap reached"),
                    ("approval_asked", "Approval asked"),
                    ("approval_answered", "Approval answered"),
                    ("mcp", "MCP"),
                    ("other", "Other"),
                ],
                default="other",
                max_length=20,
            ),
        ),
        migrations.AddField(
            model_name="activitylogentry",
            name="detail",
            field=models.TextField(blank=True, default=""),
        ),
    ]
