"""Sign-up (a username, a password, an optional email for password resets;
open, by invitation or closed: conversations.signup), the page of an
account waiting for approval, the password reset's own two views, and the
page a login gets once it is locked out (django-axes, haico_site.settings:
too many wrong passwords for one username from one address; docs/adr/0051).

Sign-up says when a username is taken: a sign-up form has to, so it does
tell whoever asks which names exist. Sign-ups are limited per address
(HAICO_RATE_SIGNUP, haico_site.middleware.AccessLimitsMiddleware), which
bounds how many names one address can try. The password reset says the
same whatever the address given, so it confirms nothing."""

import logging
import math

from axes.helpers import get_client_username, get_cool_off
from axes.utils import reset as axes_reset
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordResetForm
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from . import approval, login_limits, ratelimit, sessions
from . import signup as signups
from .forms import SignupForm
from .usage import person_usage


class LogIn(auth_views.LoginView):
    """Django's login, which also tells a browser whose own session names
    an account staff deactivated that it has been: its person would
    otherwise try their password again and again, told only that it does
    not match. A failed login itself stays Django's generic answer, so
    nobody learns from a typed username whether it exists or is inactive
    (docs/adr/0108)."""

    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["account_deactivated"] = sessions.deactivated_account_of(self.request.session)
        return context


def _signup_refused(request, message: str, *, status: int):
    return render(request, "registration/signup_refused.html", {"message": message}, status=status)


logger = logging.getLogger("haico.conversations.accounts")
RESET_MAIL = "reset-mail"


@require_http_methods(["GET", "POST"])
def signup(request):
    if request.user.is_authenticated:
        return redirect("conversations:list")
    # Closed, or by invitation without a valid link: a page saying so, and nothing made.
    mode, secret, invite = signups.signup_mode(), None, None
    refused_status = 403 if request.method == "POST" else 200
    if mode == signups.CLOSED:
        return _signup_refused(request, signups.CLOSED_MESSAGE, status=refused_status)
    if mode == signups.INVITE:
        secret = request.POST.get("invite") or request.GET.get("invite") or ""
        if not secret:
            return _signup_refused(request, signups.INVITE_ONLY_MESSAGE, status=refused_status)
        try:
            invite = signups.invite_for_secret(secret)
        except signups.InviteRefused as exc:
            return _signup_refused(request, exc.message, status=403)
    form = SignupForm(request.POST or None, invite_email=invite.email if invite else "")
    if request.method == "POST" and form.is_valid():
        try:
            user = signups.account_sign_up(form=form, invite_secret=secret)
        except signups.InviteRefused as exc:
            return _signup_refused(request, exc.message, status=403)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("waiting" if approval.is_waiting(user) else "conversations:list")
    context = {"form": form, "invite": secret or ""}
    return render(request, "registration/signup.html", context, status=400 if form.errors else 200)


@login_required
@require_GET
def waiting(request):
    """What a person whose account waits for staff approval sees, and nothing else (conversations.approval)."""
    if not approval.is_waiting(request.user):
        return redirect("conversations:list")
    return render(request, "registration/waiting.html", {"message": approval.WAITING_MESSAGE})


@login_required
@require_GET
def usage(request):
    """The person's own model usage: today, this month, per model, and their token limits (docs/adr/0063)."""
    return render(request, "registration/usage.html", person_usage(user=request.user))


def locked_out(request, original_response=None, credentials=None):
    """django-axes' lockout response (AXES_LOCKOUT_CALLABLE), for both logins."""
    cool_off = get_cool_off(request)
    context = {
        "username": get_client_username(request, credentials) or "",
        "minutes": math.ceil(cool_off.total_seconds() / 60) if cool_off else None,
    }
    return render(request, "registration/locked_out.html", context, status=429)


class LimitedPasswordResetForm(PasswordResetForm):
    """At most HAICO_RATE_RESET_MAIL reset mails to one account, however many
    addresses ask: a request past it is answered as usual (the page never
    says whether an account exists) and no mail is sent."""

    def send_mail(self, subject_template_name, email_template_name, context, from_email, to_email, html_email_template_name=None):
        user = context["user"]
        if ratelimit.hit(RESET_MAIL, str(user.pk), ratelimit.rate_setting("HAICO_RATE_RESET_MAIL")) is not None:
            logger.warning("password reset mail for user %s not sent: HAICO_RATE_RESET_MAIL reached", user.pk)
            return
        super().send_mail(subject_template_name, email_template_name, context, from_email, to_email, html_email_template_name)


class PasswordReset(auth_views.PasswordResetView):
    form_class = LimitedPasswordResetForm


class PasswordResetConfirm(auth_views.PasswordResetConfirmView):
    """Choosing a new password from the mailed link: the person has shown
    they hold the account's mail, so the account's login lockouts end (from
    every address) and this browser is remembered as theirs."""

    def form_valid(self, form):
        response = super().form_valid(form)
        axes_reset(username=form.user.get_username())
        login_limits.remember(self.request, form.user)
        return response
