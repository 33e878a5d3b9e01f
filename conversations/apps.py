from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self):
        # Every committed workspace change reaches the thread's open tabs.
        from django.contrib.auth.signals import user_logged_out

        from workspace import events

        from . import live, sessions

        events.subscribe(live.on_changes)
        # Logging out closes that session's open sockets (conversations.sessions).
        user_logged_out.connect(sessions.on_logout, dispatch_uid="haico-close-sockets-on-logout")
