"""Two editors in Chromium on one shared thread: Bea drags a step on a page
that Ada's change has made outdated, whether its push has reached Bea's
page (while her drop was on its way) or not (lost on the way). The drop
carries where her page showed the step and the step she dropped it before;
the server finds the plan changed, moves nothing, and Bea's page says so
and shows the plan as it is now (docs/adr/0125)."""

import pytest
from playwright.sync_api import Page, expect

from .helpers import log_in, step_action, wait_for_socket
from .test_plan_keyboard_and_drag import drag, expect_plan, row, seed_plan
from .test_sharing import _share

REFUSED = "“Beta” was moved by someone else meanwhile, so “Delta” was not moved; the plan shows them as they are now."
AS_ADA_LEFT_IT = ["1 Beta", "2 Alpha", "3 Gamma", "4 Delta"]

# Bea's drops wait in her page until the test lets them go.
HOLD_DROPS = """() => {
    const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
    const held = [];
    window.releaseDrops = () => held.splice(0).forEach((go) => go());
    window.heldDrops = () => held.length;
    XMLHttpRequest.prototype.open = function (method, url) { this.__url = String(url); return open.apply(this, arguments); };
    XMLHttpRequest.prototype.send = function (body) {
        if (this.__url.indexOf("/place/") < 0) return send.call(this, body);
        held.push(() => send.call(this, body));
    };
}"""


def _drop_plan_pushes(page: Page) -> list[str]:
    """Route the page's socket through the test, losing every plan patch the server pushes."""
    lost: list[str] = []

    def handler(ws):
        server = ws.connect_to_server()

        def from_server(message):
            if isinstance(message, str) and 'data-live-patch="plan"' in message:
                lost.append(message)
                return
            ws.send(message)

        server.on_message(from_server)
        ws.on_message(lambda message: server.send(message))

    page.route_web_socket("**/ws/threads/**", handler)
    return lost


@pytest.mark.parametrize("pushed", [False, True], ids=["push-lost", "pushed-while-the-drop-waits"])
def test_a_drag_on_a_page_another_editor_outdated_moves_nothing_and_says_so(owner_workspace, haico_server, new_page, pushed):
    ada, url = owner_workspace
    haico_server.create_user("bea")
    _share(ada, "bea", "Editor")
    ada.keyboard.press("Escape")
    seed_plan(haico_server, url, [("Alpha", 0), ("Beta", 0), ("Gamma", 0), ("Delta", 0)])
    ada.goto(url)
    wait_for_socket(ada)

    bea = new_page()
    log_in(bea, haico_server.url, "bea")
    lost = [] if pushed else _drop_plan_pushes(bea)
    bea.goto(url)
    wait_for_socket(bea)
    expect_plan(bea, ["1 Alpha", "2 Beta", "3 Gamma", "4 Delta"])

    if pushed:
        # Bea drops Delta above Beta, to come right after Alpha; her drop is on its way...
        bea.evaluate(HOLD_DROPS)
        drag(bea, row(bea, "Delta"), row(bea, "Beta"))
        bea.wait_for_function("() => window.heldDrops() === 1")
        # ... when Ada moves Beta up, and the push reaches Bea's page.
        step_action(ada, "2", "Move up")
        expect_plan(bea, AS_ADA_LEFT_IT)
        bea.evaluate("() => window.releaseDrops()")
    else:
        # Ada moves Beta up; the push to Bea's page is lost on its way.
        step_action(ada, "2", "Move up")
        expect_plan(ada, AS_ADA_LEFT_IT)
        for _ in range(50):
            if lost:
                break
            bea.wait_for_timeout(100)
        assert lost, "the plan push never reached the test's socket"
        expect_plan(bea, ["1 Alpha", "2 Beta", "3 Gamma", "4 Delta"])
        # Bea drops Delta above Beta, to come right after Alpha, as her page shows it.
        drag(bea, row(bea, "Delta"), row(bea, "Beta"))

    expect(bea.get_by_role("region", name="Planning").get_by_role("alert")).to_have_text(REFUSED)
    expect_plan(bea, AS_ADA_LEFT_IT)
    expect_plan(ada, AS_ADA_LEFT_IT)
    bea.goto(url)
    expect_plan(bea, AS_ADA_LEFT_IT)

    # On the page as it is now, her drag moves: Beta to the end of the plan (its level).
    drag(bea, row(bea, "Beta"), row(bea, "Delta"), above=False)
    expect_plan(bea, ["1 Alpha", "2 Gamma", "3 Delta", "4 Beta"])
    expect_plan(ada, ["1 Alpha", "2 Gamma", "3 Delta", "4 Beta"])


def test_a_step_moved_at_once_after_the_persons_own_drag_is_not_taken_for_someone_elses(owner_workspace, haico_server):
    """Ada, alone, drags Delta to the top on a slow connection and at once
    moves Alpha down, which her page still numbers 1. The move waits for the
    drop's answer and goes with the number the plan then shows, so it is
    not refused as "moved by someone else" (moves go one after another
    across the plan, docs/adr/0125)."""
    ada, url = owner_workspace
    seed_plan(haico_server, url, [("Alpha", 0), ("Beta", 0), ("Gamma", 0), ("Delta", 0)])
    ada.goto(url)
    wait_for_socket(ada)
    ada.evaluate(HOLD_DROPS)
    expect_plan(ada, ["1 Alpha", "2 Beta", "3 Gamma", "4 Delta"])
    answers: list = []
    ada.on("response", lambda r: ("/move/" in r.url or "/place/" in r.url) and answers.append(r))

    drag(ada, row(ada, "Delta"), row(ada, "Alpha"))
    ada.wait_for_function("() => window.heldDrops() === 1")
    step_action(ada, "1", "Move down")
    ada.wait_for_timeout(500)
    assert [r.url for r in answers] == []  # the move waits for the drop
    # The plan can show the move, pushed over the socket, before the page
    # has the move's own answer: wait for that answer, not for the plan.
    with ada.expect_response(lambda r: "/move/" in r.url):
        ada.evaluate("() => window.releaseDrops()")
    expect_plan(ada, ["1 Delta", "2 Beta", "3 Alpha", "4 Gamma"])
    expect(ada.locator("#panel-plan")).not_to_contain_text("someone else")
    assert [r.status for r in answers] == [200, 200]
    assert ["someone else" in r.text() for r in answers] == [False, False]
