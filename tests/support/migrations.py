"""Moving the test database to a point in the migration history and back,
for the tests of one data migration."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets):
    """Migrate to `targets` [(app, migration name), ...]; the apps as they were there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest():
    """Back to the newest migrations, as every other test expects."""
    migrate_to(MigrationExecutor(connection).loader.graph.leaf_nodes())
