"""Moving the test database to a point in the migration history and back,
for the tests of one data migration; the digest that names a database
migrated from these migration files (docs/adr/0096)."""

import fcntl
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
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


def migrate_in_a_process_of_its_own(database_url: str) -> None:
    """`manage.py migrate` on the database at `database_url`, in a fresh
    Python with the site's settings and no model or tracing variables
    (the making of a template); RuntimeError with its output if it fails."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_", "HAICO_MODEL", "REDIS_URL"))
    }
    env.update({"DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "haico_site.settings"})
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if migrated.returncode != 0:
        raise RuntimeError(f"migrating {database_url} failed:\n{migrated.stdout}\n{migrated.stderr}")


def migrated_sqlite_template() -> Path:
    """A SQLite database migrated to the code's migrations, with no test's
    rows: what every test database and test server on SQLite starts as a
    copy of. Made by the first test process that asks, under a lock, and
    kept for later runs under the digest of the migrations, as the
    PostgreSQL template is
    (tests/conftest.py): each test process of a run migrated its own, about
    2 s of CPU, and a browser test file run alone some 6 s more for its
    servers' (docs/adr/0096). Its journal is folded into the file, so a
    plain copy is whole.

    A template of other migrations (another branch's) is removed only once
    no run has asked for it for a day: a run still going may copy it again
    (a browser test's server) or restore its test database from it (a
    migration test), and each run marks its own as used when it asks."""
    folder = Path(tempfile.gettempdir()) / "haico-test-templates"
    folder.mkdir(exist_ok=True)
    path = folder / f"sqlite-{migrations_digest()}.sqlite3"
    with open(folder / "sqlite.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            os.utime(path)
        else:
            # What a run killed while making one left (only one process at
            # a time makes one: the lock is held), and templates unused for a day.
            unused_since = time.time() - 24 * 3600
            for stale in [*folder.glob("partial-*"), *folder.glob("sqlite-*.sqlite3")]:
                if stale.name.startswith("partial-") or stale.stat().st_mtime < unused_since:
                    stale.unlink(missing_ok=True)  # a copy being read keeps its open file
            partial = folder / f"partial-{os.getpid()}.sqlite3"
            migrate_in_a_process_of_its_own(f"sqlite:///{partial}")
            conn = sqlite3.connect(partial)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("PRAGMA journal_mode=DELETE")
            finally:
                conn.close()
            for leftover in (f"{partial}-wal", f"{partial}-shm"):
                Path(leftover).unlink(missing_ok=True)
            os.replace(partial, path)  # only a whole template ever has its name
    return path


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


def start_at(targets, *, people=()):
    """The test database at `targets` [(app, migration name), ...], with no
    row but `people` (the test's users, made by its fixtures in the newest
    schema) as they were; the apps as they are then. What a migration test
    starts from.

    Moving the newest schema back renders the state of every migration on
    the way, and each costs more the more models follow it: most of such a
    test's CPU (docs/adr/0096). So a database moved back by at least two
    migrations for every five it keeps is emptied and migrated from nothing
    instead, up to what moving it back would have kept (test_0004's first
    test: 7.0 -> 2.7 s on SQLite, 5.5 -> 3.8 s on PostgreSQL). Nearer the
    newest, moving back costs less (test_0023's, three back: 1.1 s, and
    2.8 s from nothing; workspace/0011's, 23 back and 58 kept, is about
    even on SQLite and slower from nothing on PostgreSQL). Also the old way
    where no copy of the newest schema was kept to empty the database by."""
    graph = MigrationExecutor(connection).loader.graph
    undone = set()
    for app, name in targets:
        # What Django's executor unapplies: the target's successors in its
        # app and every migration that needs them.
        for child in graph.node_map[(app, name)].children:
            if child[0] == app:
                undone.update(graph.backwards_plan(child))
    kept = set(graph.nodes) - undone
    if not NEWEST_SCHEMA or len(undone) * 5 < len(kept) * 2:
        return migrate_to(targets)
    _emptied()
    try:
        apps = migrate_to(sorted(node for node in kept if not any(child in kept for child in graph.node_map[node].children)))
        user = apps.get_model("auth", "User")
        for person in people:
            user.objects.create(**{field.attname: getattr(person, field.attname) for field in user._meta.concrete_fields})
    except BaseException:
        # The tests after this one in the process get their database back
        # even though this test never reached its own restore.
        newest_schema_restored()
        raise
    return apps


def _emptied() -> None:
    """No table left in the test database (Django's, the checkpointer's)."""
    if "sqlite" in NEWEST_SCHEMA:
        with sqlite3.connect(":memory:") as source, sqlite3.connect(connection.settings_dict["NAME"]) as target:
            source.backup(target)
        source.close()
        target.close()
    else:
        _copy_the_postgres_template(NEWEST_SCHEMA["postgresql"][0], "template0")


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
        # Read-only: a copy that went missing fails here, rather than
        # opening as a new, empty database that would be copied in.
        newest = f"file:{NEWEST_SCHEMA['sqlite']}?mode=ro"
        with sqlite3.connect(newest, uri=True) as source, sqlite3.connect(connection.settings_dict["NAME"]) as target:
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
