"""A long answer streamed on two servers sharing PostgreSQL and the Redis
channel layer: the turn runs on server A, the same person has a tab on
server B (docs/adr/0132).

- A tab opened (or reloaded) on B while A's turn streams shows the answer
  so far from its start, as a tab on A does, not only the tokens that
  arrive after it connected.
- Redis restarting mid-answer drops every socket; the tab on B, reconnected,
  shows the answer with no piece of it missing from the middle.
- Server A killed mid-answer and not started again (its host is gone): the
  tab on B shows the turn ended (interrupted, the answer so far kept) within
  the stale-claim window, and takes the next message.
"""

import re

import psycopg
import pytest
from playwright.sync_api import expect

from conversations.turns.outcome import INTERRUPTED_LOST
from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, new_thread_for, open_second_tab, two_servers, wait_for_socket

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.long_wait]

CHUNK = 1000


def _chunk(i: int) -> str:
    head = f"[chunk {i:04d}] "
    body = ("Long answer text about the quarterly report. " * 30)[: CHUNK - len(head) - 1]
    return head + body + " "


def _long_answer(chunks: int) -> str:
    return "".join(_chunk(i) for i in range(chunks))


def _chunk_numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[chunk (\d{4})\]", text)]


FIRST = "[chunk 0000]"


def _send(page, text: str) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def _answer(page, turn: int = 1):
    return page.get_by_role("region", name="Chat").locator(f"#turn-{turn}-answer-content")


def test_a_tab_opened_on_the_other_server_mid_answer_shows_the_answer_from_its_start(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url, model_server
):
    chunks = 150
    model_server.script([Reply(text=_long_answer(chunks), token_chars=CHUNK, token_delay=0.12)])
    server_a, server_b = two_servers(
        start_haico_server, model_server, database_url=migrated_postgres_database_url, redis_url=redis_url
    )
    tab_a = new_page()
    url_a = new_thread_for(tab_a, server_a.url, "ada")
    wait_for_socket(tab_a)
    _send(tab_a, "Write the long report")
    expect(_answer(tab_a)).to_contain_text("[chunk 0020]", timeout=TURN_WAIT_MS)

    # Opened on B mid-answer (the proxy sent this tab's connection there).
    tab_b = open_second_tab(tab_a, url_a.replace(server_a.url, server_b.url))
    expect(_answer(tab_b)).to_contain_text("[chunk 0060]", timeout=TURN_WAIT_MS)
    shown = _answer(tab_b).inner_text()
    assert f"[chunk {chunks - 1:04d}]" not in _answer(tab_a).inner_text(), "the answer ended before the check"
    numbers = _chunk_numbers(shown)
    assert numbers == list(range(len(numbers))), f"the tab on B shows chunks {numbers[:3]}..{numbers[-3:]}"

    # Once the turn ends, every tab has the whole answer.
    expect(tab_b.get_by_role("region", name="Chat").get_by_role("button", name="Send")).to_be_enabled(timeout=40_000)
    for tab in (tab_a, tab_b):
        assert _chunk_numbers(_answer(tab).inner_text()) == list(range(chunks))


def test_a_tab_reloaded_on_the_turns_own_server_mid_answer_shows_it_from_its_start(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url, model_server
):
    chunks = 150
    model_server.script([Reply(text=_long_answer(chunks), token_chars=CHUNK, token_delay=0.12)])
    server_a, _server_b = two_servers(
        start_haico_server, model_server, database_url=migrated_postgres_database_url, redis_url=redis_url
    )
    tab_a = new_page()
    new_thread_for(tab_a, server_a.url, "ada")
    wait_for_socket(tab_a)
    _send(tab_a, "Write the long report")
    expect(_answer(tab_a)).to_contain_text("[chunk 0020]", timeout=TURN_WAIT_MS)
    tab_a.reload()
    expect(_answer(tab_a)).to_contain_text("[chunk 0060]", timeout=TURN_WAIT_MS)
    shown = _answer(tab_a).inner_text()
    assert f"[chunk {chunks - 1:04d}]" not in shown
    numbers = _chunk_numbers(shown)
    assert numbers == list(range(len(numbers))), f"the reloaded tab shows chunks {numbers[:3]}..{numbers[-3:]}"


def test_redis_restarting_mid_answer_leaves_no_hole_in_the_answer_a_tab_shows(
    new_page, start_haico_server, migrated_postgres_database_url, private_redis, model_server
):
    chunks = 200
    model_server.script([Reply(text=_long_answer(chunks), token_chars=CHUNK, token_delay=0.1)])
    model_server.default_reply = Reply(text="The next answer.")
    server_a, server_b = two_servers(
        start_haico_server, model_server, database_url=migrated_postgres_database_url, redis_url=private_redis.url
    )
    tab_a = new_page()
    url_a = new_thread_for(tab_a, server_a.url, "ada")
    tab_b = open_second_tab(tab_a, url_a.replace(server_a.url, server_b.url))
    _send(tab_a, "Write the long report")
    tabs = {"A": tab_a, "B": tab_b}
    for tab in tabs.values():
        expect(_answer(tab)).to_contain_text("[chunk 0020]", timeout=TURN_WAIT_MS)

    private_redis.stop()
    # Long enough for the sockets to drop and try again (several chunks stream meanwhile).
    tab_a.wait_for_timeout(3000)
    private_redis.start()
    for tab in tabs.values():
        wait_for_socket(tab)
    # Mid-answer, after the reconnect: what each tab shows.
    shown = {}
    for name, tab in tabs.items():
        expect(_answer(tab)).to_contain_text("[chunk 0120]", timeout=TURN_WAIT_MS)
        shown[name] = _answer(tab).inner_text()
    assert f"[chunk {chunks - 1:04d}]" not in shown["A"], "the answer ended before the check; slow the stream down"

    # The end reaches every tab, whole, and the thread takes the next message.
    for tab in tabs.values():
        expect(tab.get_by_role("region", name="Chat").get_by_role("button", name="Send")).to_be_enabled(timeout=40_000)
        assert _chunk_numbers(_answer(tab).inner_text()) == list(range(chunks))
    _send(tab_b, "And a short one")
    for tab in tabs.values():
        expect(_answer(tab, 2)).to_have_text("The next answer.", timeout=TURN_WAIT_MS)

    # While the turn ran, after the reconnect: from its start, nothing missing from the middle, nothing twice.
    for name, text in shown.items():
        numbers = _chunk_numbers(text)
        assert numbers == list(range(len(numbers))), (
            f"tab on server {name}, mid-answer after Redis came back, shows chunks {numbers[:3]}..{numbers[-3:]}, "
            f"missing {sorted(set(range(max(numbers) + 1)) - set(numbers))[:5]}"
        )


def test_the_turns_server_killed_for_good_a_tab_on_the_other_server_sees_it_end_and_goes_on(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url, model_server
):
    model_server.script([Reply(text=_long_answer(150), token_chars=CHUNK, token_delay=0.1)])
    model_server.default_reply = Reply(text="Answered on B.")
    server_a, server_b = two_servers(
        start_haico_server, model_server, database_url=migrated_postgres_database_url, redis_url=redis_url
    )
    tab_a = new_page()
    url_a = new_thread_for(tab_a, server_a.url, "ada")
    tab_b = open_second_tab(tab_a, url_a.replace(server_a.url, server_b.url))
    _send(tab_a, "Write the long report")
    chat_b = tab_b.get_by_role("region", name="Chat")
    expect(_answer(tab_b)).to_contain_text("[chunk 0030]", timeout=TURN_WAIT_MS)
    tab_a.close()
    server_a.kill()
    shown_when_killed = _answer(tab_b).inner_text()
    # A tab opened on B now asks server A for the turn so far: nothing
    # answers, and nothing waits for it.
    url_b = url_a.replace(server_a.url, server_b.url)
    tab_c = open_second_tab(tab_b, url_b)
    wait_for_socket(tab_c)

    # Within the stale window (30 s) plus a recovery round (10 s) and slack.
    expect(chat_b.locator("#turn-1-marker")).to_contain_text(INTERRUPTED_LOST, timeout=60_000)
    expect(tab_c.locator("#turn-1-marker")).to_contain_text(INTERRUPTED_LOST, timeout=20_000)
    assert _answer(tab_c).inner_text().startswith(FIRST)
    expect(chat_b.get_by_role("button", name="Send")).to_be_enabled()
    expect(tab_b.locator("#chat-status")).to_have_attribute("data-state", "idle")
    kept = _answer(tab_b).inner_text()
    assert kept.startswith(FIRST), kept[:40]
    # What the tab showed is taken back by at most the last half second of
    # progress (stored twice a second, docs/adr/0011): five chunks at this
    # pace, with slack.
    assert len(kept) >= len(shown_when_killed) - 7 * CHUNK, (len(kept), len(shown_when_killed))

    _send(tab_b, "Carry on")
    expect(_answer(tab_b, 2)).to_have_text("Answered on B.", timeout=TURN_WAIT_MS)
    tab_b.reload()
    expect(chat_b.locator("#turn-1-marker")).to_contain_text(INTERRUPTED_LOST)
    expect(_answer(tab_b, 2)).to_have_text("Answered on B.")
    with psycopg.connect(migrated_postgres_database_url, connect_timeout=5) as conn:
        rows = conn.execute("SELECT index, status FROM conversations_turn ORDER BY index").fetchall()
    assert rows == [(1, "interrupted"), (2, "complete")]
