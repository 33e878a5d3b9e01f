"""A chat of many turns, in Chromium against the real server: the page
shows the latest 40 turns and "Show N earlier turns" brings the rest in
place, oldest on top, without the chat's live region reading them out; a
link to a turn the page does not show yet (a version arrow's #turn-N)
fetches it and scrolls to it (docs/adr/0095)."""

import re

import pytest
from playwright.sync_api import expect

from .conftest import _manage
from .helpers import thread_id_from, wait_for_socket

pytestmark = pytest.mark.browser

TURNS = 45

MAKE_TURNS = (
    "import os; from workspace.models import Thread; from conversations.turns import slot\n"
    "thread = Thread.objects.get(pk=os.environ['HAICO_TEST_THREAD'])\n"
    "for n in range(1, int(os.environ['HAICO_TEST_TURNS']) + 1):\n"
    "    thread.refresh_from_db()\n"
    "    slot.turn_begin(thread=thread, user_message=f'message {n}')\n"
    "    slot.turn_finish(thread=thread, turn_index=n, answer=f'answer {n}')\n"
)

RECORD_LIVE_REGION = """() => {
  const list = document.getElementById("chat-messages");
  window.liveWhenTurnsCame = [];
  new MutationObserver((records) => {
    const turnCame = records.some((r) => [...r.addedNodes].some((n) => n.matches && n.matches("article.turn")));
    if (turnCame) window.liveWhenTurnsCame.push(list.getAttribute("aria-live"));
  }).observe(list, { childList: true });
}"""


def test_a_long_chat_shows_its_latest_turns_and_brings_the_earlier_ones_and_linked_ones(owner_workspace, haico_server):
    page, url = owner_workspace
    env = {**haico_server.env, "HAICO_TEST_THREAD": thread_id_from(url), "HAICO_TEST_TURNS": str(TURNS)}
    _manage(env, "shell", "-c", MAKE_TURNS)
    page.reload()
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    turns = chat.locator("#chat-messages > article.turn")
    expect(turns).to_have_count(40)
    expect(turns.first).to_contain_text("message 6")
    expect(chat).to_contain_text("5 earlier turns not shown")

    # What the chat's live region was when turns came in: a screen reader reads out what
    # arrives while it is "polite", and earlier turns are history, not news.
    page.evaluate(RECORD_LIVE_REGION)
    chat.get_by_role("button", name="Show 5 earlier turns").click()
    expect(turns).to_have_count(TURNS)
    expect(page.locator("#chat-earlier-status")).to_have_text("5 earlier turns shown above")
    assert set(page.evaluate("window.liveWhenTurnsCame")) == {"off"}
    expect(page.locator("#chat-messages")).to_have_attribute("aria-live", "polite")
    expect(turns.first).to_contain_text("message 1")
    expect(turns.first).to_contain_text("answer 1")
    assert [int(n) for n in turns.evaluate_all("els => els.map(e => e.dataset.turn)")] == list(range(1, TURNS + 1))
    expect(chat.get_by_role("button", name=re.compile("earlier turn"))).to_have_count(0)

    # A link to turn 2, which a fresh page does not show: it is fetched and scrolled to.
    page.goto("about:blank")
    page.goto(f"{url}#turn-2")
    expect(chat.locator("#turn-2")).to_be_in_viewport()
    expect(turns).to_have_count(TURNS - 1)  # from turn 2 on
    expect(chat.get_by_role("button", name="Show 1 earlier turn")).to_be_visible()
