"""conversations/0018 + workspace/0011: the running-turn columns move from
the thread's row to conversations.TurnSlot with every claim as it was (a
turn running while the migration runs keeps its slot, its keepalive time
and its Stop request), and reversing puts them back."""

from datetime import UTC, datetime

import pytest

from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("conversations", "0017_model_usage"), ("workspace", "0010_imports_keep_their_times")]
AFTER = [("conversations", "0018_turn_slot"), ("workspace", "0011_thread_running_columns_moved")]
SINCE = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def test_running_turns_keep_their_claims_across_the_move_and_back(owner):
    apps = start_at(BEFORE, people=[owner])
    Thread = apps.get_model("workspace", "Thread")
    running = Thread.objects.create(owner_id=owner.pk, title="Running", turn_index=3, running_turn_index=3, running_since=SINCE)
    stopping = Thread.objects.create(
        owner_id=owner.pk, title="Stopping", turn_index=1, running_turn_index=1, running_since=SINCE, cancel_requested=True
    )
    idle = Thread.objects.create(owner_id=owner.pk, title="Idle", turn_index=5)
    try:
        apps = migrate_to(AFTER)
        TurnSlot = apps.get_model("conversations", "TurnSlot")
        assert {(s.thread_id, s.turn_index, s.since, s.cancel_requested) for s in TurnSlot.objects.all()} == {
            (running.pk, 3, SINCE, False),
            (stopping.pk, 1, SINCE, True),
        }
        # The counter stays on the thread; an idle thread needs no slot row.
        assert apps.get_model("workspace", "Thread").objects.get(pk=idle.pk).turn_index == 5

        apps = migrate_to(BEFORE)
        Thread = apps.get_model("workspace", "Thread")
        assert sorted(Thread.objects.values_list("title", "running_turn_index", "running_since", "cancel_requested")) == [
            ("Idle", None, None, False),
            ("Running", 3, SINCE, False),
            ("Stopping", 1, SINCE, True),
        ]
    finally:
        newest_schema_restored()
