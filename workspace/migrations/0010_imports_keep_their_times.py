"""These times become defaults instead of auto_now_add, so an imported
archive keeps its own (docs/adr/0049). The columns do not change: only
Django's state is altered (on SQLite an AlterField would copy each table)."""

import django.utils.timezone
from django.db import migrations, models


def _now_by_default(model_name: str, name: str):
    return migrations.AlterField(model_name=model_name, name=name, field=models.DateTimeField(default=django.utils.timezone.now))


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0009_mcp_author"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                _now_by_default("thread", "created_at"),
                _now_by_default("artifact", "created_at"),
                _now_by_default("documentrevision", "created_at"),
                _now_by_default("workspacesnapshot", "captured_at"),
            ],
            database_operations=[],
        ),
    ]
