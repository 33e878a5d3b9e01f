from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self):
        # Every committed workspace change reaches the thread's open tabs.
        from workspace import events

        from . import live

        events.subscribe(live.on_changes)
