"""Site-wide answers that no app owns."""

import sys

from django.http import HttpResponse
from django.template.loader import render_to_string
from django.views.csrf import csrf_failure as django_csrf_failure

from conversations import outages
from workspace.views.common import flash

STALE_PAGE = (
    "This page is out of date (you logged in or out in another tab, or the session ended); "
    "reload the page and try again. Nothing was changed."
)


def csrf_failure(request, reason=""):
    """CSRF_FAILURE_VIEW. An htmx request with a stale token gets a message on
    its page (haico_site.middleware says why never an error page); anything
    else Django's own 403."""
    if getattr(request, "htmx", False):
        return flash(STALE_PAGE)
    return django_csrf_failure(request, reason=reason)


SESSION_ENDED = (
    "Your session has ended, so this was not done; nothing was changed. Log in again in another tab: "
    "this page keeps what you typed."
)
SOMEONE_ELSE = (
    "This browser is now signed in as someone else, so this was not done as them; nothing was changed. "
    "Log in again as yourself in another tab: this page keeps what you typed."
)


# Who is signed in instead, for a page's script to tell the 401s apart:
# nobody, someone else, or nobody because the page's person's account has
# been deactivated (they cannot log in again: the page does not offer it).
SIGNED_IN_HEADER = "X-HAICO-Signed-In"
SIGNED_IN_NOBODY, SIGNED_IN_SOMEONE_ELSE, SIGNED_IN_DEACTIVATED = "nobody", "someone-else", "deactivated"


def not_signed_in_as_the_page(message: str, *, signed_in: str) -> HttpResponse:
    """401 for a request of a page whose person is no longer the one signed
    in (haico_site.middleware.PagePersonMiddleware). Not the login page: the
    page stays, with what its person typed, and sends again once they have
    logged in elsewhere (static/js/workspace.js; docs/adr/0108)."""
    response = HttpResponse(message, status=401, content_type="text/plain; charset=utf-8")
    response[SIGNED_IN_HEADER] = signed_in
    return response


DATABASE_DOWN = "The server cannot reach its database just now, so this could not be done; nothing was changed."
DATABASE_DOWN_ADVICE = "Everything saved before is kept. Try again in a minute."
SERVER_FAILED = "The server could not answer this request; nothing was changed."
SERVER_FAILED_ADVICE = "Try again. If it keeps happening, tell whoever runs this server: the error is in its log."
# Seconds a client is asked to wait before trying again while the database is away.
RETRY_AFTER_SECONDS = 30


def server_error(request):
    """handler500: Django calls it while handling the exception a request
    raised, with DEBUG off. A database that cannot be reached is answered
    as `database_unavailable` (haico_site.middleware.LostConnectionMiddleware
    answers so with DEBUG on too); anything else is a 500 saying that nothing
    was changed and that the error is in the server's log."""
    error = sys.exc_info()[1]
    if error is not None and outages.unreachable_service(error) == outages.DATABASE:
        return database_unavailable(request)
    return _failure(request, 500, "Something went wrong", SERVER_FAILED, SERVER_FAILED_ADVICE)


def database_unavailable(request) -> HttpResponse:
    """503 for a request the database could not be reached for (a restart,
    a failover), saying so, with when to try again."""
    response = _failure(request, 503, "Not available just now", DATABASE_DOWN, DATABASE_DOWN_ADVICE)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _failure(request, status: int, heading: str, message: str, advice: str) -> HttpResponse:
    """An htmx request gets the sentence alone, which its page shows where
    the person acted (static/js/workspace.js); a page, the site's error page.
    Rendered without the request: its context would read the session and
    the person, from the database that may be what failed."""
    if request.headers.get("HX-Request") == "true":
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    try:
        page = render_to_string("errors/message.html", {"heading": heading, "message": message, "advice": advice})
    except Exception:
        # The error page must not fail in its turn; the sentence alone still says it.
        return HttpResponse(f"{message} {advice}", status=status, content_type="text/plain; charset=utf-8")
    return HttpResponse(page, status=status)
