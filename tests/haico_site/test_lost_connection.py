"""A page read whose database connection PostgreSQL closed under it (a
failover, a restart: pg_terminate_backend) is read again on a new
connection (haico_site.middleware.LostConnectionMiddleware). The owner's tab
asks for its whole workspace after its socket reconnects, which is exactly
when a failover closes connections."""

import time

import psycopg
import pytest
from django.db import OperationalError, connection
from django.urls import reverse

from workspace.models import Todo
from workspace.views import live

pytestmark = pytest.mark.django_db(transaction=True)


def _terminate(pid: int) -> None:
    """End the backend `pid` as a failover does, and wait until it is gone."""
    params = connection.settings_dict
    with psycopg.connect(
        dbname=params["NAME"],
        user=params["USER"],
        password=params["PASSWORD"],
        host=params["HOST"],
        port=params["PORT"] or None,
        autocommit=True,
    ) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):
            if not admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                return
            time.sleep(0.05)
    raise AssertionError(f"backend {pid} was not ended")


def _objective_patch_that(monkeypatch, first_call) -> list:
    """The workspace read's objective patch runs `first_call` before its first query."""
    calls = []
    original = live.panels.render_objective_patch

    def patched(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            first_call()
        return original(**kwargs)

    monkeypatch.setattr(live.panels, "render_objective_patch", patched)
    return calls


@pytest.mark.postgresql_pass  # SQLite has no server to end a connection
def test_the_owners_workspace_read_is_answered_whole_when_the_database_closed_its_connection_mid_read(
    owner_client, thread, monkeypatch
):
    calls = _objective_patch_that(monkeypatch, lambda: _terminate(connection.connection.info.backend_pid))
    # Django logs the first try's error (the test client would raise it again).
    owner_client.raise_request_exception = False

    response = owner_client.get(reverse("workspace:live", kwargs={"thread_id": thread.pk}))

    assert response.status_code == 200
    body = response.content.decode()
    assert 'hx-swap-oob="innerHTML:#objective-view"' in body  # the first patch, read again
    assert 'id="doc-review-title"' in body  # and the document's, the last
    assert len(calls) == 2  # read, and read again on the new connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_a_database_error_on_a_connection_that_still_answers_is_not_hidden_by_a_second_read(owner_client, thread, monkeypatch):
    def refused():
        raise OperationalError("canceling statement due to lock timeout")

    calls = _objective_patch_that(monkeypatch, refused)
    owner_client.raise_request_exception = False

    response = owner_client.get(reverse("workspace:live", kwargs={"thread_id": thread.pk}))

    assert response.status_code == 500
    assert len(calls) == 1


@pytest.mark.postgresql_pass
def test_a_read_whose_connection_closed_before_the_sessions_read_is_answered(owner_client, thread):
    """The failover lands before the request's first query: the session's
    read, in the middlewares, before any view (a CI run caught this one).
    The test client does not health-check the kept connection, so the
    first query meets the ended backend, as after a check that just passed."""
    owner_client.raise_request_exception = False
    _terminate(connection.connection.info.backend_pid)

    response = owner_client.get(reverse("workspace:live", kwargs={"thread_id": thread.pk}))

    assert response.status_code == 200
    assert 'hx-swap-oob="innerHTML:#objective-view"' in response.content.decode()


@pytest.mark.postgresql_pass
def test_a_write_is_never_sent_again_after_a_lost_connection(owner_client, thread):
    owner_client.raise_request_exception = False
    _terminate(connection.connection.info.backend_pid)

    response = owner_client.post(reverse("workspace:plan-add", kwargs={"thread_id": thread.pk}), {"text": "Sent once"})

    # Said as it is: the database could not be reached, nothing was changed (haico_site.views.server_error).
    assert response.status_code == 503
    assert "nothing was changed" in response.content.decode()
    connection.close()
    assert not Todo.objects.filter(thread=thread).exists()
    # Sent again by the person, on a live connection, it goes through once.
    owner_client.post(reverse("workspace:plan-add", kwargs={"thread_id": thread.pk}), {"text": "Sent once"})
    assert list(Todo.objects.filter(thread=thread).values_list("text", flat=True)) == ["Sent once"]
