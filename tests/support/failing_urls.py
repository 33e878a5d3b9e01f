"""A URLconf with one view that fails, for the logging tests (tests/haico_site/test_settings_logging.py)."""

from django.urls import path


def fails(request):
    raise RuntimeError("a view that fails on purpose")


urlpatterns = [path("fails/", fails)]
