"""What a person sees, and what the log says, when a request fails
(haico_site.views.server_error, haico_site.logs.DatabaseOutageAsLine): an
unreachable database is a 503 saying so, with when to try again, and one
line of the outage in the log; anything else is a 500 saying nothing was
changed, with its traceback in the log for the operator."""

import logging

import pytest

from haico_site.views import DATABASE_DOWN, SERVER_FAILED
from tests.support.outage_state import no_outage_on_record

pytestmark = [pytest.mark.urls("tests.haico_site.failing_urls"), pytest.mark.django_db]


@pytest.fixture
def failing_client(client, monkeypatch):
    client.raise_request_exception = False
    no_outage_on_record(monkeypatch)
    return client


def _records(caplog):
    return [(record.name, record.levelname, record.getMessage(), record.exc_info is not None) for record in caplog.records]


def test_a_page_the_unreachable_database_failed_says_so_and_when_to_try_again(failing_client, caplog):
    caplog.set_level(logging.INFO)

    response = failing_client.get("/refused/")

    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    body = response.content.decode()
    assert "<title>Not available just now · HAICO</title>" in body
    assert DATABASE_DOWN in body
    assert "Traceback" not in body
    assert _records(caplog) == [
        (
            "haico.site",
            "WARNING",
            "the database is unreachable (connection failed: connection to server at 127.0.0.1 failed: Connection "
            "refused): could not answer GET /refused/; failures are counted until it answers again",
            False,
        )
    ]
    caplog.clear()
    # Every request while it lasts is counted, not logged.
    assert failing_client.post("/refused/", HTTP_HX_REQUEST="true").status_code == 503
    assert _records(caplog) == []


def test_an_htmx_request_the_unreachable_database_failed_gets_the_sentence_to_show(failing_client):
    response = failing_client.post("/refused/", HTTP_HX_REQUEST="true")

    assert (response.status_code, response["Content-Type"]) == (503, "text/plain; charset=utf-8")
    assert response.content.decode() == DATABASE_DOWN


@pytest.mark.parametrize("path", ["/lock-timeout/", "/bug/"])
def test_any_other_failure_is_a_500_saying_nothing_was_changed_and_keeps_its_traceback(failing_client, caplog, path):
    response = failing_client.get(path)

    assert response.status_code == 500
    assert not response.has_header("Retry-After")
    body = response.content.decode()
    assert "<title>Something went wrong · HAICO</title>" in body
    assert SERVER_FAILED in body
    assert [(name, level, traceback) for name, level, _message, traceback in _records(caplog)] == [
        ("django.request", "ERROR", True)
    ]
    assert failing_client.get(path, HTTP_HX_REQUEST="true").content.decode() == SERVER_FAILED
