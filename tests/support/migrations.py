"""Moving the test database to a point in the migration history and back,
for the tests of one data migration; the digest that names a database
migrated from these migration files (docs/adr/0096)."""

import hashlib
from pathlib import Path

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

ROOT = Path(__file__).resolve().parent.parent.parent


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
    """Migrate to `targets` [(app, migration name), ...]; the apps as they were there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest():
    """Back to the newest migrations, as every other test expects."""
    migrate_to(MigrationExecutor(connection).loader.graph.leaf_nodes())
