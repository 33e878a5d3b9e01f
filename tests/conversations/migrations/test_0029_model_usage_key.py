"""conversations/0029: every model call's row gets a key of its own
(docs/adr/0154). The calls stored before keep their figures and no key (no
retry names them; a unique key may be missing on many rows); a call stored
after gets one, and storing it again by that key replaces it. Reversing
drops the key and keeps the calls."""

import pytest

from conversations.usage import usage_record
from tests.support.migrations import migrate_to, migrate_to_latest, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("conversations", "0028_staff_lists_newest_first")]
AFTER = [("conversations", "0029_model_usage_key")]


def test_the_calls_stored_before_keep_their_figures_and_new_ones_get_keys(owner):
    apps = start_at(BEFORE, people=[owner])
    Usage = apps.get_model("conversations", "ModelUsage")
    for tokens in (700, 800):
        Usage.objects.create(user_id=owner.pk, provider_name="env", model="scripted", input_tokens=tokens, output_tokens=10)
    try:
        Usage = migrate_to(AFTER).get_model("conversations", "ModelUsage")
        assert sorted(Usage.objects.values_list("input_tokens", "key")) == [(700, None), (800, None)]
        migrate_to_latest()
        row = {"user_id": owner.pk, "provider_name": "env", "model": "scripted", "input_tokens": 900, "output_tokens": 1}
        usage_record(rows=[row])
        usage_record(rows=[{**row, "output_tokens": 20}])  # the same call again, its figure now
        Usage = migrate_to(AFTER).get_model("conversations", "ModelUsage")
        assert row["key"] is not None
        assert sorted(Usage.objects.values_list("input_tokens", "output_tokens", "key")) == [
            (700, 10, None),
            (800, 10, None),
            (900, 20, row["key"]),
        ]
        Usage = migrate_to(BEFORE).get_model("conversations", "ModelUsage")
        assert sorted(Usage.objects.values_list("input_tokens", flat=True)) == [700, 800, 900]
    finally:
        newest_schema_restored()
