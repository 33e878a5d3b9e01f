"""The Content-Security-Policy header on every response, and /csp-report/,
where browsers report violations (docs/adr/0059). That a browser obeys it
and reports: tests/browser/test_csp.py."""

import json
import logging

import pytest
from django.test import Client

from haico_site.csp import REPORT_MAX_BYTES

pytestmark = pytest.mark.django_db

REPORT = {
    "csp-report": {
        "document-uri": "http://testserver/threads/",
        "violated-directive": "script-src-elem",
        "effective-directive": "script-src-elem",
        "blocked-uri": "inline",
        "source-file": "http://testserver/threads/",
        "line-number": 12,
        "script-sample": "alert(1)",
        "original-policy": "default-src 'self'; ...",
    }
}


def directives(header: str) -> dict[str, list[str]]:
    parsed = {}
    for part in header.split(";"):
        name, *sources = part.split()
        parsed[name] = sources
    return parsed


# A JSON answer too: the MCP metadata (the health probe's own header is in
# test_health.py; through this sync client its per-request loop can hang
# on closing the checkpointer's pool on PostgreSQL, docs/adr/0065).
@pytest.mark.parametrize("path", ["/accounts/login/", "/accounts/signup/", "/threads/", "/.well-known/oauth-protected-resource"])
def test_every_response_carries_the_policy(owner_client, path):
    response = owner_client.get(path)
    policy = directives(response["Content-Security-Policy"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'", "'report-sample'"]  # no 'unsafe-inline', no other origin
    assert policy["style-src"] == ["'self'", "'report-sample'"]
    assert policy["connect-src"] == ["'self'"]
    assert policy["img-src"] == ["'self'", "data:", "blob:"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'self'"]
    assert policy["form-action"] == ["'self'"]
    assert policy["report-uri"] == ["/csp-report/"]
    assert not any("*" in source or "unsafe-eval" in source for sources in policy.values() for source in sources)


def test_a_violation_report_is_logged_as_a_warning_without_a_session_or_token(caplog):
    client = Client(enforce_csrf_checks=True)
    with caplog.at_level(logging.WARNING, logger="haico.csp"):
        response = client.post("/csp-report/", json.dumps(REPORT), content_type="application/csp-report")
    assert response.status_code == 204
    [record] = [r for r in caplog.records if r.name == "haico.csp"]
    assert record.levelname == "WARNING"
    message = record.getMessage()
    assert "violated-directive='script-src-elem'" in message
    assert "blocked-uri='inline'" in message
    assert "script-sample='alert(1)'" in message
    assert "original-policy" not in message


def test_a_reporting_api_report_is_logged_too(caplog):
    report = [
        {
            "type": "csp-violation",
            "body": {
                "documentURL": "http://testserver/",
                "effectiveDirective": "img-src",
                "blockedURL": "http://elsewhere.example/x.png",
            },
        }
    ]
    with caplog.at_level(logging.WARNING, logger="haico.csp"):
        response = Client().post("/csp-report/", json.dumps(report), content_type="application/reports+json")
    assert response.status_code == 204
    assert "blocked-uri='http://elsewhere.example/x.png'" in caplog.records[-1].getMessage()


def test_long_fields_are_cut_in_the_log(caplog):
    report = {"csp-report": {**REPORT["csp-report"], "script-sample": "x" * 5000}}
    with caplog.at_level(logging.WARNING, logger="haico.csp"):
        Client().post("/csp-report/", json.dumps(report), content_type="application/csp-report")
    assert len(caplog.records[-1].getMessage()) < 1600


@pytest.mark.parametrize(
    "body",
    ["", "{not json", "[]", '"text"', "null", '{"csp-report": "no"}', '[{"body": 1}]', "[" * 10_000, b"\xff\xfe"],
)
def test_what_is_not_a_report_is_refused_with_400_and_nothing_logged(body, caplog):
    with caplog.at_level(logging.WARNING, logger="haico.csp"):
        response = Client().post("/csp-report/", body, content_type="application/csp-report")
    assert response.status_code == 400
    assert not [r for r in caplog.records if r.name == "haico.csp"]


def test_a_report_over_the_size_limit_is_refused_unread(caplog):
    report = json.dumps({"csp-report": {**REPORT["csp-report"], "script-sample": "x" * REPORT_MAX_BYTES}})
    with caplog.at_level(logging.WARNING, logger="haico.csp"):
        response = Client().post("/csp-report/", report, content_type="application/csp-report")
    assert response.status_code == 413
    assert not [r for r in caplog.records if r.name == "haico.csp"]


def test_only_post_is_taken():
    assert Client().get("/csp-report/").status_code == 405


def test_djangos_own_error_pages_keep_their_inline_styles(settings):
    # The CSRF failure page (here a plain form post without the token), and
    # with DEBUG the technical 404 page: Django's markup with its <style>.
    response = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "x"})
    assert response.status_code == 403 and b"<style" in response.content
    assert "Content-Security-Policy" not in response
    settings.DEBUG = True
    response = Client().get("/no-such-page/")
    assert response.status_code == 404 and b"<style" in response.content
    assert "Content-Security-Policy" not in response
    # Our own pages, errors included, keep the policy.
    settings.DEBUG = False
    assert "Content-Security-Policy" in Client().get("/no-such-page/")
