"""Helpers for the human-side view tests (tests/workspace/views/,
tests/conversations/test_views.py)."""

# What htmx sends with every request it makes; django-htmx reads it into request.htmx.
HTMX = {"HTTP_HX_REQUEST": "true"}


def ws_url(thread, suffix=""):
    return f"/threads/{thread.pk}/workspace/{suffix}"
