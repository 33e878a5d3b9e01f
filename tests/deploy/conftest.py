"""The production start as a fixture (tests/support/production.py), and the
`deploy` marker on every test here: they start their own servers on their
own databases, so `./dev test` does not run them a second time on
PostgreSQL."""

from pathlib import Path

import pytest

from tests.support.production import start_production  # noqa: F401  (the fixture)
from tests.support.services import PrivatePostgres, PrivateRedis, migrated_private_postgres


@pytest.fixture
def private_services(tmp_path):
    """A PostgreSQL cluster and a Redis of the test's own, to stop and start
    under a server; the shared ones are never touched. The cluster is a copy
    of one migrated once (tests.support.services.migrated_private_postgres),
    so the start's migrate finds nothing to do: these tests are about a
    service going away under a running server, and each spent an initdb and
    a migrate from empty (some 10 s of CPU) on the way (docs/adr/0096).
    A migrate from empty is tests/deploy/test_start.py's (through the
    start, on SQLite) and tests/haico_site/test_settings_postgres.py's (on
    PostgreSQL)."""
    for reason in (PrivatePostgres.available(), PrivateRedis.available()):
        if reason:
            pytest.skip(reason)
    postgres, redis = migrated_private_postgres(), PrivateRedis(tmp_path)
    try:
        postgres.start()
        redis.start()
        yield postgres, redis
    finally:
        redis.close()
        postgres.close()


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.deploy)
