"""Helpers for the human-side view tests (tests/workspace/views/,
tests/conversations/test_views.py)."""

# What htmx sends with every request it makes; django-htmx reads it into request.htmx.
HTMX = {"HTTP_HX_REQUEST": "true"}


def ws_url(thread, suffix=""):
    return f"/threads/{thread.pk}/workspace/{suffix}"


def database_rows() -> dict:
    """Every row of every table (sessions aside), to show that a refused
    request changed nothing: compare before and after."""
    from django.apps import apps
    from django.contrib.sessions.models import Session
    from django.db import connection

    rows = {}
    with connection.cursor() as cursor:
        for model in apps.get_models(include_auto_created=True):
            if model is Session or model._meta.proxy:
                continue
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(model._meta.db_table)} ORDER BY 1")
            rows[model._meta.label] = cursor.fetchall()
    return rows
