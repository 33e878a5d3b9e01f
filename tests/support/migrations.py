"""Moving the test database to a point in the migration history and back,
for the tests of one data migration; the digest that names a database
migrated from these migration files (docs/adr/0096)."""

import hashlib
import sqlite3
from pathlib import Path

from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor

ROOT = Path(__file__).resolve().parent.parent.parent

# How this test process gives its test database back the newest schema
# after a migration test (`newest_schema_restored`): the path of a copy of
# the SQLite test database taken when it was just migrated, or the
# PostgreSQL server and template the test database was copied from
# (tests/conftest.py). Empty: by migrating, as before.
NEWEST_SCHEMA: dict[str, object] = {}
TEMPLATE_LOCK = "SELECT pg_advisory_lock(hashtext('haico migrated template'))"
TEMPLATE_UNLOCK = "SELECT pg_advisory_unlock(hashtext('haico migrated template'))"


def migrations_digest() -> str:
    """A digest of every migration file of the project's and of the locked
    dependencies (Django's own apps, axes: their migrations change with
    their versions): a template migrated from other migrations is never cloned."""
    digest = hashlib.sha256()
    for path in sorted([*ROOT.glob("*/migrations/*.py"), ROOT / "requirements.lock"]):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def migrate_to(targets):
    """Migrate to `targets` [(app, migration name), ...]; the apps as they
    are then. The state the migration leaves is the one returned (its models
    already rendered going forwards), not a second one rendered from the
    graph: rendering is most of a migration test's CPU (docs/adr/0096)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    state = executor.migrate(targets)
    # As Django's migrate command does with the state it ends at: models
    # whose rendering an operation delayed are rendered anew.
    state.clear_delayed_apps_cache()
    return state.apps


def migrate_to_latest():
    """Forward to the newest migrations: those under test and every one after them."""
    migrate_to(MigrationExecutor(connection).loader.graph.leaf_nodes())


def keep_the_newest_schema_sqlite() -> None:
    """Copy the SQLite test database, just migrated and holding no test's
    rows, for `newest_schema_restored` (tests/conftest.py calls it once a
    process)."""
    name = connection.settings_dict["NAME"]
    copy = f"{name}.newest"
    with sqlite3.connect(name) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    source.close()
    target.close()
    NEWEST_SCHEMA["sqlite"] = copy


def newest_schema_restored():
    """After a migration test, the test database as it was migrated once for
    the process: what every other test expects. A copy, not a migration
    sweep to the newest migrations, which is what no test here tests and
    cost each test a few seconds of CPU (docs/adr/0096). Then pytest-django
    empties it as after any test with `transaction=True`.

    The LangGraph checkpointer's tables, which it makes in the same database
    on first use (not Django's migrations), start over as in a new process:
    its writers make them (`setup`) whenever they open, its readers take a
    missing table for no turns (agent.history), and no test reads another's
    checkpoints (a thread's id is a new UUID)."""
    if "sqlite" in NEWEST_SCHEMA:
        # SQLite's backup writes the copy into the database through its own
        # locks, so connections left open (asgiref's worker thread's) read
        # the restored database, schema and all.
        with sqlite3.connect(NEWEST_SCHEMA["sqlite"]) as source, sqlite3.connect(connection.settings_dict["NAME"]) as target:
            source.backup(target)
        source.close()
        target.close()
    elif "postgresql" in NEWEST_SCHEMA:
        _copy_the_postgres_template(*NEWEST_SCHEMA["postgresql"])
    else:
        migrate_to_latest()


def _copy_the_postgres_template(base: str, template: str) -> None:
    import psycopg
    from asgiref.sync import SyncToAsync
    from psycopg import sql

    name = connection.settings_dict["NAME"]
    # Django's connections to it, this thread's and asgiref's worker thread's;
    # any other is ended by the FORCE, and Django reconnects on next use.
    from agent.history import close_read_pool

    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=10)
    connections.close_all()
    close_read_pool()  # the chat's reads of the checkpointer; the next read opens it again
    with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
        conn.execute(TEMPLATE_LOCK)
        try:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
        finally:
            conn.execute(TEMPLATE_UNLOCK)
