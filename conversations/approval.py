"""Accounts that wait for staff approval (HAICO_SIGNUP_APPROVAL, docs/adr/0061).

A person whose account waits can sign in and sees the "Waiting for
approval" page; nothing else works for them until staff approve the
account in the admin: no thread, no turn, no socket, no MCP. The rule is
read in one place per way in: `ApprovalGateMiddleware` for every HTTP
request, the thread consumer when a socket opens (and the turn registry
before a turn starts), and the MCP token check (conversations.tokens).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django_htmx.http import HttpResponseClientRedirect

from .models import Account

WAITING_MESSAGE = "Your account is waiting for approval by staff; you can use HAICO once they approve it."
# What a waiting person may still reach: this page, signing in and out, and their password.
OPEN_WHILE_WAITING = frozenset(
    {
        "waiting",
        "login",
        "logout",
        "password_change",
        "password_change_done",
        "password_reset",
        "password_reset_done",
        "password_reset_confirm",
        "password_reset_complete",
    }
)


def is_waiting(user) -> bool:
    """Whether `user`'s account still waits for staff approval. Staff never wait."""
    if user is None or not user.is_authenticated or user.is_staff:
        return False
    return Account.objects.filter(user_id=user.pk, waiting_for_approval=True).exists()


def account_waits(user, account: Account | None) -> bool:
    """is_waiting, for a caller that read the person's account row already."""
    return account is not None and account.waiting_for_approval and not user.is_staff


@transaction.atomic
def account_hold_for_approval(*, user: AbstractBaseUser) -> Account:
    """A new account that waits until staff approve it."""
    account, _ = Account.objects.update_or_create(user=user, defaults={"waiting_for_approval": True})
    return account


@transaction.atomic
def accounts_approve(*, user_ids, staff_user: AbstractBaseUser) -> int:
    """Approve the waiting accounts among `user_ids`; returns how many were waiting."""
    return Account.objects.filter(user_id__in=list(user_ids), waiting_for_approval=True).update(
        waiting_for_approval=False, approved_at=timezone.now(), approved_by=staff_user
    )


class ApprovalGateMiddleware:
    """Every HTTP request of a signed-in person whose account waits goes to
    the waiting page, unless it is one of OPEN_WHILE_WAITING; the view never
    runs, so nothing is read or changed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = request.resolver_match
        if match is not None and (match.url_name in OPEN_WHILE_WAITING or match.app_name == "admin"):
            return None  # the admin checks is_staff itself, and staff never wait
        if not is_waiting(getattr(request, "user", None)):
            return None
        url = reverse("waiting")
        if getattr(request, "htmx", False):
            return HttpResponseClientRedirect(url)
        return redirect(url)


def signup_links(request) -> dict:
    """Template context: whether pages offer "Sign up" (only when anyone may,
    or to someone who came with an invite link)."""
    mode = settings.HAICO_SIGNUP
    invite = request.GET.get("invite", "") if mode == "invite" else ""
    if mode == "open":
        return {"signup_offered": True, "signup_invite": ""}
    if invite and isinstance(invite, str) and len(invite) <= 200 and invite.isascii() and invite.isprintable():
        return {"signup_offered": True, "signup_invite": invite}
    return {"signup_offered": False, "signup_invite": ""}
