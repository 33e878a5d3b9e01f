"""The network drops the way Wi-Fi and a sleeping laptop drop it: silently,
no close frame, no reset until the page sends (tests/support/network.py).
Nothing a person does meanwhile is shown as saved when it was not, and a
page whose socket died that way catches up (docs/adr/0157)."""

from __future__ import annotations

import json
import uuid

import pytest
from playwright.sync_api import expect

from tests.support.network import Wire

from .conftest import OWNER
from .helpers import new_thread_for, thread_id_from, wait_for_socket

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
