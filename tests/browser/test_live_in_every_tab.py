"""What the chat shows besides the turns themselves is live in every open
tab of the thread too, in Chromium against the real server:

- the Mode and Model selectors: a change in one tab sets the value in the
  other in place, so a keyboard user on the selector there keeps focus on
  the same element;
- a turn's Feedback count;
- a turn's "‹ 1/2 ›" arrows once a sibling branch runs it (Regenerate);
- the trajectory map: a turn's end adds its node (the current one, on the
  thread's path) without sending the map; a map whose lanes changed (a new
  branch) fetches itself whole;
- the staff read-only view, which follows the owner's edits and turns.
"""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply
from tests.support.openai_server import OpenAICompatibleServer

from .conftest import PASSWORD
from .helpers import MODEL, TURN_WAIT_MS, log_in, model_env, new_thread_for, open_second_tab, thread_id_from, wait_for_socket
from .test_workspace_flow import add_preference

OTHER_MODEL = "scripted-other"


@pytest.fixture
def model_server():
    with OpenAICompatibleServer(models=[MODEL, OTHER_MODEL]) as server:
        server.script([Reply(text="First answer."), Reply(text="Second answer."), Reply(text="Another second answer.")])
        yield server


def _server(start_haico_server, model_server):
    return start_haico_server(model_env(model_server, HAICO_MODELS=f"{MODEL},{OTHER_MODEL}"))


def _send(page: Page, text: str, answers: list[str]) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator("#chat-messages .answer")).to_have_text(answers, timeout=TURN_WAIT_MS)


def _mark(page: Page, selector: str) -> None:
    """Tag the element itself, so a test can tell it from a replacement."""
    page.locator(selector).evaluate("(el) => { el.__original = true; }")


def _focused_original(page: Page, selector: str) -> bool:
    return page.evaluate(
        "(sel) => document.activeElement === document.querySelector(sel) && document.activeElement.__original === true",
        selector,
    )


def test_selectors_feedback_versions_and_the_map_follow_in_another_tab(new_page, start_haico_server, model_server):
    server = _server(start_haico_server, model_server)
    first = new_page()
    url = new_thread_for(first, server.url, "ada")
    second = open_second_tab(first, url)

    # The selectors: the second tab's keyboard user stays on the same element while the first tab changes it.
    for selector, label, value in (("#chat-mode", "Plan", "plan"), ("#chat-model", OTHER_MODEL, f"env:{OTHER_MODEL}")):
        _mark(second, selector)
        second.locator(selector).focus()
        first.locator(selector).select_option(label=label)
        expect(second.locator(selector)).to_have_value(value)
        assert _focused_original(second, selector), f"{selector} was replaced or lost focus in the other tab"
        # The first tab's own selector stays where it was too (its answer sets no other element).
        expect(first.locator(selector)).to_have_value(value)
    first.locator("#chat-mode").select_option(label="Execute")
    expect(second.locator("#chat-mode")).to_have_value("execute")
    assert server.query("SELECT mode, chat_model FROM conversations_thread") == [("execute", f"env:{OTHER_MODEL}")]

    # Two turns; the second tab's map gets each new node, the newest the current one.
    _send(first, "first message", ["First answer."])
    trajectory = second.get_by_role("region", name="Trajectory")
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 1\b"))).to_have_attribute("aria-current", "step")
    _mark(second, "#trajectory-map")
    _send(first, "second message", ["First answer.", "Second answer."])
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 2\b"))).to_have_attribute("aria-current", "step")
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 1\b"))).not_to_have_attribute("aria-current", "step")
    expect(trajectory.locator(".tnode.on-path")).to_have_count(2)
    assert second.evaluate("() => document.getElementById('trajectory-map').__original === true"), "the map was replaced"

    # Feedback left in the first tab: the second tab's control counts it.
    chat = first.get_by_role("region", name="Chat")
    second.get_by_role("button", name="Feedback on turn 1").focus()
    chat.get_by_role("button", name="Feedback on turn 1").click()
    form = chat.get_by_role("region", name="Your feedback on turn 1").get_by_role("group", name="Leave feedback")
    form.get_by_role("radio", name="4 (good)").check()
    form.get_by_role("button", name="Save feedback").click()
    expect(second.get_by_role("button", name="Feedback on turn 1")).to_contain_text("(1 left)")
    expect(second.get_by_role("button", name="Feedback on turn 1")).to_be_focused()  # a keyboard user stays on it

    # Regenerate turn 2 in the first tab (it moves to the branch): the second tab's turn 2 has arrows.
    chat.get_by_role("button", name="Regenerate turn 2").click()
    expect(first.get_by_role("region", name="Chat").locator("#chat-messages .answer")).to_have_text(
        ["First answer.", "Another second answer."], timeout=TURN_WAIT_MS
    )
    assert thread_id_from(first.url.split("#")[0]) != thread_id_from(url)
    versions = second.get_by_role("navigation", name="Versions of turn 2")
    expect(versions).to_contain_text("1/2")
    expect(versions.get_by_role("link", name="Next version of turn 2")).to_be_visible()
    # The branch's lane is new to the second tab's map: it fetched the map whole, with the branch's turn 2.
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 2\b"))).to_have_count(2)
    expect(trajectory.locator(".tnode[data-current]")).to_have_count(1)
    expect(trajectory.locator(".tnode[data-current]")).to_have_attribute("data-lane", "0")


def test_the_staff_view_follows_the_owners_edits_and_turns(new_page, start_haico_server, model_server):
    server = _server(start_haico_server, model_server)
    server.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_superuser(username='boss', password={PASSWORD!r}, email='boss@example.com')",
    )
    owner = new_page()
    url = new_thread_for(owner, server.url, "ada")
    wait_for_socket(owner)
    staff = new_page()
    log_in(staff, server.url, "boss")
    staff.goto(f"{server.url}/threads/{thread_id_from(url)}/staff-view/")
    view = staff.locator("main")
    expect(view.get_by_text("Read-only view for staff.")).to_be_visible()
    wait_for_socket(staff)
    expect(view.get_by_role("region", name="Preferences")).to_contain_text("No preferences.")

    add_preference(owner, "Peer-reviewed sources", "No blogs", "hard")
    expect(view.get_by_role("region", name="Preferences")).to_contain_text("Peer-reviewed sources", timeout=5_000)

    _send(owner, "first message", ["First answer."])
    expect(view.get_by_role("region", name="Chat")).to_contain_text("First answer.", timeout=TURN_WAIT_MS)
    expect(view.get_by_role("region", name="Chat")).to_contain_text("first message")
    # Still read-only, and one visit recorded however often it refreshed.
    expect(view.locator("form, textarea, select, [ws-send]")).to_have_count(0)
    assert server.query("SELECT COUNT(*) FROM conversations_moderationaction WHERE action = 'view_workspace'") == [(1,)]
