from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "workspace"

    def ready(self):
        # The <row:…> and <turn:…> path converters, before any URLconf is read.
        from . import url_templates  # noqa: F401
