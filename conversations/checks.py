"""System checks of this app's settings (`manage.py check`, and every start)."""

from django.conf import settings
from django.core.checks import Error, register

from .ratelimit import parse_rate

RATE_SETTINGS = (
    "HAICO_RATE_SIGNUP",
    "HAICO_RATE_PASSWORD_RESET",
    "HAICO_RATE_RESET_MAIL",
    "HAICO_RATE_LOGIN_FAILURES",
    "HAICO_RATE_MCP_AUTH_FAILURES",
    "HAICO_RATE_SHARE_LOOKUPS",
)


@register()
def rate_limits_are_rates(app_configs, **kwargs):
    errors = []
    for name in RATE_SETTINGS:
        try:
            parse_rate(getattr(settings, name))
        except ValueError as exc:
            errors.append(Error(f"{name}: {exc}", id="haico.E001"))
    for name in ("HAICO_MAX_RUNNING_TURNS", "HAICO_MAX_OPEN_PAGES"):
        if getattr(settings, name) < 0:
            errors.append(Error(f"{name} must be 0 (no limit) or more.", id="haico.E002"))
    return errors
