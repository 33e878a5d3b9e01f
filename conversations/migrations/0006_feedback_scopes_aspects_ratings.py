"""Feedback gets its scopes (the turn, document, plan, preferences, an
artifact), its aspects as choices and a 1-5 rating.

Rows left before: a rating of -1 or 0 (the old thumbs-down) becomes 1; the
old free-text aspect becomes its nearest choice ("overall" helpfulness,
"accuracy" correctness), or "other" with its name kept at the start of the
comment, so nothing a person said is lost. A staff rename of a thread is now
a recorded moderation action too."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

ASPECT_OF = {
    "overall": "helpfulness",
    "helpful": "helpfulness",
    "helpfulness": "helpfulness",
    "accuracy": "correctness",
    "correct": "correctness",
    "correctness": "correctness",
    "preferences": "preferences",
    "tone": "tone",
    "other": "other",
}


def fit_old_rows(apps, schema_editor):
    Feedback = apps.get_model("conversations", "Feedback")
    for row in Feedback.objects.all().iterator():
        aspect = ASPECT_OF.get(row.aspect.strip().lower())
        if aspect is None:
            row.comment = f"[{row.aspect}] {row.comment}".strip()
            aspect = "other"
        row.aspect = aspect
        row.rating = min(max(row.rating, 1), 5)
        row.save(update_fields=["aspect", "rating", "comment"])


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0004_turn"),
        ("workspace", "0003_document_revisions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(fit_old_rows, migrations.RunPython.noop),
        migrations.AlterModelOptions(
            name="feedback",
            options={"ordering": ["thread", "turn_index", "created_at"], "verbose_name_plural": "feedback"},
        ),
        migrations.AddField(
            model_name="feedback",
            name="artifact",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="feedback",
                to="workspace.artifact",
            ),
        ),
        migrations.AddField(
            model_name="feedback",
            name="artifact_title",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="feedback",
            name="updated_at",
            field=models.DateTimeField(auto_now=True),
        ),
        migrations.AlterField(
            model_name="feedback",
            name="aspect",
            field=models.CharField(
                choices=[
                    ("helpfulness", "Helpfulness"),
                    ("correctness", "Correctness"),
                    ("preferences", "Followed my preferences"),
                    ("tone", "Tone"),
                    ("other", "Other"),
                ],
                default="helpfulness",
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="feedback",
            name="rating",
            field=models.PositiveSmallIntegerField(),
        ),
        migrations.AlterField(
            model_name="feedback",
            name="scope",
            field=models.CharField(
                choices=[
                    ("turn", "The turn"),
                    ("document", "The document"),
                    ("plan", "The plan"),
                    ("preferences", "The preferences"),
                    ("artifact", "An artifact"),
                    ("thread", "The whole conversation"),
                ],
                default="turn",
                max_length=12,
            ),
        ),
        migrations.AddConstraint(
            model_name="feedback",
            constraint=models.CheckConstraint(
                condition=models.Q(("rating__gte", 1), ("rating__lte", 5)), name="feedback_rating_1_to_5"
            ),
        ),
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
                ],
                max_length=30,
            ),
        ),
    ]
