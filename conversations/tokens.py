"""Personal access tokens for the MCP server: making, revoking and checking
them (conversations.models.AccessToken, docs/adr/0026). A token may expire
(after 7, 30 or 90 days) and may be read-only: it lists and reads threads,
and every tool that writes is refused (conversations.mcp_server)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from workspace.errors import InvalidInput
from workspace.text import clean_text

from .approval import WAITING_MESSAGE, is_waiting
from .models import ACCESS_TOKEN_NAME_MAX_CHARS, AccessToken

TOKEN_PREFIX = "haico_"
# A person with more than this many live tokens has lost track of them.
MAX_ACTIVE_TOKENS = 50
# last_used_at is written at most this often per token: a busy client would
# otherwise write a row on every call.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# How long a new token may live, in days (None: until revoked); the choices the tokens page offers.
EXPIRY_CHOICES = {"never": None, "7": 7, "30": 30, "90": 90}

REQUIRED = "A valid access token is required (Authorization: Bearer <token>; make one at /accounts/tokens/)."
EXPIRED = "This access token expired on {date} UTC; make a new one at /accounts/tokens/."


class TokenRefused(Exception):
    """The secret is no (usable) token; `message` says why, for the client's person."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_create(
    *, user: AbstractBaseUser, name, expires_in_days: int | None = None, read_only: bool = False
) -> tuple[AccessToken, str]:
    """A new token and its secret, which is never stored and cannot be shown
    again. `expires_in_days`: one of EXPIRY_CHOICES' numbers, None for never."""
    name = clean_text(name, label="Name", max_chars=ACCESS_TOKEN_NAME_MAX_CHARS, collapse_whitespace=True)
    if expires_in_days not in EXPIRY_CHOICES.values():
        raise InvalidInput("Choose when the token expires: never, or in 7, 30 or 90 days.")
    active = AccessToken.objects.select_for_update().filter(user=user, revoked_at__isnull=True)
    if active.count() >= MAX_ACTIVE_TOKENS:
        raise InvalidInput(f"You have {MAX_ACTIVE_TOKENS} tokens; revoke one you no longer use first.")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = AccessToken.objects.create(
        user=user,
        name=name,
        prefix=secret[: len(TOKEN_PREFIX) + 6],
        secret_sha256=digest(secret),
        expires_at=timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None,
        read_only=bool(read_only),
    )
    return token, secret


@transaction.atomic
def token_revoke(*, user: AbstractBaseUser, token_id: int) -> AccessToken | None:
    """Revoke one of `user`'s tokens at once; None if it is not theirs."""
    token = AccessToken.objects.select_for_update().filter(user=user, pk=token_id).first()
    if token is not None and token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_check(secret) -> AccessToken:
    """The live token with this secret, its person active and approved;
    marks it used. Raises TokenRefused saying why not: no such token (or
    revoked, or its person deactivated: the same answer, which confirms
    nothing), expired, or the account waits for approval."""
    if not isinstance(secret, str) or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        raise TokenRefused(REQUIRED)
    token = (
        AccessToken.objects.select_related("user")
        .filter(secret_sha256=digest(secret), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        raise TokenRefused(REQUIRED)
    now = timezone.now()
    if token.expires_at is not None and token.expires_at <= now:
        raise TokenRefused(EXPIRED.format(date=f"{token.expires_at:%d %B %Y at %H:%M}"))
    if is_waiting(token.user):
        raise TokenRefused(WAITING_MESSAGE)
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def token_for_secret(secret) -> AccessToken | None:
    """token_check's token, or None when it refuses."""
    try:
        return token_check(secret)
    except TokenRefused:
        return None


def tokens_for(*, user: AbstractBaseUser) -> list[AccessToken]:
    return list(AccessToken.objects.filter(user=user).order_by("revoked_at", "-created_at"))
