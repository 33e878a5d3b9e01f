"""Who may make an account (HAICO_SIGNUP, docs/adr/0061): anyone ("open"),
only the holder of an invite link staff made ("invite"), or nobody but
staff in the admin ("closed"); and the invites themselves.

An invite link carries a random secret of which only the SHA-256 is
stored; it works once, until it expires. Claiming it and making the
account happen in one transaction, with the claim a conditional UPDATE, so
two sign-ups racing with one link make one account, and a refused claim
leaves no account behind."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from workspace.errors import UserFacingError

from .approval import account_hold_for_approval
from .models import Invite

OPEN, INVITE, CLOSED = "open", "invite", "closed"
INVITE_PREFIX = "inv_"
INVITE_DAYS_MAX = 365

CLOSED_MESSAGE = "Sign-up is closed on this site: accounts are made by its staff. Ask them for one."
INVITE_ONLY_MESSAGE = (
    "Sign-up on this site is by invitation only: open the invite link staff sent you. If you have none, ask them for one."
)
INVITE_UNKNOWN = "This invite link is not valid: check that you copied all of it, or ask staff for a new one."
INVITE_USED = "This invite link has already been used: each link makes one account. Ask staff for a new one, or log in."
INVITE_EXPIRED = "This invite link expired on {date}. Ask staff for a new one."
INVITE_EMAIL = "This invitation is for {email}; sign up with that address."


class InviteRefused(UserFacingError):
    """The invite link cannot make an account; nothing was created."""


def signup_mode() -> str:
    return settings.HAICO_SIGNUP


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def invite_path(secret: str) -> str:
    return f"{reverse('signup')}?invite={secret}"


@transaction.atomic
def invite_create(
    *, created_by: AbstractBaseUser, email: str = "", days: int | None = None, note: str = ""
) -> tuple[Invite, str]:
    """A new invite and its secret, which is never stored and cannot be shown again."""
    days = settings.HAICO_INVITE_DAYS if days is None else days
    if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= INVITE_DAYS_MAX:
        raise UserFacingError(f"An invite lasts from 1 to {INVITE_DAYS_MAX} days.")
    secret = INVITE_PREFIX + secrets.token_urlsafe(32)
    invite = Invite.objects.create(
        secret_sha256=_digest(secret),
        email=(email or "").strip(),
        note=(note or "").strip()[:200],
        created_by=created_by,
        expires_at=timezone.now() + timedelta(days=days),
    )
    return invite, secret


def invite_for_secret(secret) -> Invite:
    """The invite this link's secret opens, or InviteRefused saying why not
    (unknown, used, expired)."""
    if not isinstance(secret, str) or not secret.startswith(INVITE_PREFIX) or len(secret) > 200:
        raise InviteRefused(INVITE_UNKNOWN)
    invite = Invite.objects.filter(secret_sha256=_digest(secret)).first()
    if invite is None:
        raise InviteRefused(INVITE_UNKNOWN)
    if invite.used_at is not None:
        raise InviteRefused(INVITE_USED)
    if invite.expires_at <= timezone.now():
        raise InviteRefused(INVITE_EXPIRED.format(date=f"{invite.expires_at:%d %B %Y at %H:%M} UTC"))
    return invite


def invite_of_request(secret) -> Invite | None:
    """The valid invite an invite-only sign-up carries, else None. Such a
    sign-up is counted against its invite, not its network address
    (haico_site.middleware, docs/adr/0051): a team invited together often
    shares one office address, and the invite is already the gate."""
    if signup_mode() != INVITE or not secret:
        return None
    try:
        return invite_for_secret(secret)
    except InviteRefused:
        return None


@transaction.atomic
def account_sign_up(*, form, invite_secret: str | None = None) -> AbstractBaseUser:
    """Make the account of a valid sign-up form, as the site's mode allows.

    Raises InviteRefused (nothing created) when sign-up is closed, or by
    invitation and the invite is missing, unknown, used or expired, or meant
    for another address. With HAICO_SIGNUP_APPROVAL the account waits for
    staff approval (conversations.approval)."""
    mode = signup_mode()
    if mode == CLOSED:
        raise InviteRefused(CLOSED_MESSAGE)
    invite = None
    if mode == INVITE:
        if not invite_secret:
            raise InviteRefused(INVITE_ONLY_MESSAGE)
        invite = invite_for_secret(invite_secret)
        email = (form.cleaned_data.get("email") or "").strip()
        if invite.email and email.lower() != invite.email.lower():
            raise InviteRefused(INVITE_EMAIL.format(email=invite.email))
    user = form.save()
    if invite is not None:
        now = timezone.now()
        claimed = Invite.objects.filter(pk=invite.pk, used_at__isnull=True, expires_at__gt=now).update(used_at=now, used_by=user)
        if not claimed:  # another sign-up took it meanwhile: raising undoes this account
            raise InviteRefused(INVITE_USED)
    if settings.HAICO_SIGNUP_APPROVAL:
        account_hold_for_approval(user=user)
    return user
