"""Shared fixtures: the personas (owner, another user, staff) and a thread."""

import os

import pytest

# The model wire and tracing must never reach a real provider from the tests.
for _name in list(os.environ):
    if _name.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_")):
        del os.environ[_name]

PASSWORD = "correct-horse-battery-staple"

# CI sets HAICO_REQUIRE_ALL_TESTS=1: a test that would skip locally (no
# Chromium, no PostgreSQL, no Redis) is a failure there, so a green CI run
# proves that every test ran.
REQUIRE_ALL_TESTS = os.environ.get("HAICO_REQUIRE_ALL_TESTS") == "1"


def _skip_reason(longrepr) -> str:
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL_TESTS and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under HAICO_REQUIRE_ALL_TESTS=1 (every test must run): {_skip_reason(report.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if REQUIRE_ALL_TESTS and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"module skipped under HAICO_REQUIRE_ALL_TESTS=1: {_skip_reason(report.longrepr)}"


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(username="owner", password=PASSWORD)


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user(username="intruder", password=PASSWORD)


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_superuser(username="staff", password=PASSWORD, email="staff@example.com")


@pytest.fixture
def thread(owner):
    from conversations.services import thread_create

    return thread_create(owner=owner, title="Lit review")


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def other_client(client, other_user):
    client.force_login(other_user)
    return client


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client
