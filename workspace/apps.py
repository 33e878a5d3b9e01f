from django.apps import AppConfig


class WorkspaceConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "workspace"

    def ready(self):
        # The <row:…> and <turn:…> path converters, before any URLconf is read.
        from django.db.models.signals import pre_delete

        from . import url_templates  # noqa: F401
        from .models import Thread

        # Any hard delete of a thread (an account's, a failed fork's or
        # import's, one made from a shell) locks its row before its plan rows
        # go, in the order of the plan writes (docs/adr/0140). Django sends
        # this before it deletes any row; the callers that know what they
        # delete lock before Django reads what goes with it
        # (write_counts.lock_threads).
        pre_delete.connect(_thread_deleted, sender=Thread, dispatch_uid="haico-lock-thread-before-its-delete")


def _thread_deleted(sender, instance, **kwargs):
    from .write_counts import lock_thread

    lock_thread(instance.pk)
