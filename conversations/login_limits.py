"""What keeps the login rate limits from locking the rightful owner out
(docs/adr/0051).

django-axes locks a username from one address after repeated wrong
passwords. Behind one address (a NAT, an office, a proxy) that is also the
owner's address, so anyone there could keep the owner out. A browser that
has logged in as a person (or reset their password) is given a signed
cookie naming them; axes never locks that browser out of that username
(`is_known_browser`, its AXES_WHITELIST_CALLABLE). Guessing from such a
browser is still bounded: every failed login counts against its address
(HAICO_RATE_LOGIN_FAILURES, for any usernames), which is also what stops
one address trying password after password across many usernames.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing

from . import ratelimit

KNOWN_BROWSER_COOKIE = "haico_known_login"
KNOWN_BROWSER_SALT = "haico.login.known-browser"
KNOWN_BROWSER_MAX_AGE = 180 * 86400  # seconds
KNOWN_BROWSER_MAX_PEOPLE = 5  # people remembered per browser (a shared family computer)
LOGIN_FAILURES = "login-failures"
REMEMBER_ATTRIBUTE = "haico_known_login"


def known_people(request) -> list[int]:
    """The ids of the people this browser has logged in as (a valid cookie), newest first."""
    value = request.COOKIES.get(KNOWN_BROWSER_COOKIE)
    if not value:
        return []
    try:
        people = signing.loads(value, salt=KNOWN_BROWSER_SALT, max_age=KNOWN_BROWSER_MAX_AGE)
    except signing.BadSignature:
        return []
    return [p for p in people if isinstance(p, int)] if isinstance(people, list) else []


def is_known_browser(request, credentials) -> bool:
    """AXES_WHITELIST_CALLABLE: this browser has logged in as the username being tried."""
    if request is None:
        return False
    username = (credentials or {}).get(get_user_model().USERNAME_FIELD) or (credentials or {}).get("username")
    people = known_people(request)
    if not isinstance(username, str) or not people:
        return False
    return get_user_model().objects.filter(pk__in=people, **{get_user_model().USERNAME_FIELD: username}).exists()


def remember(request, user) -> None:
    """Mark the response to this request to remember the browser for `user`
    (set by haico_site.middleware.AccessLimitsMiddleware)."""
    if request is not None:
        setattr(request, REMEMBER_ATTRIBUTE, user.pk)


def set_known_browser_cookie(request, response) -> None:
    person = getattr(request, REMEMBER_ATTRIBUTE, None)
    if person is None:
        return
    people = [person, *(p for p in known_people(request) if p != person)][:KNOWN_BROWSER_MAX_PEOPLE]
    response.set_cookie(
        KNOWN_BROWSER_COOKIE,
        signing.dumps(people, salt=KNOWN_BROWSER_SALT),
        max_age=KNOWN_BROWSER_MAX_AGE,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


# -- signal receivers (connected in conversations.apps) --


def on_login(sender, request, user, **kwargs) -> None:
    remember(request, user)


def on_login_failed(sender, credentials, request=None, **kwargs) -> None:
    """Every failed login counts against its address, whatever the username."""
    if request is not None:
        ratelimit.hit(LOGIN_FAILURES, ratelimit.address_of(request), ratelimit.rate_setting("HAICO_RATE_LOGIN_FAILURES"))
