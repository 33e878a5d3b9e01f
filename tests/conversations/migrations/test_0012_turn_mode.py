"""conversations/0012: turns from before it take their thread's mode, the only one known for them."""

import pytest

from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("conversations", "0011_moderation_staff_workspace_view"), ("workspace", "0008_thread_chat_model")]
AFTER = [("conversations", "0012_turn_mode")]


def test_existing_turns_take_their_threads_mode(owner):
    apps = start_at(BEFORE, people=[owner])
    Thread, Turn = apps.get_model("workspace", "Thread"), apps.get_model("conversations", "Turn")
    modes = {}
    for title, mode in (("Planning", "plan"), ("Looking", "explore"), ("Doing", "execute")):
        thread = Thread.objects.create(owner_id=owner.pk, title=title, turn_index=2, mode=mode)
        for index in (1, 2):
            Turn.objects.create(thread=thread, index=index, user_message=f"{title} {index}", status="complete")
        modes[title] = mode
    try:
        apps = migrate_to(AFTER)
        Turn = apps.get_model("conversations", "Turn")
        rows = Turn.objects.order_by("thread__title", "index").values_list("thread__title", "index", "mode")
        assert list(rows) == [
            ("Doing", 1, "execute"),
            ("Doing", 2, "execute"),
            ("Looking", 1, "explore"),
            ("Looking", 2, "explore"),
            ("Planning", 1, "plan"),
            ("Planning", 2, "plan"),
        ]
    finally:
        newest_schema_restored()
