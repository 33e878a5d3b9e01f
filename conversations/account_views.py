"""Sign-up (a username, a password, an optional email for password resets), and the page a login gets once it is locked out (django-axes,
haico_site.settings: too many wrong passwords for one username from one address)."""

import math

from axes.helpers import get_client_username, get_cool_off
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from .forms import SignupForm


@require_http_methods(["GET", "POST"])
def signup(request):
    if request.user.is_authenticated:
        return redirect("conversations:list")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("conversations:list")
    return render(request, "registration/signup.html", {"form": form}, status=400 if form.errors else 200)


def locked_out(request, original_response=None, credentials=None):
    """django-axes' lockout response (AXES_LOCKOUT_CALLABLE), for both logins."""
    cool_off = get_cool_off(request)
    context = {
        "username": get_client_username(request, credentials) or "",
        "minutes": math.ceil(cool_off.total_seconds() / 60) if cool_off else None,
    }
    return render(request, "registration/locked_out.html", context, status=429)
