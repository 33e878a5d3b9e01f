from django.apps import AppConfig


class AgentConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agent"
    # The admin's heading for the model catalogue (agent.models).
    verbose_name = "Models and providers"

    def ready(self) -> None:
        from .tracing import run_untraced_calls_inline, trace_middleware_hooks_only_while_tracing

        run_untraced_calls_inline()
        trace_middleware_hooks_only_while_tracing()
