"""System checks of this app's settings (`manage.py check`, and every start)."""

from django.conf import settings
from django.core.checks import Error, Info, register

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


@register(deploy=True)
def open_sign_up_is_bounded(app_configs, **kwargs):
    """A production server where anyone who finds it can make an account
    that is used at once and spends the operator's model keys without bound
    (docs/adr/0061, docs/adr/0064). An Info, not a Warning: deploy/start.sh
    stops at every warning, and an open site can be meant (a demo, a
    server only a VPN reaches); it is said at every start all the same."""
    if settings.DEBUG or settings.HAICO_SIGNUP != "open" or settings.HAICO_SIGNUP_APPROVAL:
        return []
    if settings.HAICO_DAILY_TOKEN_LIMIT or settings.HAICO_MONTHLY_TOKEN_LIMIT:
        return []
    return [
        Info(
            "Sign-up is open to anyone, without approval and without a token limit: whoever finds this site "
            "can make accounts and spend its model providers' keys without bound.",
            hint="Set HAICO_SIGNUP=invite (or closed), HAICO_SIGNUP_APPROVAL=True, or HAICO_DAILY_TOKEN_LIMIT / "
            "HAICO_MONTHLY_TOKEN_LIMIT (tokens per person).",
            id="haico.I001",
        )
    ]
