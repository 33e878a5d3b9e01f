import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    """Every model call's row gets a key of its own (docs/adr/0154). The
    database's column has no default: a default given to AddField is one
    value written into every stored row, which the unique index refuses
    from the second. The rows stored before keep none (no retry names
    them), so no row of a long usage table is written; the new rows get
    theirs from the model (uuid4)."""

    dependencies = [
        ("conversations", "0028_staff_lists_newest_first"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.AddField(
                    model_name="modelusage",
                    name="key",
                    field=models.UUIDField(null=True, unique=True, editable=False),
                ),
            ],
            state_operations=[
                migrations.AddField(
                    model_name="modelusage",
                    name="key",
                    field=models.UUIDField(null=True, unique=True, default=uuid.uuid4, editable=False),
                ),
            ],
        ),
    ]
