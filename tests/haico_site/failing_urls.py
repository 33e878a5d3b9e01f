"""A URL configuration whose views fail as a database outage, a refused
statement and a bug do (tests/haico_site/test_server_error.py), with the
site's own error handler."""

import psycopg
from django.db import OperationalError, connection
from django.urls import path

from haico_site.urls import handler500  # noqa: F401  (the handler under test)
from haico_site.urls import urlpatterns as site_urlpatterns


def _raise_from(driver_error: Exception):
    def view(request):
        # On a connection that answers, as a refused statement's is (a lost
        # one would be read again: haico_site.middleware.LostConnectionMiddleware).
        connection.ensure_connection()
        try:
            raise driver_error
        except Exception as cause:
            raise OperationalError(str(cause)) from cause

    return view


def _bug(request):
    raise ValueError("a bug")


urlpatterns = [
    path(
        "refused/",
        _raise_from(
            psycopg.OperationalError("connection failed: connection to server at 127.0.0.1 failed:\n\tConnection refused")
        ),
    ),
    path("lock-timeout/", _raise_from(psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"))),
    path("bug/", _bug),
    *site_urlpatterns,  # the error page links to the log-in page
]
