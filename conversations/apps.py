from django.apps import AppConfig
from django.db import connection


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self):
        # Every committed workspace change reaches the thread's open tabs.
        from django.contrib.auth import get_user_model
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
        from django.contrib.sessions.models import Session
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_delete, post_init, post_save, pre_delete

        from workspace import events

        from . import checks, live, login_limits, outages, sessions  # noqa: F401  (checks: registers them)

        events.subscribe(live.on_changes)
        # Logging out closes that session's open sockets (conversations.sessions).
        user_logged_out.connect(sessions.on_logout, dispatch_uid="haico-close-sockets-on-logout")
        # So does a session deleted otherwise (by staff, on the server).
        post_delete.connect(sessions.on_session_deleted, sender=Session, dispatch_uid="haico-close-sockets-of-session")
        # Login limits (conversations.login_limits, docs/adr/0051).
        user_logged_in.connect(login_limits.on_login, dispatch_uid="haico-remember-browser")
        user_login_failed.connect(login_limits.on_login_failed, dispatch_uid="haico-count-login-failures")
        # An account deleted or deactivated: the turns it started stop and its pages' sockets close.
        # Its password changed: its pages of other sessions close (conversations.sessions).
        user_model = get_user_model()
        pre_delete.connect(_account_deleted, sender=user_model, dispatch_uid="haico-stop-turns-of-deleted-account")
        post_init.connect(_account_loaded, sender=user_model, dispatch_uid="haico-remember-password-hash")
        post_save.connect(_account_saved, sender=user_model, dispatch_uid="haico-stop-turns-of-deactivated-account")
        # A new database connection after an outage: the log says it is back (docs/adr/0103).
        connection_created.connect(outages.database_connected, dispatch_uid="haico-database-answers-again")


def _account_ended(user_id) -> None:
    """What can no longer sign in writes nothing more and sees nothing more."""
    from .sessions import close_sockets_of_ended_account
    from .sharing import stop_turns_of_ended_account

    stop_turns_of_ended_account(user_id)
    close_sockets_of_ended_account(user_id)


def _account_deleted(sender, instance, **kwargs):
    # The account's row locked before Django deletes what goes with it: its
    # usage rows go in one DELETE, and a row a running turn's watcher
    # committed after that DELETE and before the account's own (PostgreSQL
    # checks the link when the deletion commits) failed the whole deletion,
    # staff's included. Locked, a row written meanwhile waits for the
    # deletion and is then refused as its person's (conversations.usage
    # leaves it out). SQLite takes one writer at a time: nothing to lock.
    if connection.vendor == "postgresql":
        type(instance).objects.select_for_update().filter(pk=instance.pk).values_list("pk").first()
    _account_ended(instance.pk)


def _account_loaded(sender, instance, **kwargs):
    # The password hash as stored (not read if deferred), to tell a save that changes it.
    instance._haico_stored_password = instance.__dict__.get("password")


def _account_saved(sender, instance, created, update_fields=None, **kwargs):
    stored = getattr(instance, "_haico_stored_password", None)
    instance._haico_stored_password = instance.__dict__.get("password")
    if created:
        return
    if not instance.is_active:
        _account_ended(instance.pk)
        return
    if (update_fields is None or "password" in update_fields) and instance.__dict__.get("password") != stored:
        # By any path (the person's own change, staff's in the admin, a
        # reset): every session but the one Django renewed has ended.
        from .sessions import check_sockets_of_account

        check_sockets_of_account(instance.pk)
