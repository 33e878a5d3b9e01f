"""conversations/0013: a model a thread or turn named before the catalogue
is the environment's model of that name, and stays chosen."""

import pytest

from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("conversations", "0015_accounts_invites_token_scopes"), ("workspace", "0010_imports_keep_their_times")]
AFTER = [("conversations", "0016_model_keys")]


def _values(apps):
    Thread, Turn = apps.get_model("workspace", "Thread"), apps.get_model("conversations", "Turn")
    return (
        list(Thread.objects.order_by("title").values_list("title", "chat_model")),
        list(Turn.objects.order_by("index").values_list("index", "model_name")),
    )


def test_model_names_become_keys_of_the_environment_s_models_and_back(owner):
    apps = start_at(BEFORE, people=[owner])
    Thread, Turn = apps.get_model("workspace", "Thread"), apps.get_model("conversations", "Turn")
    chosen = Thread.objects.create(owner_id=owner.pk, title="a chosen", chat_model="llama3.1:8b")
    Thread.objects.create(owner_id=owner.pk, title="b default", chat_model="")
    for index, name in ((1, "gpt-4o-mini"), (2, ""), (3, "qwen2.5:7b-instruct")):
        Turn.objects.create(thread=chosen, index=index, user_message="hi", model_name=name)
    try:
        after = _values(migrate_to(AFTER))
        assert after == (
            [("a chosen", "env:llama3.1:8b"), ("b default", "")],
            [(1, "env:gpt-4o-mini"), (2, ""), (3, "env:qwen2.5:7b-instruct")],
        )
        # Backwards, a catalogue model (unknown before) becomes the default.
        Thread = migrate_to(AFTER).get_model("workspace", "Thread")
        Thread.objects.filter(title="b default").update(chat_model="catalogue:3")
        assert _values(migrate_to(BEFORE)) == (
            [("a chosen", "llama3.1:8b"), ("b default", "")],
            [(1, "gpt-4o-mini"), (2, ""), (3, "qwen2.5:7b-instruct")],
        )
    finally:
        newest_schema_restored()
