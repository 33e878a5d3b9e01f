"""A thread's socket lives only as long as the session it was opened with
(conversations.consumers).

Logging out closes that session's open sockets at once, in every process:
each socket joins its session's channel group and `on_logout` (a
`user_logged_out` receiver) tells the group. So does a session deleted
otherwise (staff delete its row on the server, clearsessions removes it once
expired: `on_session_deleted`). A password change, wherever it is made (in
another session, by staff in the admin, by a reset), tells every open page
of the account to check its session at once (`check_sockets_of_account`):
Django keeps the session that changed it signed in and no other. An account
deleted or deactivated has its open pages closed at once
(`close_sockets_of_ended_account`). Each of these is told on the change, not
found on the next push: a page that only listens sends no message, and the
pages are not asked per push (docs/adr/0084). `session_signs_in`, which the
consumer also asks before it acts on each message, decides.

A session that lives on under a new key (Django cycles the key when the
person changes their password, or logs in again) takes its sockets along:
this module is the SESSION_ENGINE, Django's database sessions plus a
`cycle_key` that tells the old key's sockets the new one. The key travels
through the channel layer, which already carries everything the pages show.
"""

import contextvars
import hashlib
import logging
from importlib import import_module

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model, load_backend
from django.contrib.sessions.backends import db
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.crypto import constant_time_compare

from . import outages

logger = logging.getLogger("haico.conversations.sessions")

SESSION_ENDED_EVENT = "session.ended"
SESSION_RENEWED_EVENT = "session.renewed"
SESSION_CHECK_EVENT = "session.check"

# The old key of the session whose key is being cycled: deleting its row then
# moves the session, which does not end (its sockets are told the new key).
_cycling: contextvars.ContextVar[str | None] = contextvars.ContextVar("haico_session_cycling", default=None)

# What a person whose account staff deactivated is told, wherever they were
# told to log in again (the socket, a page's request, the login page): they
# cannot, and what they typed is only still on their pages.
ACCOUNT_DEACTIVATED = (
    "Your account has been deactivated, so nothing more can be saved here. Copy anything you typed that is not "
    "saved; ask whoever runs this HAICO to reactivate it."
)


def session_group(session_key: str) -> str:
    """The channel group of one session's sockets. A digest, not the key:
    group names can be read by whoever can read the channel layer (Redis)."""
    return "session." + hashlib.sha256(session_key.encode()).hexdigest()[:40]


def session_signs_in(*, session_key: str | None, user) -> bool:
    """Whether session `session_key` still signs `user` in, by the checks
    Django's next request would make: the session exists and has not
    expired, it names this user and an enabled backend, the backend still
    lets the user in (ModelBackend refuses inactive users), and the session's
    auth hash matches the user's password now (or a SECRET_KEY_FALLBACKS
    one). Read only: unlike django.contrib.auth.get_user it never flushes or
    cycles the session, which is the browser's."""
    if not session_key:
        return False
    data = import_module(settings.SESSION_ENGINE).SessionStore(session_key).load()
    backend_path = data.get(BACKEND_SESSION_KEY)
    if data.get(SESSION_KEY) != str(user.pk) or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return False
    current = load_backend(backend_path).get_user(user.pk)
    if current is None:
        return False
    session_hash = data.get(HASH_SESSION_KEY)
    if not session_hash:
        return False
    hashes = [current.get_session_auth_hash(), *current.get_session_auth_fallback_hash()]
    return any(constant_time_compare(session_hash, known) for known in hashes)


def deactivated_account_of(session) -> bool:
    """Whether `session` (a session's data: a SessionStore or a dict) signed
    in an account that has since been deactivated: it names an enabled
    backend and an existing, inactive account, and its auth hash is that
    account's (so it was that account's own sign-in, not one a password
    change ended). Django's next request treats such a session as nobody's
    (ModelBackend refuses inactive users) without flushing it, so its owner
    can be told the truth instead of "log in again". It answers only about
    the account the browser itself was signed in to, never a username
    someone types. Read only."""
    try:
        user_id = session.get(SESSION_KEY)
        session_hash = session.get(HASH_SESSION_KEY)
        backend_path = session.get(BACKEND_SESSION_KEY)
    except Exception:  # a session that cannot be read says nothing
        return False
    if not user_id or not session_hash or backend_path not in settings.AUTHENTICATION_BACKENDS:
        return False
    model = get_user_model()
    try:
        user = model._default_manager.filter(pk=model._meta.pk.to_python(user_id)).first()
    except (ValueError, TypeError, ValidationError):
        return False
    if user is None or user.is_active:
        return False
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(constant_time_compare(session_hash, known) for known in hashes)


def session_of_deactivated_account(*, session_key: str | None) -> bool:
    """deactivated_account_of, for a session known by its key (a socket's)."""
    if not session_key:
        return False
    return deactivated_account_of(import_module(settings.SESSION_ENGINE).SessionStore(session_key).load())


def _tell_sockets(session_key: str, event: dict) -> None:
    try:
        async_to_sync(get_channel_layer().group_send)(session_group(session_key), event)
    except Exception as error:
        # Logging out (or changing a password) must work even when the
        # channel layer does not; the sockets then end at their next message.
        # Redis away is a line of its outage's (docs/adr/0103).
        outages.note(logger, error, "could not tell the open sockets of a session about %s", event["type"])


def close_sockets_of_ended_account(user_id) -> None:
    """After commit: the open pages of an account being deleted or
    deactivated lose their sockets at once, as on a logout. Without this a
    page that only listens (it sends nothing, so `session_signs_in` is never
    asked) would go on showing the threads' changes to someone who can no
    longer sign in."""
    _tell_pages_of_account(user_id, {"type": SESSION_ENDED_EVENT}, "close a socket of an account that ended")


def check_sockets_of_account(user_id) -> None:
    """After commit: the account's password changed (its session auth hash
    with it), so every session of it but the one Django renewed with the new
    hash has ended. Each open page checks its own session and ends if it no
    longer signs its person in, before anything more is pushed to it
    (ThreadConsumer.session_check)."""
    _tell_pages_of_account(user_id, {"type": SESSION_CHECK_EVENT}, "tell a page of an account its password changed")


def _tell_pages_of_account(user_id, event: dict, what: str) -> None:
    from .models import OpenPage  # here: this module is the SESSION_ENGINE, loaded apart from the apps

    # Read now: a deleted account's pages are gone after the commit.
    channels = list(OpenPage.objects.filter(user_id=user_id).values_list("channel_name", flat=True))

    def tell():
        layer = get_channel_layer()
        for channel in channels:
            try:
                async_to_sync(layer.send)(channel, event)
            except Exception as error:
                # The socket then ends at its next message (or staff view refresh).
                outages.note(logger, error, "could not %s", what)

    if channels:
        transaction.on_commit(tell)


def on_session_deleted(sender, instance, **kwargs):
    """`post_delete` receiver of the sessions' model: a session deleted (by
    staff on the server, by a logout's flush, by clearsessions) has its open
    pages closed once the deletion is committed. Not the old key of a
    session whose key is cycled: that session lives on (`cycle_key`)."""
    session_key = instance.session_key
    if session_key and session_key != _cycling.get():
        transaction.on_commit(lambda: _tell_sockets(session_key, {"type": SESSION_ENDED_EVENT}))


def on_logout(sender, request, user, **kwargs):
    """`user_logged_out` receiver: runs before the session is flushed, so its key is still known."""
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        _tell_sockets(session_key, {"type": SESSION_ENDED_EVENT})


class SessionStore(db.SessionStore):
    def cycle_key(self):
        old_key = self.session_key
        cycling = _cycling.set(old_key)
        try:
            super().cycle_key()
        finally:
            _cycling.reset(cycling)
        if old_key and self.session_key != old_key:
            _tell_sockets(old_key, {"type": SESSION_RENEWED_EVENT, "session_key": self.session_key})
