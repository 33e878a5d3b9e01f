"""Helpers for the human-side view tests (tests/workspace/views/,
tests/conversations/test_views.py)."""

# What htmx sends with every request it makes; django-htmx reads it into request.htmx.
HTMX = {"HTTP_HX_REQUEST": "true"}


def ws_url(thread, suffix=""):
    return f"/threads/{thread.pk}/workspace/{suffix}"


def _watched_models() -> list:
    """The site's models, sessions aside (a request may rightly save its session)."""
    from django.apps import apps
    from django.contrib.sessions.models import Session

    return [model for model in apps.get_models(include_auto_created=True) if model is not Session and not model._meta.proxy]


def database_rows(models=None) -> dict:
    """Every row of every table (sessions aside), or of `models`, to show
    that a refused request changed nothing: compare before and after."""
    from django.db import connection

    rows = {}
    with connection.cursor() as cursor:
        for model in models if models is not None else _watched_models():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(model._meta.db_table)} ORDER BY 1")
            rows[model._meta.label] = cursor.fetchall()
    return rows


class RowChanges:
    """Whether any row of the site's tables (sessions aside) was written since
    this was made, on the test's own connection.

    On PostgreSQL it reads the connection's write counters for the open
    transaction (pg_stat_xact_user_tables): one query, where comparing
    every row reads each table twice. The counters also count a row written
    back unchanged, or written and rolled back, so it is the stricter of the
    two tests. On SQLite, where reading every table is cheap, it compares
    the rows."""

    _COUNTERS = "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)"

    def __init__(self) -> None:
        self._before = self._now()

    def _now(self):
        from django.db import connection

        if connection.vendor != "postgresql":
            return database_rows()
        with connection.cursor() as cursor:
            cursor.execute(self._COUNTERS, [[model._meta.db_table for model in _watched_models()]])
            return cursor.fetchone()[0]

    def changed(self) -> bool:
        return self._now() != self._before


def answered_as_view_only(response) -> bool:
    """How a viewer's write is answered: nothing changed, and they are told
    they may only view (a plain request gets a 403 page saying so)."""
    shown = response.content.decode() + response.get("HX-Trigger", "")
    expected = 200 if response.wsgi_request.htmx else 403
    return response.status_code == expected and "You can view this thread but not change it" in shown


def answered_as_missing(response) -> bool:
    """How a thread or row that is not there for this person (deleted, maybe
    in another tab, or someone else's) is answered: a plain request gets a
    404; an htmx one 200 and a message the page shows instead of an error
    page (haico_site.middleware, workspace.views.common.gone)."""
    if not response.wsgi_request.htmx:
        return response.status_code == 404
    shown = response.content.decode() + response.get("HX-Trigger", "")
    return response.status_code == 200 and "no longer exists" in shown
