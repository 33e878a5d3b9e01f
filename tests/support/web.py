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


def answered_as_missing(response) -> bool:
    """How a thread or row that is not there for this person (deleted, maybe
    in another tab, or someone else's) is answered: a plain request gets a
    404; an htmx one 200 and a message the page shows instead of an error
    page (haico_site.middleware, workspace.views.common.gone)."""
    if not response.wsgi_request.htmx:
        return response.status_code == 404
    shown = response.content.decode() + response.get("HX-Trigger", "")
    return response.status_code == 200 and "no longer exists" in shown
