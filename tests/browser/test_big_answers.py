"""A model that streams a multi-megabyte answer, on two servers sharing
PostgreSQL and the Redis channel layer (docs/adr/0043).

Daphne refuses to send a WebSocket message over 1 MiB, so a turn's end
pushed as one message with the whole answer never reached any tab: every
tab stayed on "The assistant is working…" with Send disabled. Now the answer
is cut at HAICO_ANSWER_MAX_CHARS with a note saying so, the model's stream
is stopped there, no message is larger than the live layer's limit, and
every tab, on either server, ends the turn with the cut answer shown."""

import pytest
from playwright.sync_api import expect

from agent.answer_cap import cut_note
from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, open_second_tab

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

ANSWER_MAX_CHARS = 200_000
NOTE = cut_note(ANSWER_MAX_CHARS)
# About 6 MB, streamed in 32 000-character events. Mostly two-byte
# characters, so even the answer cut at the cap renders to more than one
# live message may carry: the pages fetch it (conversations.live).
HUGE_ANSWER = "".join(f"Paragraph {n}: {'éàü ôîç ñøå ' * 12}\n\n" for n in range(28_000))


def _expect_turn_ended_with_the_cut_answer(tab) -> None:
    chat = tab.get_by_role("region", name="Chat")
    answer = chat.locator("#turn-1-answer-content")
    expect(answer).to_contain_text(NOTE, timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
    expect(tab.locator("#chat-status")).to_have_attribute("data-state", "idle")
    expect(chat.get_by_text("The assistant is working")).to_have_count(0)
    text = answer.inner_text()
    assert text.startswith("Paragraph 0: éàü ôîç")
    # The answer up to the cap is all there (rendered: paragraphs, no markup).
    assert ANSWER_MAX_CHARS * 0.9 < len(text) < ANSWER_MAX_CHARS * 1.05
    assert text.rstrip().endswith(NOTE)


def test_a_multi_megabyte_answer_ends_the_turn_in_every_tab_cut_with_a_note(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url, model_server
):
    assert len(HUGE_ANSWER.encode()) > 5_000_000
    model_server.script([Reply(text=HUGE_ANSWER, token_chars=32_000), Reply(text="A short second answer.")])
    env = model_env(model_server, REDIS_URL=redis_url)
    server_a = start_haico_server(env, database_url=migrated_postgres_database_url)
    server_b = start_haico_server(env, database_url=migrated_postgres_database_url)

    tab_a = new_page()
    url_a = new_thread_for(tab_a, server_a.url, "ada")
    tab_b = open_second_tab(tab_a, url_a.replace(server_a.url, server_b.url))  # the same person, on the other server

    chat_a = tab_a.get_by_role("region", name="Chat")
    chat_a.get_by_role("textbox", name="Message").fill("Tell me everything")
    chat_a.get_by_role("button", name="Send").click()

    for tab in (tab_a, tab_b):
        _expect_turn_ended_with_the_cut_answer(tab)

    # The thread goes on: the next turn runs and ends in both tabs.
    chat_a.get_by_role("textbox", name="Message").fill("Shorter, please")
    chat_a.get_by_role("button", name="Send").click()
    for tab in (tab_a, tab_b):
        chat = tab.get_by_role("region", name="Chat")
        expect(chat.locator("#turn-2-answer-content")).to_have_text("A short second answer.", timeout=TURN_WAIT_MS)
        expect(chat.get_by_role("button", name="Send")).to_be_enabled()

    # Stored cut, as shown: a reload on either server shows the same.
    for tab in (tab_a, tab_b):
        tab.reload()
        _expect_turn_ended_with_the_cut_answer(tab)
    # The model's stream was left at the cap: the history sent with the
    # second turn holds the cut answer, not five megabytes.
    second = model_server.requests[1]["messages"]
    [first_answer] = [m for m in second if m.get("role") == "assistant"]
    assert first_answer["content"].endswith(NOTE)
    assert len(first_answer["content"]) < ANSWER_MAX_CHARS + 200
    # The answer, too big for one message, was fetched by the pages.
    assert "too big for one message; its pages fetch it instead" in server_a.log_tail(400)
    for server in (server_a, server_b):
        assert "PayloadExceededError" not in server.log_tail(400)
