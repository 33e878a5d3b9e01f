"""Shared fixtures: the personas (owner, another user, staff) and a thread."""

import os

import pytest

# The model wire and tracing must never reach a real provider from the tests.
for _name in list(os.environ):
    if _name.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_")):
        del os.environ[_name]

PASSWORD = "correct-horse-battery-staple"


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
