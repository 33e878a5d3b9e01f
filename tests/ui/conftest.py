"""Helpers for the human-side view tests."""

import pytest

from tests.conftest import PASSWORD  # noqa: F401  (re-exported for the account tests)

# What htmx sends with every request it makes; django-htmx reads it into request.htmx.
HTMX = {"HTTP_HX_REQUEST": "true"}


def ws_url(thread, suffix=""):
    return f"/threads/{thread.pk}/workspace/{suffix}"


@pytest.fixture
def anon_client(client):
    return client
