"""The Content-Security-Policy in Chromium (docs/adr/0059): a script put
into a page by anything but the site's own files does not run and is
reported to /csp-report/, where the server logs it; and the pages a person
uses, filled with what a turn leaves (a chart, a table, a document with an
aligned markdown table in its preview, the trajectory map, an approval
card), break no rule of the policy. The browser tests' servers all run with
the same policy (it is on in development too)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call

from .helpers import (
    TURN_WAIT_MS,
    expect_bar_chart,
    model_env,
    new_thread_for,
    revenue_chart_call,
    revenue_table_call,
    wait_for_socket,
)

# Every violation the page sees, from the first script on (the event fires
# whether or not a report is sent).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sample || ""));
});
"""

DOCUMENT = """# Findings

| Quarter | Revenue |
|:--------|--------:|
| Q1      |     120 |
| Q2      |     180 |
"""


def violations(page: Page) -> list[str]:
    return page.evaluate("window.__cspViolations || []")


def wait_for_log_line(server, *parts: str, timeout: float = 10.0) -> str:
    """The first line of the server's log holding every one of `parts`. The
    browser sends each violation's report on its own, in no set order."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in server.log_path.read_text(errors="replace").splitlines():
            if all(part in line for part in parts):
                return line
        time.sleep(0.1)
    raise AssertionError(f"no line with {parts!r} reached the server log:\n{server.log_tail()}")


@pytest.mark.allows_csp_violations
def test_an_injected_inline_script_does_not_run_and_is_reported_to_the_server(page, haico_server):
    page.add_init_script(RECORD_VIOLATIONS)
    new_thread_for(page, haico_server.url, "ada")
    page.evaluate(
        """() => {
            const script = document.createElement("script");
            script.textContent = "window.__injectedRan = true;";
            document.body.appendChild(script);
            const style = document.createElement("style");
            style.textContent = "body { background: rgb(255, 0, 0); }";
            document.head.appendChild(style);
        }"""
    )
    assert page.evaluate("window.__injectedRan === undefined")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 0, 0)"
    seen = violations(page)
    assert any(v.startswith("script-src-elem inline") for v in seen), seen
    assert any(v.startswith("style-src-elem inline") for v in seen), seen
    # The browser's report reached the endpoint and the log.
    line = wait_for_log_line(haico_server, "CSP violation: ", "script-src-elem")
    assert " WARNING haico.csp " in line
    assert "blocked-uri='inline'" in line
    assert "window.__injectedRan" in line  # the sample, so an operator can find what tried


@pytest.fixture
def model_server(model_server):
    model_server.script(
        [
            Reply(
                tool_calls=[
                    revenue_chart_call(),
                    revenue_table_call(),
                    tool_call("append_to_document", "Writing the findings.", text=DOCUMENT),
                    tool_call("add_preferences", "Noting your rule.", items=[{"title": "Formal tone", "kind": "soft"}]),
                ]
            ),
            Reply(text="Here are the **figures**."),
            Reply(tool_calls=[tool_call("remove_preferences", "Dropping the rule.", indices=[1])]),
        ]
    )
    return model_server


def test_the_pages_a_person_uses_break_no_rule_of_the_policy(new_page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    seen: list[str] = []

    def visit(url: str) -> None:
        page.goto(url)
        expect(page.locator("main")).to_be_visible()
        seen.extend(violations(page))

    for path in ("/accounts/login/", "/accounts/signup/"):
        visit(server.url + path)
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("chart and tabulate the revenue, write it up")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator("#chat-messages .answer").first).to_contain_text("Here are the figures.", timeout=TURN_WAIT_MS)

    # The table (shown last), the chart, then the document with its preview (the aligned markdown table).
    centre = page.get_by_role("region", name="Document")
    expect(centre.get_by_role("table")).to_contain_text("Q2")
    show = centre.get_by_role("combobox", name="Show")
    show.select_option(label=show.locator("option", has_text="Q1 vs Q2 Revenue").inner_text())
    expect_bar_chart(page)
    show.select_option(label="Document (live)")
    centre.get_by_role("button", name="Preview", exact=True).click()
    preview = centre.locator("#doc-preview")
    expect(preview.get_by_role("table")).to_contain_text("180")
    assert preview.locator("td").last.evaluate("el => getComputedStyle(el).textAlign") == "right"

    # The activity log, loaded when opened.
    page.locator("#activity-log summary").click()
    expect(page.locator("#activity-log .activity-body")).not_to_contain_text("Loading…")

    # A turn waiting for approval: the card.
    chat.get_by_role("textbox", name="Message").fill("drop the formal tone rule")
    chat.get_by_role("button", name="Send").click()
    expect(page.get_by_role("region", name="Approval for turn 2")).to_contain_text("Remove 1 preference.", timeout=TURN_WAIT_MS)
    seen.extend(violations(page))

    # The same page loaded afresh (the trajectory map's nodes are placed by
    # style attributes), the thread list and the tokens page.
    visit(url)
    expect(page.get_by_role("button", name=re.compile(r"^Turn 1\b"))).to_be_visible()
    visit(server.url + "/threads/")
    visit(server.url + "/accounts/tokens/")

    assert seen == []
    assert [m for m in console if "Content Security Policy" in m] == []
