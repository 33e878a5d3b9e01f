from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0024_a_page_taking_over_a_left_pages_saves"),
    ]

    operations = [
        # Nullable, no default to write: adding it rewrites no row of a long history.
        migrations.AddField(
            model_name="documentrevision",
            name="restored_from",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
    ]
