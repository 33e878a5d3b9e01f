"""The account's access tokens page (/accounts/tokens/): make one (its secret
shown once, in the element labelled "New token"; optionally expiring and
read-only), see when each was last used and expires, revoke one. Only the
signed-in person's own tokens."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from workspace.errors import UserFacingError

from . import tokens

TEMPLATE = "registration/tokens.html"
EXPIRY_LABELS = {"never": "Never", "7": "In 7 days", "30": "In 30 days", "90": "In 90 days"}


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request):
    context = {
        "new_token": None,
        "new_secret": None,
        "error": None,
        "name": "",
        "expires": "never",
        "read_only": False,
        "expiry_choices": list(EXPIRY_LABELS.items()),
    }
    status = 200
    if request.method == "POST":
        expires = request.POST.get("expires", "never")
        read_only = request.POST.get("read_only", "") in ("1", "on", "true")
        try:
            if expires not in tokens.EXPIRY_CHOICES:
                raise UserFacingError("Choose when the token expires: never, or in 7, 30 or 90 days.")
            context["new_token"], context["new_secret"] = tokens.token_create(
                user=request.user,
                name=request.POST.get("name", ""),
                expires_in_days=tokens.EXPIRY_CHOICES[expires],
                read_only=read_only,
            )
        except UserFacingError as exc:
            context.update(
                error=exc.message,
                name=request.POST.get("name", ""),
                expires=expires if expires in EXPIRY_LABELS else "never",
                read_only=read_only,
            )
            status = 400
    context["tokens"] = tokens.tokens_for(user=request.user)
    response = render(request, TEMPLATE, context, status=status)
    # The secret is on this page only: never cached, never offered again.
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def token_revoke(request, pk):
    if tokens.token_revoke(user=request.user, token_id=pk) is None:
        raise Http404("No such token.")
    return redirect("tokens")
