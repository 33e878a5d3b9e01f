from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self):
        # Every committed workspace change reaches the thread's open tabs.
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
        from django.db.backends.signals import connection_created

        from workspace import events

        from . import checks, live, login_limits, outages, sessions  # noqa: F401  (checks: registers them)

        events.subscribe(live.on_changes)
        # Logging out closes that session's open sockets (conversations.sessions).
        user_logged_out.connect(sessions.on_logout, dispatch_uid="haico-close-sockets-on-logout")
        # Login limits (conversations.login_limits, docs/adr/0051).
        user_logged_in.connect(login_limits.on_login, dispatch_uid="haico-remember-browser")
        user_login_failed.connect(login_limits.on_login_failed, dispatch_uid="haico-count-login-failures")
        # A new database connection after an outage: the log says it is back (docs/adr/0103).
        connection_created.connect(outages.database_connected, dispatch_uid="haico-database-answers-again")
