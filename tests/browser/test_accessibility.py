"""axe-core (tests/support/vendor/axe.min.js, a maintained accessibility
engine) on the pages a person uses, at 1440 × 900 and on a 390 × 844 phone:
no serious or critical violation, and headings in order.

The workspace is checked with content in every panel: preferences (one
locked), a plan, a document, artifacts, turns with their reasoning, the
review of the agent's changes, the trajectory map; also with the document's
history open, the feedback form open and an approval card waiting. On a phone
each of its three views is checked, since axe judges only what shows.
"""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call

from .helpers import (
    TURN_WAIT_MS,
    document_text,
    model_env,
    new_thread_for,
    revenue_chart_call,
    revenue_table_call,
    wait_for_socket,
)

AXE = Path(__file__).resolve().parents[1] / "support" / "vendor" / "axe.min.js"
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
REPORT = "# Trip plan\n\nWe go to Lisbon in May.\n\n## Budget\n\nAbout 1200 euros for two.\n\n"


def axe_problems(page: Page, where: str) -> list[str]:
    """The serious and critical violations axe finds on the page as it shows
    now, and any heading out of order, one line per element."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated through the browser's debugging protocol, which the page's
        # Content-Security-Policy does not govern (a <script> tag added
        # inline would be refused by it, as it should be).
        page.evaluate(AXE.read_text() + "\n;undefined")
    violations = page.evaluate(
        """async () => {
            const result = await axe.run(document, { resultTypes: ["violations"] });
            return result.violations.map(v => ({ id: v.id, impact: v.impact,
                nodes: v.nodes.map(n => n.target.join(" ") + ": " + (n.failureSummary || "").replace(/\\s+/g, " ")) }));
        }"""
    )
    return [
        f"{where}: {v['impact']} {v['id']}: {node}"
        for v in violations
        if v["impact"] in ("serious", "critical") or v["id"] == "heading-order"
        for node in v["nodes"]
    ]


@pytest.fixture
def model_server(model_server):
    model_server.script(
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "add_preferences",
                        "Noting your rules for the trip.",
                        items=[
                            {"title": "Budget under 1500 euros", "kind": "hard", "subtitle": "for two people"},
                            {"title": "Short walks", "kind": "soft"},
                        ],
                    ),
                    tool_call("set_objective", "Recording the goal.", text="Plan three days in Lisbon"),
                    tool_call(
                        "add_todos",
                        "Laying out the plan.",
                        steps=[{"text": "Book flights"}, {"text": "Choose a hotel"}, {"text": "Compare three", "depth": 1}],
                    ),
                ]
            ),
            Reply(text="I noted your rules, the goal and a plan."),
            Reply(
                tool_calls=[
                    revenue_chart_call(),
                    revenue_table_call(),
                ]
            ),
            Reply(text="A chart and a table."),
            Reply(
                tool_calls=[
                    tool_call(
                        "replace_in_document",
                        "Raising the budget.",
                        old_text="About 1200 euros for two.",
                        new_text="About 1400 euros for two, flights included.",
                    ),
                    tool_call("append_to_document", "Adding the days.", text="## Days\n\n- Day 1: Alfama\n\n"),
                ]
            ),
            Reply(text="I raised the budget and added the days."),
            Reply(tool_calls=[tool_call("remove_preferences", "Dropping the rule you no longer want.", indices=[2])]),
        ]
    )
    return model_server


def _turn(page: Page, text: str, answers: int) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".answer")).to_have_count(answers, timeout=TURN_WAIT_MS)
    expect(chat.locator(".answer").nth(answers - 1)).not_to_be_empty(timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)


def _show(page: Page, view: str) -> None:
    tab = page.get_by_role("tab", name=view)
    if tab.is_visible():
        tab.click()


def _views(page: Page, where: str) -> list[str]:
    """The page at its size: on a phone each of the workspace's views in turn."""
    tabs = page.get_by_role("tablist", name="Workspace views")
    if not tabs.is_visible():
        return axe_problems(page, where)
    problems = []
    for name in ("Workspace", "Document", "Chat"):
        tab = tabs.get_by_role("tab", name=name)
        if tab.is_visible():
            tab.click()
            problems += axe_problems(page, f"{where}, {name} view")
    return problems


def test_the_pages_have_no_serious_accessibility_violation_at_1440_and_on_a_phone(new_page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    problems = []
    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        page.goto(f"{server.url}/accounts/login/")
        problems += axe_problems(page, f"login {size['width']}")

    page.set_viewport_size(DESKTOP)
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    document_text(page).fill(REPORT)
    page.get_by_role("region", name="Document").get_by_role("textbox", name="Document title").press("Enter")
    expect(page.locator("[data-doc-status]")).to_have_text("Saved")
    _turn(page, "Plan a trip to Lisbon: budget under 1500, short walks", 1)
    _turn(page, "Chart the budget and list hotels", 2)
    _turn(page, "Raise the budget and add the days", 3)
    prefs = page.get_by_role("region", name="Preferences")
    prefs.get_by_role("toolbar", name="Actions for preference Budget under 1500 euros").get_by_role("button", name="Lock").click()
    expect(prefs.get_by_text("Locked", exact=True)).to_be_visible()

    for size in (DESKTOP, PHONE):
        page.set_viewport_size(size)
        at = f"{size['width']}"
        for path in ("/threads/", "/accounts/tokens/"):
            page.goto(server.url + path)
            problems += axe_problems(page, f"{path} {at}")
        page.goto(url)
        wait_for_socket(page)
        centre = page.get_by_role("region", name="Document")
        expect(centre.get_by_role("region", name="The agent’s changes in turn 3")).to_be_visible()
        expect(page.locator(".reasoning-step").first).to_be_attached()
        problems += _views(page, f"workspace {at}")
        # An artifact on show, the history open, the feedback form open.
        _show(page, "Document")
        show = centre.get_by_role("combobox", name="Show")
        show.select_option(show.locator("option", has_text="Q1 vs Q2 Revenue").get_attribute("value"))
        expect(centre.get_by_role("heading", name="Q1 vs Q2 Revenue")).to_be_visible()
        problems += axe_problems(page, f"workspace {at}, a chart on show")
        centre.get_by_role("button", name="Back to the document").click()
        centre.get_by_role("button", name="History", exact=True).click()
        expect(page.get_by_role("region", name="Changes between versions")).to_be_visible()
        problems += axe_problems(page, f"workspace {at}, the history open")
        _show(page, "Chat")
        page.get_by_role("button", name="Feedback on turn 1").click()
        expect(page.get_by_role("group", name="Leave feedback")).to_be_visible()
        problems += axe_problems(page, f"workspace {at}, the feedback form open")
        page.locator("details.reasoning > summary").first.click()
        problems += axe_problems(page, f"workspace {at}, the reasoning open")

    # An approval card waiting for the person.
    page.set_viewport_size(DESKTOP)
    page.goto(url)
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("Drop the short walks rule")
    chat.get_by_role("button", name="Send").click()
    expect(page.get_by_role("region", name="Approval for turn 4")).to_be_focused(timeout=TURN_WAIT_MS)
    problems += axe_problems(page, "workspace 1440, an approval waiting")
    page.set_viewport_size(PHONE)
    problems += _views(page, "workspace 390, an approval waiting")

    assert not problems, "\n".join(problems)
