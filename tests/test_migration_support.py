"""tests.support.migrations: after a migration test moved the test database
back in its history, the next test gets it as it was migrated for the
process, newest schema and no rows, whatever pass it runs in (SQLite or
PostgreSQL, docs/adr/0096)."""

import sqlite3
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from conversations.usage import usage_record
from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)


def _schema():
    """Django's tables and their columns (the checkpointer's are not
    Django's: tests.support.migrations.newest_schema_restored)."""
    with connection.cursor() as cursor:
        tables = set(connection.introspection.table_names(cursor)) & set(connection.introspection.django_table_names())
        return {
            table: sorted(column.name for column in connection.introspection.get_table_description(cursor, table))
            for table in tables
        }


def test_the_database_a_migration_test_moved_back_is_given_back_at_its_newest_and_empty(owner):
    newest = _schema()
    usage = migrate_to([("conversations", "0028_staff_lists_newest_first")]).get_model("conversations", "ModelUsage")
    usage.objects.create(user_id=owner.pk, provider_name="env", model="scripted", input_tokens=1, output_tokens=1)
    assert "key" not in {column for column in _schema()["conversations_modelusage"]}

    newest_schema_restored()

    executor = MigrationExecutor(connection)
    assert not executor.migration_plan(executor.loader.graph.leaf_nodes())  # nothing left to apply
    assert _schema() == newest
    from django.contrib.auth import get_user_model

    from conversations.models import ModelUsage

    assert not get_user_model().objects.exists() and not ModelUsage.objects.exists()
    # The database works as the code's models expect (conversations/0029's key).
    person = get_user_model().objects.create_user(username="after")
    usage_record(
        rows=[{"user_id": person.pk, "provider_name": "env", "model": "scripted", "input_tokens": 2, "output_tokens": 3}]
    )
    assert list(ModelUsage.objects.values_list("input_tokens", "output_tokens")) == [(2, 3)]
    assert ModelUsage.objects.get().key is not None


def test_a_test_started_far_back_from_an_emptied_database_has_its_people_and_the_old_schema_then_the_newest(owner, other_user):
    newest = _schema()
    # Far back: the database is emptied and migrated from nothing, not moved back.
    apps = start_at([("workspace", "0003_document_revisions")], people=[owner, other_user])
    people = apps.get_model("auth", "User").objects.order_by("pk")
    assert [(p.pk, p.username, p.password) for p in people] == [
        (owner.pk, "owner", owner.password),
        (other_user.pk, "intruder", other_user.password),
    ]
    old = _schema()
    assert "workspace_documentrevision" in old and "workspace_contentblob" not in old  # 0004 made the blobs
    assert not apps.get_model("workspace", "Thread").objects.exists()

    newest_schema_restored()

    assert _schema() == newest
    executor = MigrationExecutor(connection)
    assert not executor.migration_plan(executor.loader.graph.leaf_nodes())


def test_the_test_database_started_as_the_template_of_exactly_these_migrations(request):
    """Each test process copies a template migrated once (on SQLite a file,
    on PostgreSQL a database) instead of migrating its own; the template is
    named by the digest of the migrations, so one migrated from others is
    never copied (tests/conftest.py django_db_keepdb)."""
    from django.db.migrations.loader import MigrationLoader

    from tests.support.migrations import NEWEST_SCHEMA, migrations_digest

    if request.config.getvalue("reuse_db"):
        pytest.skip("with --reuse-db Django keeps the database of the last run")
    if connection.vendor == "sqlite":
        template = Path(NEWEST_SCHEMA["sqlite"])
        assert template.name == f"sqlite-{migrations_digest()}.sqlite3"
        source = sqlite3.connect(f"file:{template}?mode=ro", uri=True)
        try:
            recorded = set(source.execute("SELECT app, name FROM django_migrations"))
            tables = {row[0] for row in source.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            source.close()
        assert recorded == set(MigrationLoader(connection).disk_migrations)
        assert tables == set(_schema()) | {"django_migrations", "sqlite_sequence"}
    else:
        assert NEWEST_SCHEMA["postgresql"][1] == f"haico_migrated_{migrations_digest()}"
