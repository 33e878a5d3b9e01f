from django.contrib.auth import views as auth_views
from django.urls import path

from . import account_views, token_views

urlpatterns = [
    # Someone signed in is sent on to their threads (or where ?next= says), not shown the form again.
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("signup/", account_views.signup, name="signup"),
    path("tokens/", token_views.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke/", token_views.token_revoke, name="token-revoke"),
]
