"""The production start as a fixture (tests/support/production.py), and the
`deploy` marker on every test here: they start their own servers on their
own databases, so `./dev test` does not run them a second time on
PostgreSQL."""

from pathlib import Path

import pytest

from tests.support.production import start_production  # noqa: F401  (the fixture)
from tests.support.services import PrivatePostgres, PrivateRedis


@pytest.fixture
def private_services(tmp_path):
    """A PostgreSQL cluster and a Redis of the test's own, to stop and start
    under a server; the shared ones are never touched."""
    for reason in (PrivatePostgres.available(), PrivateRedis.available()):
        if reason:
            pytest.skip(reason)
    postgres, redis = PrivatePostgres(), PrivateRedis(tmp_path)
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
