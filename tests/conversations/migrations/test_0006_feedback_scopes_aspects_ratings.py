"""conversations/0006: feedback left before keeps what the person said, on the new scale."""

import pytest

from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("conversations", "0004_turn"), ("workspace", "0003_document_revisions")]
AFTER = [("conversations", "0006_feedback_scopes_aspects_ratings")]


def test_old_ratings_and_aspects_are_fitted_to_the_choices(owner):
    apps = start_at(BEFORE, people=[owner])
    Thread, Feedback = apps.get_model("workspace", "Thread"), apps.get_model("conversations", "Feedback")
    thread = Thread.objects.create(owner_id=owner.pk, title="One", turn_index=2)
    old = [(-1, "overall", "bad"), (0, "accuracy", ""), (5, "Tone", "lovely"), (3, "speed", "slow")]
    for rating, aspect, comment in old:
        Feedback.objects.create(thread=thread, user_id=owner.pk, turn_index=1, rating=rating, aspect=aspect, comment=comment)
    try:
        apps = migrate_to(AFTER)
        Feedback = apps.get_model("conversations", "Feedback")
        assert list(Feedback.objects.order_by("pk").values_list("rating", "aspect", "comment", "scope")) == [
            (1, "helpfulness", "bad", "turn"),
            (1, "correctness", "", "turn"),
            (5, "tone", "lovely", "turn"),
            (3, "other", "[speed] slow", "turn"),
        ]
    finally:
        newest_schema_restored()
