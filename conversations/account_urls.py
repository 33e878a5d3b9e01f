"""The account pages: sign-up, access tokens and Django's own login, logout
and password pages, listed here rather than included whole so the password
reset's two views can be this app's (conversations.account_views: reset
mails limited per account, a reset ending the account's login lockouts)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from . import account_views, token_views

urlpatterns = [
    # Someone signed in is sent on to their threads (or where ?next= says), not shown the form again.
    # A browser whose account was deactivated is told so (account_views.LogIn).
    path("login/", account_views.LogIn.as_view(), name="login"),
    path("signup/", account_views.signup, name="signup"),
    path("waiting/", account_views.waiting, name="waiting"),
    path("usage/", account_views.usage, name="usage"),
    path("tokens/", token_views.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke/", token_views.token_revoke, name="token-revoke"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password_reset/", account_views.PasswordReset.as_view(), name="password_reset"),
    path("password_reset/done/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("reset/<uidb64>/<token>/", account_views.PasswordResetConfirm.as_view(), name="password_reset_confirm"),
    path("reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
]
