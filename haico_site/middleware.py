"""htmx requests get a message the page shows, never an error page; the
admin never fails on input no row could match (AdminInputMiddleware); the
account forms are rate limited per address (AccessLimitsMiddleware); a
signed-in person's pages are never cached (PrivatePagesMiddleware); a page
read whose database connection closed under it is read again, and a request
the database could not be reached for is a 503 saying so
(LostConnectionMiddleware); a page's request is done only as the person the
page was rendered for (PagePersonMiddleware).

The workspace's htmx views answer a refusal with 200 and a message where the
person acted (the house rule: htmx does not swap an error response, and with
DEBUG the error page is a whole document). Two failures happen before a view
can say anything, and this middleware answers them the same way:

- a body too big to read (over DATA_UPLOAD_MAX_MEMORY_SIZE, or more than
  DATA_UPLOAD_MAX_NUMBER_FIELDS fields). Django raises as soon as anything
  reads the body, and CSRF's check reads it first, so the request would end
  as a bare 400. `process_view` (this middleware sits before
  CsrfViewMiddleware) reads the body first and answers; a plain form post
  gets a 413 page saying the same.
- a 404 raised by a view: a thread deleted in another tab, or one that is
  not yours (the same answer, so it confirms nothing). A row deleted
  elsewhere is answered by the panel's own view, with its rows refreshed
  (workspace.views.common.gone). A plain request still gets the 404.
- a stored text that no longer reads back as it was written (a damaged
  content blob: workspace.content_store.CorruptContent, docs/adr/0015):
  nothing is shown in its place, the person is told that this version or
  snapshot cannot be read and that nothing was changed, and the operator
  gets the error in the log. A plain request gets a page saying the same,
  with status 500: the fault is the server's.

Where the message goes: the document save's own status (the editor keeps
the text), the plan or preferences panel's error line, or else the page's
flash line (workspace.views.common.flash), leaving the page as it is.
"""

import logging
import math
import sys
from urllib.parse import urlsplit

from asgiref.sync import iscoroutinefunction
from django.conf import settings
from django.contrib.admin import helpers as admin_helpers
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, ValidationError
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError, connection
from django.dispatch import receiver
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render, resolve_url
from django.template.loader import render_to_string
from django.utils.cache import patch_cache_control
from django_htmx.http import reswap

from conversations import login_limits, outages, ratelimit, sessions
from conversations import signup as signups
from workspace import panels
from workspace.content_store import CorruptContent
from workspace.errors import VIEW_ONLY_MESSAGE
from workspace.selectors import ViewOnly
from workspace.views.common import flash

from . import views

logger = logging.getLogger("haico.site")

DOCUMENT_SAVE = "workspace:document-save"
SAVE_STATE = "workspace/panels/centre.html#save_state"
# The panels whose rows post to these URLs show a refusal in their own error line.
PANEL_OF_URL = {"workspace:plan": "plan", "workspace:preference": "preferences"}

GONE = "That no longer exists (it may have been deleted in another tab) or is not yours; nothing was changed."
DAMAGED = (
    "This version could not be read: its stored text is damaged, so it is not shown. "
    "Nothing was changed, and the rest of the thread works; the server's log names it for the operator."
)


def too_big_message(request, exception) -> str:
    if request.resolver_match and request.resolver_match.view_name == DOCUMENT_SAVE:
        return "The document is too long to send; nothing was saved."
    if isinstance(exception, TooManyFieldsSent):
        return f"That was too many fields to send at once (the limit is {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,}); nothing was saved."
    limit_mb = settings.DATA_UPLOAD_MAX_MEMORY_SIZE / (1024 * 1024)
    return f"That was too much to send at once (the limit is {limit_mb:.1f} MB); nothing was saved."


def htmx_message(request, message: str, *, gone: bool = False) -> HttpResponse:
    """200 with `message` where the person acted, changing nothing else on the page.
    `gone`: the thread is deleted or not this person's (any more); the editor
    then keeps its text for the person to copy and stops saving (data-gone)."""
    view_name = request.resolver_match.view_name if request.resolver_match else ""
    if view_name == DOCUMENT_SAVE:
        # Blank version: the next save is refused rather than overwriting a
        # version this editor never saw (as the document view does).
        context = {"doc_state": "error", "doc_message": message, "doc_base_version": "", "doc_gone": gone}
        return HttpResponse(render_to_string(SAVE_STATE, context, request=request))
    panel = next((name for prefix, name in PANEL_OF_URL.items() if view_name.startswith(prefix)), None)
    if panel is not None:
        return reswap(HttpResponse(panels.render_error(panel=panel, target="panel", message=message)), "none")
    return flash(message)


class HtmxErrorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        if request.method != "POST":
            return None
        try:
            # What CsrfViewMiddleware and the view would read; reading it is
            # where Django applies its size limits.
            request.POST  # noqa: B018  (read for its side effect)
            if request.content_type != "multipart/form-data":
                request.body  # noqa: B018  (read for its side effect)
        except (RequestDataTooBig, TooManyFieldsSent) as exc:
            message = too_big_message(request, exc)
            if request.htmx:
                return htmx_message(request, message)
            advice = "Go back, shorten what you wrote, and send it again."
            context = {"heading": "Too much to send", "message": message, "advice": advice}
            return render(request, "errors/message.html", context, status=413)
        return None

    def process_exception(self, request, exception):
        if isinstance(exception, ViewOnly):
            if request.htmx:
                return htmx_message(request, VIEW_ONLY_MESSAGE)
            context = {"heading": "View only", "message": VIEW_ONLY_MESSAGE, "advice": "Nothing was changed."}
            return render(request, "errors/message.html", context, status=403)
        if request.htmx and isinstance(exception, Http404):
            return htmx_message(request, GONE, gone=True)
        if isinstance(exception, CorruptContent):
            logger.error("a stored text could not be read back: %s (%s)", exception, request.path, exc_info=exception)
            if request.htmx:
                return htmx_message(request, DAMAGED)
            advice = "Go back to the thread; its current workspace and chat are unaffected."
            context = {"heading": "Could not be read", "message": DAMAGED, "advice": advice}
            return render(request, "errors/message.html", context, status=500)
        return None


class LostConnectionMiddleware:
    """A page read whose database connection was closed under it is read
    again on a new connection, once.

    Django checks a kept connection when a request first uses it
    (CONN_HEALTH_CHECKS), but a failover or a PostgreSQL restart can close it
    between that check and the request's next query, and the person gets an
    error for a page that a second read would have shown (a tab fetching
    its workspace after a reconnect, the very moment it needs it:
    docs/adr/0044). It sits right after the session middleware, so the
    second read covers the middlewares' first reads of the session and the
    person as well as the view: a CI run caught a failover landing on the
    session's read, before any view ran. Only GET and HEAD, which change
    nothing, and only when the connection no longer answers: any other
    database error (a lock timeout, a statement refused) is not hidden by a
    second try. The first try's error is still logged by Django.

    A request that failed because the database cannot be reached (a restart,
    a failover: conversations.outages), read again or not, is answered by
    `haico_site.views.database_unavailable`: a 503 saying so, with DEBUG on
    as well as off (docs/adr/0105)."""

    SAFE_METHODS = ("GET", "HEAD")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(request, "_connection_lost", False) and not getattr(request, "_read_again", False):
            request._read_again = True
            request._database_unreachable = False  # as the second read finds it
            connection.close()
            response = self.get_response(request)
            # A second read that failed as well is the database being away:
            # its outage says so (haico_site.logs.DatabaseOutageAsLine), once.
            if response.status_code < 500:
                logger.warning("the database connection closed while reading %s; read again on a new one", request.path)
        if response.status_code >= 500 and getattr(request, "_database_unreachable", False):
            # Said as it is, whatever answered it (with DEBUG on, Django's debug page).
            return views.database_unavailable(request)
        return response


@receiver(got_request_exception)
def note_a_lost_connection(sender, request=None, **kwargs):
    """Marks a safe request whose error was its connection closing, for
    LostConnectionMiddleware. Django sends this signal from inside its
    `except`, in the thread (and so with the connection) that raised."""
    exception = sys.exc_info()[1]
    if request is None or not isinstance(exception, OperationalError | InterfaceError):
        return
    if outages.unreachable_service(exception) == outages.DATABASE:
        request._database_unreachable = True
    if request.method not in LostConnectionMiddleware.SAFE_METHODS or connection.in_atomic_block:
        return
    match = getattr(request, "resolver_match", None)
    if match is not None and iscoroutinefunction(match.func):
        return  # its queries ran in another thread, on another connection
    if connection.connection is not None and connection.is_usable():
        return
    request._connection_lost = True


class AdminInputMiddleware:
    """Two inputs the admin turned into a 500, ours and the packages' pages alike.

    - A bulk action runs on `pk__in=<the ticked ids>`, and an id the primary
      key could not hold ("²" or 10**23 for an integer, "x" for a UUID)
      raised. Such ids cannot name a row, so they are taken out before the
      admin reads them: with none left it says no items were selected.
    - A NUL in a query (a search term) reaches PostgreSQL, whose text
      cannot hold one: refused with a 400 saying so, as every form of the
      site refuses it (workspace.text)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        match = request.resolver_match
        if match is None or match.app_name != "admin":
            return None
        if any("\x00" in value for values in request.GET.lists() for value in values[1]):
            return HttpResponseBadRequest("A search or filter cannot contain NUL characters.", content_type="text/plain")
        model_admin = getattr(view, "model_admin", None)
        field = admin_helpers.ACTION_CHECKBOX_NAME
        if request.method != "POST" or model_admin is None or field not in request.POST:
            return None
        primary_key = model_admin.model._meta.pk
        valid = []
        for value in request.POST.getlist(field):
            try:
                # The key's own validators hold the database's integer range.
                primary_key.run_validators(primary_key.to_python(value))
            except (ValidationError, ValueError, TypeError, OverflowError):
                continue
            valid.append(value)
        if len(valid) != len(request.POST.getlist(field)):
            post = request.POST.copy()
            post.setlist(field, valid)
            request.POST = post
        return None


# Which POSTs are limited per address (conversations.ratelimit, docs/adr/0051):
# view name -> (counter, rate setting, counts this request, what the page says).
# The logins only look at the count of failed logins (counted as they fail,
# conversations.login_limits), so a right password is never what trips it.
LIMITED_POSTS = {
    "signup": ("signup", "HAICO_RATE_SIGNUP", True, "Too many sign-ups from your network address."),
    "password_reset": (
        "password-reset",
        "HAICO_RATE_PASSWORD_RESET",
        True,
        "Too many password reset requests from your network address.",
    ),
    "login": (
        login_limits.LOGIN_FAILURES,
        "HAICO_RATE_LOGIN_FAILURES",
        False,
        "Too many failed logins from your network address, for any usernames.",
    ),
    "admin:login": (
        login_limits.LOGIN_FAILURES,
        "HAICO_RATE_LOGIN_FAILURES",
        False,
        "Too many failed logins from your network address, for any usernames.",
    ),
}

INVITE_TRIES_MESSAGE = "Too many sign-up attempts with this invite link."


def too_many(request, message: str, wait: float) -> HttpResponse:
    """429 in the app's look, saying when to try again (also as Retry-After)."""
    context = {"message": message, "wait": ratelimit.duration_text(wait), "back_url": request.path or "/"}
    response = render(request, "errors/too_many.html", context, status=429)
    response["Retry-After"] = str(max(1, math.ceil(wait)))
    return response


class AccessLimitsMiddleware:
    """The per-address limits on sign-up, password reset and failed logins
    (LIMITED_POSTS), answered before the view runs; and, after a login or a
    password reset, the cookie that remembers the browser as its person's
    (conversations.login_limits)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        login_limits.set_known_browser_cookie(request, response)
        return response

    def process_view(self, request, view, args, kwargs):
        match = request.resolver_match
        if request.method != "POST" or match is None or match.view_name not in LIMITED_POSTS:
            return None
        counter, setting, counts, message = LIMITED_POSTS[match.view_name]
        check = ratelimit.hit if counts else ratelimit.over
        who = ratelimit.address_of(request)
        if match.view_name == "signup":
            # A sign-up with a valid invite counts against that invite, not
            # the address a whole invited office may share: it still bounds
            # the names one invite can try (docs/adr/0051).
            invite = signups.invite_of_request(request.POST.get("invite") or request.GET.get("invite"))
            if invite is not None:
                who, message = f"invite:{invite.pk}", INVITE_TRIES_MESSAGE
        wait = check(counter, who, ratelimit.rate_setting(setting))
        if wait is None:
            return None
        return too_many(request, message, wait)


class PrivatePagesMiddleware:
    """Every response to a signed-in person is `Cache-Control: private,
    no-store`: their threads, documents and downloads must not stay in a
    shared proxy's cache, nor in the browser's once they log out on a
    shared computer (docs/adr/0051). Static files are the same for everyone
    and keep their caching (a proxy serves them in production)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and not request.path.startswith(_static_prefix()):
            patch_cache_control(response, private=True, no_store=True)
        return response


# Whom a page was rendered for, sent with each of its requests: a header from
# htmx and the page's fetches, a form field from a beacon, which sends no
# header (static/js/workspace.js, static/js/document_editor.js).
PAGE_PERSON_HEADER = "X-HAICO-Person"
PAGE_PERSON_FIELD = "haico_person"


class PagePersonMiddleware:
    """A page's request is done only as the person the page was rendered
    for. When its session has ended, login_required would send it to the
    login page; when someone else has since logged in in the same browser,
    it would be done as them. Either way a 401 says so and nothing is done,
    and the page keeps what its person typed, to send again once they have
    logged in in another tab (docs/adr/0108). A plain navigation still goes
    to the login page. A session whose account staff deactivated gets a 401
    that says so instead: its person cannot log in again."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if _from_a_page(request) and not request.user.is_authenticated and _sends_to_log_in(response):
            if sessions.deactivated_account_of(request.session):
                # Not "log in again": they cannot. Only the browser signed in to that account is told.
                return views.not_signed_in_as_the_page(sessions.ACCOUNT_DEACTIVATED, signed_in=views.SIGNED_IN_DEACTIVATED)
            return views.not_signed_in_as_the_page(views.SESSION_ENDED, signed_in=views.SIGNED_IN_NOBODY)
        return response

    def process_view(self, request, view, args, kwargs):
        page_person = request.headers.get(PAGE_PERSON_HEADER, "")
        if not page_person and request.method == "POST":
            # The body was read (and its size checked) by HtmxErrorsMiddleware.
            page_person = request.POST.get(PAGE_PERSON_FIELD, "")
        user = request.user
        if page_person and user.is_authenticated and page_person != str(user.pk):
            return views.not_signed_in_as_the_page(views.SOMEONE_ELSE, signed_in=views.SIGNED_IN_SOMEONE_ELSE)
        return None


def _from_a_page(request) -> bool:
    return request.headers.get("HX-Request") == "true"


def _sends_to_log_in(response) -> bool:
    if response.status_code not in (301, 302, 303, 307, 308):
        return False
    return urlsplit(response.get("Location", "")).path == resolve_url(settings.LOGIN_URL)


def _static_prefix() -> str:
    return "/" + settings.STATIC_URL.lstrip("/")
