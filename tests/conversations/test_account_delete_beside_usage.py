"""An account deleted while one of its turns stores usage: the deletion
goes through, and the row written meanwhile is left out as its person's
(conversations.usage), on PostgreSQL, which checks the rows' links when a
transaction commits."""

import threading
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.utils import timezone

from conversations.models import ModelUsage
from conversations.usage import usage_record
from workspace.models import Thread

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.postgres,
    # Row locks and links checked at commit: PostgreSQL's; SQLite writes one transaction at a time.
    pytest.mark.postgresql_pass,
]


def _row(user, thread):
    return {
        "key": uuid.uuid4(),
        "user_id": user.pk,
        "thread_id": thread.pk,
        "turn_id": None,
        "turn_index": 1,
        "provider_id": None,
        "provider_name": "environment",
        "model": "scripted",
        "model_key": "env:scripted",
        "input_tokens": 900,
        "output_tokens": 60,
        "estimated": True,
        "created_at": timezone.now(),
    }


def test_an_account_deleted_as_its_turn_stores_usage_is_deleted_and_the_late_row_left_out(owner):
    """The watcher's row committed between Django's DELETE of the account's
    usage rows and its DELETE of the account: before the account's row was
    locked, the deletion failed (a foreign key violation) and staff saw an error."""
    editor = get_user_model().objects.create_user(username="ed", password="pw-123456789")
    thread = Thread.objects.create(owner=owner, title="Shared")
    editor_id = editor.pk
    usage_record(rows=[_row(editor, thread)])
    stored: dict = {}

    def late_usage():
        try:
            stored["count"] = usage_record(rows=[_row(editor, thread)])
        except Exception as error:  # pragma: no cover - reported by the assertion below
            stored["error"] = error
        finally:
            connections.close_all()

    writer = threading.Thread(target=late_usage)

    def between_the_two_deletes(execute, sql, params, many, context):
        if sql.startswith('DELETE FROM "auth_user"') and writer.ident is None:
            writer.start()
            writer.join(timeout=1.5)  # committed here unless the account's row is locked
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between_the_two_deletes):
        editor.delete()
    writer.join(timeout=10)

    assert not writer.is_alive() and "error" not in stored, stored
    assert stored["count"] == 0  # left out: its person is gone
    assert not get_user_model().objects.filter(username="ed").exists()
    assert not ModelUsage.objects.filter(user_id=editor_id).exists()
