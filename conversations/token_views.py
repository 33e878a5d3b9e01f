"""The account's access tokens page (/accounts/tokens/): make one (its secret
shown once, in the element labelled "New token"), see when each was last
used, revoke one. Only the signed-in person's own tokens."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from workspace.errors import UserFacingError

from . import tokens

TEMPLATE = "registration/tokens.html"


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request):
    context = {"new_token": None, "new_secret": None, "error": None, "name": ""}
    status = 200
    if request.method == "POST":
        try:
            context["new_token"], context["new_secret"] = tokens.token_create(
                user=request.user, name=request.POST.get("name", "")
            )
        except UserFacingError as exc:
            context.update(error=exc.message, name=request.POST.get("name", ""))
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
