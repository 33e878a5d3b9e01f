"""The production start as a fixture (tests/support/production.py), and the
`deploy` marker on every test here: they start their own servers on their
own databases, so `./dev test` does not run them a second time on
PostgreSQL."""

from pathlib import Path

import pytest

from tests.support.production import start_production  # noqa: F401  (the fixture)


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.deploy)
