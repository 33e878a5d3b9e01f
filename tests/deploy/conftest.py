"""The production start as a fixture (tests/support/production.py)."""

from tests.support.production import start_production  # noqa: F401  (the fixture)
