"""Fixtures for the workspace tests."""

import pytest

from tests.support.admin import populated  # noqa: F401  (the admin tests' rows of every model)
from workspace.services import preferences as preferences_services


@pytest.fixture
def mixed_preferences(thread):
    """Added soft, hard, soft, hard: indices are hard first (B=1, D=2), then soft (A=3, C=4)."""
    for title, kind in (("A", "soft"), ("B", "hard"), ("C", "soft"), ("D", "hard")):
        preferences_services.preference_add(thread=thread, title=title, kind=kind, respect_lock=False)
    return thread
