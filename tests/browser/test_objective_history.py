"""The objective's history and the snapshots, in Chromium against the real
server and a scripted model (docs/adr/0015): the person's edit and the
agent's `set_objective` are each listed once, newest first, with who made
them; the turn's snapshot, read as JSON, holds what the turn started with."""

from playwright.sync_api import expect

from tests.support.fake_model import Reply, tool_call

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, thread_id_from, wait_for_socket

PERSON_OBJECTIVE = "Compare two survey designs"
AGENT_OBJECTIVE = "Compare two survey designs for a 2027 soil study"


def test_the_history_lists_each_change_with_who_made_it_and_the_snapshot_reads_back(new_page, start_haico_server, model_server):
    model_server.script(
        [
            Reply(tool_calls=[tool_call("set_objective", "Sharpening the goal.", text=AGENT_OBJECTIVE)]),
            Reply(text="Objective sharpened."),
        ]
    )
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)

    planning = page.get_by_role("region", name="Planning")
    planning.get_by_role("button", name="Edit objective").click()
    planning.get_by_role("textbox", name="Objective").fill(PERSON_OBJECTIVE)
    planning.locator("#panel-objective").get_by_role("button", name="Save").click()
    expect(planning.locator(".objective-text")).to_have_text(PERSON_OBJECTIVE)

    chat = page.get_by_role("region", name="Chat")
    box = chat.get_by_role("textbox", name="Message")
    box.fill("Sharpen the objective")
    box.press("Enter")
    expect(chat.locator(".answer")).to_have_text(["Objective sharpened."], timeout=TURN_WAIT_MS)
    expect(planning.locator(".objective-text")).to_have_text(AGENT_OBJECTIVE)

    planning.get_by_role("button", name="Objective history").click()
    history = page.get_by_role("dialog", name="Objective history")
    entries = history.locator(".history-entry")
    expect(entries).to_have_count(3)
    expect(entries.nth(0)).to_contain_text("Now")
    expect(entries.nth(0)).to_contain_text(AGENT_OBJECTIVE)
    expect(entries.nth(0)).to_contain_text("Set by the agent during turn 1")
    expect(entries.nth(1)).to_contain_text(PERSON_OBJECTIVE)
    expect(entries.nth(1)).to_contain_text("Edited by ada before the first turn")
    expect(entries.nth(2)).to_contain_text("No objective yet")
    history.screenshot(path="/tmp/haico-objective-history.png")

    thread_id = thread_id_from(url)
    listed = page.request.get(f"{server.url}/threads/{thread_id}/workspace/snapshots/").json()
    assert [(s["turn_index"], s["user_message"]) for s in listed] == [(1, "Sharpen the objective")]
    snapshot = page.request.get(f"{server.url}/threads/{thread_id}/workspace/snapshots/1/").json()
    assert snapshot["objective_text"] == PERSON_OBJECTIVE  # what the turn started with
    assert (snapshot["document_title"], snapshot["document_content"]) == ("Untitled", "")
