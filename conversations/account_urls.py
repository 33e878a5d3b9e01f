from django.urls import path

from . import account_views, token_views

urlpatterns = [
    path("signup/", account_views.signup, name="signup"),
    path("waiting/", account_views.waiting, name="waiting"),
    path("usage/", account_views.usage, name="usage"),
    path("tokens/", token_views.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke/", token_views.token_revoke, name="token-revoke"),
]
