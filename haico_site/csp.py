"""The Content-Security-Policy of every page, and where browsers report a
violation of it (docs/adr/0059).

`ContentSecurityPolicyMiddleware` adds settings.SECURE_CSP (directive ->
sources, the shape Django 6's own setting has) as the header of every
response that has none yet. The policy allows scripts, styles, fonts,
images and connections from the site itself only (plus data: and blob:
images, for a chart's PNG export), no `<script>` or `<style>` in the page,
no framing, and reports every violation to `/csp-report/`.

`csp_report` takes those reports: a POST from the browser with no session
or CSRF token (browsers send neither), at most REPORT_MAX_BYTES, logged as
one warning each. It stores nothing, so a flood costs log lines, not rows.
"""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.http import HttpResponse, HttpResponseBadRequest
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

logger = logging.getLogger("haico.csp")

HEADER = "Content-Security-Policy"
REPORT_MAX_BYTES = 16 * 1024
# What of a report is logged, each value cut to FIELD_MAX_CHARS.
# ("script-sample": what browsers call the sample in a report-uri report, also for styles.)
REPORT_FIELDS = (
    "document-uri",
    "violated-directive",
    "effective-directive",
    "blocked-uri",
    "source-file",
    "line-number",
    "script-sample",
)
FIELD_MAX_CHARS = 200


def policy_header(policy: dict[str, list[str]]) -> str:
    return "; ".join(" ".join([directive, *sources]) for directive, sources in policy.items())


# Django's own error pages (the CSRF failure page; with DEBUG, the
# technical 404 and 500 pages) carry this tag, and their own inline <style>
# (and, for the 500 page, inline scripts).
DJANGO_ERROR_PAGE = b'<meta name="robots" content="NONE,NOARCHIVE">'


def is_django_error_page(response) -> bool:
    return (
        response.status_code >= 400
        and not response.streaming
        and response.get("Content-Type", "").startswith("text/html")
        and DJANGO_ERROR_PAGE in response.content[:2048]
    )


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.header = policy_header(settings.SECURE_CSP)

    def __call__(self, request):
        response = self.get_response(request)
        # Django's error pages are Django's markup, not ours, and show no
        # person's content unescaped: they keep their inline styles.
        if HEADER not in response and not is_django_error_page(response):
            response[HEADER] = self.header
        return response


def _report_fields(body: bytes) -> dict[str, str]:
    """The violation of a `report-uri` report ({"csp-report": {...}}) or of a
    Reporting API one ([{"type": "csp-violation", "body": {...}}])."""
    data = json.loads(body)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0].get("body")
        # The Reporting API names the same fields in camelCase.
        data = (
            {
                "document-uri": data.get("documentURL"),
                "violated-directive": data.get("effectiveDirective"),
                "effective-directive": data.get("effectiveDirective"),
                "blocked-uri": data.get("blockedURL"),
                "source-file": data.get("sourceFile"),
                "line-number": data.get("lineNumber"),
                "script-sample": data.get("sample"),
            }
            if isinstance(data, dict)
            else None
        )
    elif isinstance(data, dict):
        data = data.get("csp-report")
    if not isinstance(data, dict):
        raise ValueError("not a CSP report")
    return {name: str(data[name])[:FIELD_MAX_CHARS] for name in REPORT_FIELDS if data.get(name) not in (None, "")}


@csrf_exempt
@require_POST
def csp_report(request):
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > REPORT_MAX_BYTES:
        return HttpResponse("A report is at most 16 KB.", status=413, content_type="text/plain")
    body = request.read(REPORT_MAX_BYTES + 1)
    if len(body) > REPORT_MAX_BYTES:
        return HttpResponse("A report is at most 16 KB.", status=413, content_type="text/plain")
    try:
        fields = _report_fields(body)
    except (ValueError, UnicodeDecodeError, RecursionError, AttributeError):
        return HttpResponseBadRequest("Not a CSP violation report.", content_type="text/plain")
    logger.warning("CSP violation: %s", " ".join(f"{name}={value!r}" for name, value in fields.items()) or "(no details)")
    return HttpResponse(status=204)
