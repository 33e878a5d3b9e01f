"""Shared fixtures: the personas (owner, another user, staff) and a thread."""

import gc
import os
from collections import Counter
from pathlib import Path

import pytest

from tests.support.migrations import NEWEST_SCHEMA, migrate_in_a_process_of_its_own, migrations_digest

pytest_plugins = ["tests.support.timing"]

# The model wire and tracing must never reach a real provider from the tests.
for _name in list(os.environ):
    if _name.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_")):
        del os.environ[_name]

PASSWORD = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Personas are created with a password and the real hasher is slow on
    # purpose; login still checks real passwords, just hashed faster.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(scope="session", autouse=True)
def _close_the_forker():
    """The process the test servers and commands are forked from
    (tests.support.forked_python.FORKER, docs/adr/0082), if one started."""
    from tests.support.forked_python import FORKER

    yield
    FORKER.close()


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """The rate limits count in the cache (this process's memory in tests):
    every test starts with nothing counted (conversations.ratelimit)."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


# CI sets HAICO_REQUIRE_ALL_TESTS=1: a test that would skip locally (no
# Chromium, no PostgreSQL, no Redis) is a failure there, so a green CI run
# proves that every test ran.
REQUIRE_ALL_TESTS = os.environ.get("HAICO_REQUIRE_ALL_TESTS") == "1"


def _skip_reason(longrepr) -> str:
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL_TESTS and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under HAICO_REQUIRE_ALL_TESTS=1 (every test must run): {_skip_reason(report.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL_TESTS and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"module skipped under HAICO_REQUIRE_ALL_TESTS=1: {_skip_reason(report.longrepr)}"


# `./dev test` runs the suite a second time on PostgreSQL with
# HAICO_TEST_DATABASE_ONLY=1: that pass keeps the tests that use Django's
# database (the django_db mark or a database fixture) and leaves out the rest,
# whose outcome does not depend on the database (pytest-django refuses them
# the database: "Database access not allowed"), so they ran once already in
# the first pass. That includes the tests marked postgres or redis that do not
# use Django's database: they make a PostgreSQL database of their own or
# reach Redis, the same in either pass (docs/adr/0096).
DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
        "admin_user",
        "admin_client",
    }
)
DATABASE_ONLY = os.environ.get("HAICO_TEST_DATABASE_ONLY") == "1"


def uses_the_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or not DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def on_postgresql() -> bool:
    """Whether this pass's Django database is PostgreSQL (DATABASE_URL)."""
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


@pytest.hookimpl(trylast=True)
def _run_order(item, tests_in_file) -> tuple[int, int]:
    """Where a test runs in the suite: first the browser tests that wait on
    purpose for a minute or more (a failover, a server killed for good), then
    the other browser tests, files of many tests before files of few, then
    the deploy tests (servers started and stopped), then the rest, its
    tests marked heavy first.

    The browser tests run together, as one block: while Playwright's sync API
    is active the main thread looks like it runs an event loop, so no async
    test may run in between (the Playwright fixtures are package-scoped for
    the same reason: they stop as soon as the last browser test is done);
    under pytest-xdist each browser file is one group, which one worker runs
    in one go. They run first because they mostly wait on pages and servers:
    in `./dev test` that waiting overlaps the PostgreSQL pass's work, which
    runs beside this one, where run last it left the cores idle for the
    suite's last minutes (docs/adr/0096). `./dev test` turns off
    pytest-xdist's own reordering (by group size alone), which put a
    one-test file that waits two minutes after every other test.

    A heavy test (mypy's run, a migration walked back, a thousand saves)
    would, handed out among the last, run on alone while the other workers
    had finished: the last 20 s of a rehearsal were mypy on one core
    (docs/adr/0096)."""
    if item.get_closest_marker("browser"):
        return (0 if item.get_closest_marker("long_wait") else 1, -tests_in_file[item.path])
    if item.path.is_relative_to(DEPLOY_TESTS):
        return (2, 0)
    return (3, 0 if item.get_closest_marker("heavy") else 1)


DEPLOY_TESTS = Path(__file__).parent / "deploy"


def pytest_collection_finish(session):
    """What collection imported (Django, LangChain, the project, the test
    modules) lives as long as the run: it is set aside from the garbage
    collector (gc.freeze), whose full collections walked it over and over as
    the tests allocate. What a test makes is collected as ever.
    tests/workspace and tests/agent in one process: 121 -> 110 CPU s
    (docs/adr/0096)."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    tests_in_file = Counter(item.path for item in items)
    items.sort(key=lambda item: _run_order(item, tests_in_file))
    if not on_postgresql():
        # What only a PostgreSQL server does (end a connection under a
        # request) has nothing to test on SQLite: such a test runs in the
        # PostgreSQL pass, and is left out here rather than skipped.
        left_out = [item for item in items if item.get_closest_marker("postgresql_pass")]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if not item.get_closest_marker("postgresql_pass")]
    if not DATABASE_ONLY:
        return
    kept = [item for item in items if uses_the_database(item)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if not uses_the_database(item)])
        items[:] = kept


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="owner", password=PASSWORD)


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="intruder", password=PASSWORD)


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_superuser(username="staff", password=PASSWORD, email="staff@example.com")


@pytest.fixture
def thread(owner):
    from conversations.services import thread_create

    return thread_create(owner=owner, title="Lit review")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def other_client(client, other_user):
    client.force_login(other_user)
    return client


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def postgres_database_url():
    """A fresh, empty PostgreSQL database (dropped afterwards) on the server at
    HAICO_TEST_POSTGRES_URL; skips when that is unset (a failure in CI)."""
    import uuid

    base = os.environ.get("HAICO_TEST_POSTGRES_URL", "")
    if not base:
        pytest.skip("HAICO_TEST_POSTGRES_URL is not set (scripts/test_services.sh start prints it)")
    import psycopg
    from psycopg import sql

    name = f"haico_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield base.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


MIGRATED_TEMPLATE_PREFIX = "haico_migrated_"


def _migrated_template(conn, base: str) -> str:
    """The name of a database migrated to the code's migrations on the
    server at `base`, made by the first test process that asks (the caller
    holds the advisory lock that makes it the only one)."""
    import psycopg
    from psycopg import sql

    name = f"{MIGRATED_TEMPLATE_PREFIX}{migrations_digest()}"
    existing = {
        row[0] for row in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (MIGRATED_TEMPLATE_PREFIX + "%",))
    }
    if name in existing:
        return name
    for stale in existing:
        # Templates of older migrations (a developer's earlier runs), and a
        # partial one a killed run left. One still being cloned stays.
        try:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(stale)))
        except psycopg.errors.ObjectInUse:
            pass  # another run is copying it; it goes next time
    partial = f"{name}_partial"
    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(partial)))
    try:
        migrate_in_a_process_of_its_own(f"{base.rsplit('/', 1)[0]}/{partial}")
    except RuntimeError:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(partial)))
        raise
    # Renamed only once whole, so a template that exists is complete.
    conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(sql.Identifier(partial), sql.Identifier(name)))
    return name


@pytest.fixture(scope="session")
def django_db_keepdb(request, django_db_modify_db_settings):
    """On PostgreSQL, this test process's Django test database is a copy of
    the migrated template (docs/adr/0096) made here, and Django is told to
    keep it, so it does not migrate it again: a migrate from empty cost each
    worker of the PostgreSQL pass about 6 s of CPU (8 s of setup alone, 13
    under load), a copy a fraction of a second. Dropped at the end here,
    since Django keeps it. With --reuse-db, or on another server than
    HAICO_TEST_POSTGRES_URL's, Django makes its database as usual. On SQLite
    the same, from a file (`_sqlite_test_database_copied_from_the_template`)."""
    reuse_db = request.config.getvalue("reuse_db")
    base = os.environ.get("HAICO_TEST_POSTGRES_URL", "")
    database_url = os.environ.get("DATABASE_URL", "")
    if not reuse_db and not on_postgresql():
        yield from _sqlite_test_database_copied_from_the_template()
        return
    if reuse_db or not on_postgresql() or not base or database_url.rsplit("/", 1)[0] != base.rsplit("/", 1)[0]:
        yield reuse_db
        return
    import psycopg
    from django.conf import settings
    from psycopg import sql

    database = settings.DATABASES["default"]
    name = database.get("TEST", {}).get("NAME") or f"test_{database['NAME']}"
    with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
        # The same lock as every other copy of the template takes.
        conn.execute("SELECT pg_advisory_lock(hashtext('haico migrated template'))")
        try:
            template = _migrated_template(conn, base)
            # One a killed run left behind under this name.
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext('haico migrated template'))")
    # A migration test gives the database back its newest schema by the same copy.
    NEWEST_SCHEMA["postgresql"] = (base, template)
    try:
        yield True
    finally:
        with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _sqlite_test_database_copied_from_the_template():
    """On SQLite the same as on PostgreSQL: this test process's database is
    a copy of the migrated template (tests.support.migrations.
    migrated_sqlite_template), which Django keeps rather than migrates, and
    it is removed at the end here. A database in memory is made as usual."""
    import shutil

    from django.conf import settings

    from tests.support.migrations import migrated_sqlite_template

    database = settings.DATABASES["default"]
    name = database.get("TEST", {}).get("NAME") or ""
    if database["ENGINE"] != "django.db.backends.sqlite3" or not name or name == ":memory:" or "mode=memory" in name:
        yield False
        return
    template = migrated_sqlite_template()
    files = [Path(name), Path(f"{name}-wal"), Path(f"{name}-shm")]
    for path in files:  # one a killed run left under this name
        path.unlink(missing_ok=True)
    shutil.copyfile(template, name)
    # A migration test gives the database back its newest schema from it.
    NEWEST_SCHEMA["sqlite"] = str(template)
    try:
        yield True
    finally:
        for path in files:
            path.unlink(missing_ok=True)


@pytest.fixture
def migrated_postgres_database_url():
    """A fresh PostgreSQL database (dropped afterwards) already migrated to
    the code's migrations, on the server at HAICO_TEST_POSTGRES_URL; skips
    when that is unset (a failure in CI). It is a copy of a template the
    first test of a run migrates (each test process and both passes of
    `./dev test` share it), so a test does not spend a migration's seconds
    of CPU; a copy holds exactly what a migrate from empty leaves."""
    import uuid

    base = os.environ.get("HAICO_TEST_POSTGRES_URL", "")
    if not base:
        pytest.skip("HAICO_TEST_POSTGRES_URL is not set (scripts/test_services.sh start prints it)")
    import psycopg
    from psycopg import sql

    name = f"haico_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
        # One lock for every test process on this server: one migrates, the
        # others wait, and no copy is taken while the template is being made.
        conn.execute("SELECT pg_advisory_lock(hashtext('haico migrated template'))")
        try:
            template = _migrated_template(conn, base)
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtext('haico migrated template'))")
    try:
        yield base.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(base, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def redis_url():
    """HAICO_TEST_REDIS_URL; skips when it is unset (a failure in CI)."""
    url = os.environ.get("HAICO_TEST_REDIS_URL", "")
    if not url:
        pytest.skip("HAICO_TEST_REDIS_URL is not set (scripts/test_services.sh start prints it)")
    return url


@pytest.fixture(scope="session", autouse=True)
def newest_schema_kept(django_db_setup, django_db_blocker):
    """On SQLite, a copy of this process's test database as Django just
    migrated it, before any test's rows: a migration test gives the database
    back by it (tests.support.migrations.newest_schema_restored, docs/adr/0096).
    Where the database is a copy of a template (django_db_keepdb: on
    PostgreSQL, and on SQLite unless --reuse-db), the template serves."""
    from django.db import connection

    from tests.support.migrations import keep_the_newest_schema_sqlite

    if connection.vendor != "sqlite" or "sqlite" in NEWEST_SCHEMA:  # the template's copy (django_db_keepdb)
        yield
        return
    with django_db_blocker.unblock():
        keep_the_newest_schema_sqlite()
    yield
    copy = NEWEST_SCHEMA.pop("sqlite", None)
    if copy:
        Path(copy).unlink(missing_ok=True)


@pytest.fixture(scope="session", autouse=True)
def close_worker_thread_connections(django_db_setup, django_db_blocker):
    """Async tests reach the database from asgiref's shared worker thread, whose
    connection outlives the test (CONN_MAX_AGE); close it before the test
    database is dropped (PostgreSQL refuses to drop a database in use)."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    from agent.history import close_read_pool

    with django_db_blocker.unblock():
        SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=10)
    close_read_pool()  # the chat's reads of the checkpointer, on PostgreSQL


# What Django's flush leaves in place after a test with `transaction=True`:
# the rows the migrations made for the installed models, which no test
# changes. Emptied, they were made again row by row by the post_migrate
# handlers the flush runs (about a hundred permissions): 35-55 ms of every
# such test on PostgreSQL, about 30 ms on SQLite (docs/adr/0165).
FLUSH_KEEPS = frozenset({"django_content_type", "auth_permission"})


@pytest.fixture(scope="session", autouse=True)
def flush_keeps_the_migrated_rows_and_empties_by_delete():
    """A test with `transaction=True` ends with Django's flush; here it
    empties every table but FLUSH_KEEPS'. Django's own flush is, on
    PostgreSQL, one TRUNCATE of every table, which makes new files for each
    table and index and drops the old ones at commit, 1.4-2 s a test on the
    2-core CI machine; the suite's tables hold a few rows by then, and
    DELETE empties them in about 0.2 s. The foreign keys Django makes on
    PostgreSQL are deferred to the commit, so the order of the DELETEs does
    not matter. A test that asks for its sequences reset gets Django's own
    flush, every table emptied."""
    from django.core.management.commands import flush as flush_command
    from django.core.management.sql import emit_post_migrate_signal
    from django.db.backends.postgresql.operations import DatabaseOperations as PostgresOperations
    from django.db.backends.sqlite3.base import DatabaseOperations as SQLiteOperations

    truncate = PostgresOperations.sql_flush
    sqlite_flush = SQLiteOperations.sql_flush

    def postgres_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        return [
            f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
            for table in tables
            if table not in FLUSH_KEEPS
        ]

    def sqlite_flush_keeping(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if not reset_sequences and not allow_cascade:
            tables = [table for table in tables if table not in FLUSH_KEEPS]
        return sqlite_flush(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)

    PostgresOperations.sql_flush = postgres_flush
    SQLiteOperations.sql_flush = sqlite_flush_keeping
    flush_command.emit_post_migrate_signal = _post_migrate_unless_the_kept_rows_are_whole
    yield
    PostgresOperations.sql_flush = truncate
    SQLiteOperations.sql_flush = sqlite_flush
    flush_command.emit_post_migrate_signal = emit_post_migrate_signal


# The number of content types and permissions the post_migrate handlers
# leave, per database, counted after the first flush that ran them.
_WHOLE_KEPT_ROWS: dict[str, tuple[int, int]] = {}


def _kept_row_counts(database: str) -> tuple[int, int]:
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    return ContentType.objects.using(database).count(), Permission.objects.using(database).count()


def _post_migrate_unless_the_kept_rows_are_whole(verbosity, interactive, database, **kwargs):
    """The post_migrate handlers after a flush only make the content types
    and permissions that are missing: with none missing they are skipped
    (two counts instead of about eighty queries). A test that removed one
    has the handlers run after it, as Django would."""
    from django.core.management.sql import emit_post_migrate_signal

    if _WHOLE_KEPT_ROWS.get(database) == _kept_row_counts(database):
        return
    emit_post_migrate_signal(verbosity, interactive, database, **kwargs)
    _WHOLE_KEPT_ROWS[database] = _kept_row_counts(database)
