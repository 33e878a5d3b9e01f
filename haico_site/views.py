"""Site-wide answers that no app owns."""

from django.views.csrf import csrf_failure as django_csrf_failure

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
