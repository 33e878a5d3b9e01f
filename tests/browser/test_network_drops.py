"""The network drops the way Wi-Fi and a sleeping laptop drop it: silently,
no close frame, no reset until the page sends (tests/support/network.py).
Nothing a person does meanwhile is shown as saved when it was not, and a
page whose socket died that way catches up (docs/adr/0157)."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import pytest
from playwright.sync_api import expect

from tests.support.network import Wire

from .conftest import OWNER
from .helpers import (
    document_status,
    document_text,
    long_document,
    new_thread_for,
    save_document_now,
    save_through_service,
    thread_id_from,
    wait_for_socket,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def wire_to():
    wires: list[Wire] = []

    def make(server) -> Wire:
        wire = Wire(server.port)
        wires.append(wire)
        return wire

    yield make
    for wire in wires:
        wire.close()


def network_down(page, wire: Wire) -> None:
    page.context.set_offline(True)
    wire.down()


def network_back(page, wire: Wire, how: str = "reset") -> None:
    wire.back(how)
    page.context.set_offline(False)


SEED_PLAN = (
    "import uuid, json; from workspace.models import Thread; from workspace.services import plan as p; "
    "t = Thread.objects.get(pk=uuid.UUID('{thread_id}')); "
    "p.todos_add_outline(thread=t, steps=json.loads('{steps}'))"
)


def test_a_step_the_owner_ticks_during_a_wifi_blip_goes_back_to_not_done_and_the_plan_says_so(new_page, haico_server, wire_to):
    """A blip of a few seconds that the thread's socket survives: she ticks
    step 50.1 of a 300-step plan while it is away. The tick never reached the
    server, so the box goes back to not done and the plan says it was not
    saved (not only a passing flash); ticked again once back, it is saved."""
    wire = wire_to(haico_server)
    page = new_page()
    url = new_thread_for(page, wire.url, OWNER)
    steps = []
    for n in range(1, 101):
        steps += [{"text": f"Step {n}", "depth": 0}, {"text": f"Step {n} part a", "depth": 1}]
        steps += [{"text": f"Step {n} part b", "depth": 1}]
    haico_server.manage("shell", "-c", SEED_PLAN.format(thread_id=uuid.UUID(thread_id_from(url)), steps=json.dumps(steps)))
    page.goto(url)
    wait_for_socket(page)
    planning = page.get_by_role("region", name="Planning")
    expect(planning.locator("#plan-steps > li.step")).to_have_count(300, timeout=20_000)

    def stored_done() -> bool:
        [(done,)] = haico_server.query("SELECT done FROM workspace_todo WHERE text = ?", ("Step 50 part a",))
        return bool(done)

    network_down(page, wire)
    box = planning.get_by_role("checkbox", name="Done: step 50.1", exact=True)
    box.click()  # not check(): the box may be back before Playwright looks
    expect(box).not_to_be_checked(timeout=10_000)
    alert = planning.get_by_role("alert")
    expect(alert).to_have_text(
        "Step 50.1 was not marked done: the server could not be reached. It shows what is saved; try again once you are back online."
    )
    expect(planning.locator("#plan-markdown")).to_contain_text("- [ ] 50.1 Step 50 part a")
    network_back(page, wire, "keep")
    page.wait_for_timeout(2_000)
    assert not stored_done()
    expect(box).not_to_be_checked()

    box.check()
    expect(alert).to_be_hidden(timeout=10_000)
    expect(box).to_be_checked()
    expect(planning.locator("#plan-count")).to_have_text("1/300 done")
    assert stored_done()


SOCKET_OPEN = (
    "() => { const el = document.querySelector('[ws-connect]');"
    " const ws = el && el['htmx-internal-data'] && el['htmx-internal-data'].webSocket;"
    " return !!ws && !!ws.socket && ws.socket.readyState === 1; }"
)


@pytest.mark.parametrize(
    ("how", "noticed_on"),
    [("dead", "online"), ("silent", "online"), ("dead", "visibilitychange")],
    ids=["dead-back-online", "server-end-gone-back-online", "dead-tab-shown-again"],
)
def test_a_page_whose_socket_died_silently_catches_up_with_what_another_window_of_the_owner_saved(
    new_page, haico_server, wire_to, how, noticed_on
):
    """The laptop slept, the Wi-Fi changed: the page's socket is dead with no
    close frame (the browser still calls it open). Meanwhile another window
    of hers saves an edit. When the network comes back (the `online` event)
    or she shows the tab again, the page finds out within seconds (its
    liveness check gets no answer, or the far end resets it), reconnects,
    shows the edit, and hears the next one live."""
    wire = wire_to(haico_server)
    page = new_page()
    url = new_thread_for(page, wire.url, OWNER)
    thread_id = thread_id_from(url)
    text = long_document(40_000)
    save_through_service(haico_server, thread_id, text)
    page.goto(url)
    wait_for_socket(page)
    expect(document_text(page)).to_have_value(text, timeout=30_000)
    expect(document_status(page)).to_have_text("Saved")

    wire.down()
    page.wait_for_timeout(2_000)
    wire.back(how)
    other = new_page()
    other.context.add_cookies(page.context.cookies())
    other.goto(f"{haico_server.url}{urllib.parse.urlparse(url).path}")
    wait_for_socket(other)
    changed = text.replace("Paragraph 5.2 weighs it.", "Paragraph 5.2 weighs it, said the other window.")
    save_document_now(other, changed)
    page.wait_for_timeout(2_000)
    assert document_text(page).input_value() == text  # nothing reached it: the socket is dead
    assert page.evaluate(SOCKET_OPEN), "the browser already knew its socket was gone"

    target = "window" if noticed_on == "online" else "document"
    page.evaluate(f"() => {target}.dispatchEvent(new Event('{noticed_on}'))")
    expect(document_text(page)).to_have_value(changed, timeout=15_000)
    expect(document_status(page)).to_have_text("Saved")
    expect(page.get_by_role("status").filter(has_text="Reconnecting")).to_have_count(0)
    assert page.evaluate(SOCKET_OPEN)

    later = changed.replace("Paragraph 9.2 weighs it.", "Paragraph 9.2 weighs it, said the other window later.")
    save_document_now(other, later)
    expect(document_text(page)).to_have_value(later, timeout=10_000)
