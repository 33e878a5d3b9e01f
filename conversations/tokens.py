"""Personal access tokens for the MCP server: making, revoking and checking
them (conversations.models.AccessToken, docs/adr/0026)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from workspace.errors import InvalidInput
from workspace.text import clean_text

from .models import ACCESS_TOKEN_NAME_MAX_CHARS, AccessToken

TOKEN_PREFIX = "haico_"
# A person with more than this many live tokens has lost track of them.
MAX_ACTIVE_TOKENS = 50
# last_used_at is written at most this often per token: a busy client would
# otherwise write a row on every call.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def token_create(*, user: AbstractBaseUser, name) -> tuple[AccessToken, str]:
    """A new token and its secret, which is never stored and cannot be shown again."""
    name = clean_text(name, label="Name", max_chars=ACCESS_TOKEN_NAME_MAX_CHARS, collapse_whitespace=True)
    active = AccessToken.objects.select_for_update().filter(user=user, revoked_at__isnull=True)
    if active.count() >= MAX_ACTIVE_TOKENS:
        raise InvalidInput(f"You have {MAX_ACTIVE_TOKENS} tokens; revoke one you no longer use first.")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = AccessToken.objects.create(
        user=user, name=name, prefix=secret[: len(TOKEN_PREFIX) + 6], secret_sha256=digest(secret)
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


def token_for_secret(secret: str) -> AccessToken | None:
    """The live token with this secret, its person active; None otherwise.
    Marks it used."""
    if not isinstance(secret, str) or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    token = (
        AccessToken.objects.select_related("user")
        .filter(secret_sha256=digest(secret), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def tokens_for(*, user: AbstractBaseUser) -> list[AccessToken]:
    return list(AccessToken.objects.filter(user=user).order_by("revoked_at", "-created_at"))
