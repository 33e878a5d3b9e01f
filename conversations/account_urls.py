from django.urls import path

from . import account_views

urlpatterns = [
    path("signup/", account_views.signup, name="signup"),
]
