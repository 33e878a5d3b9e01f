"""A server killed with SIGKILL mid-turn (a crash, the OOM killer), then
started again on the same address: the thread is usable at once, the person
sees what happened, and nothing they were shown is lost.

Killed during an answer: the answer streamed so far stays, marked
"Interrupted: the server restarted", with Retry. Killed during a tool step:
the agent's history holds a tool call without a result, which a provider
refuses forever (the test model server answers such a history with HTTP
400, as OpenAI does); the next message works at once all the same."""

import json
import threading
import time

import pytest
from playwright.sync_api import expect

from conversations.turns.outcome import INTERRUPTED_RESTART
from tests.support import openai_server
from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import Misbehave

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, wait_for_socket

LONG_ANSWER = " ".join(f"word{i}" for i in range(1, 61))


def _send(page, text: str) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def test_killed_during_an_answer_the_answer_so_far_stays_and_retry_reruns_it(page, start_haico_server, model_server):
    model_server.script([Reply(text=LONG_ANSWER, token_delay=0.15), Reply(text="The retried answer.")])
    server = start_haico_server(model_env(model_server))
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    _send(page, "Write the summary")
    answer = chat.locator("#turn-1-answer-content")
    expect(answer).to_contain_text("word8", timeout=TURN_WAIT_MS)
    time.sleep(1.2)  # the answer so far is stored twice a second
    server.kill()
    server.start()

    # The open tab reconnects and learns the turn ended, without a reload.
    marker = chat.locator("#turn-1-marker")
    expect(marker).to_contain_text(INTERRUPTED_RESTART, timeout=TURN_WAIT_MS)
    expect(answer).to_contain_text("word1 word2 word3")
    expect(chat.get_by_role("button", name="Send")).to_be_enabled()

    page.reload()
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator("#turn-1-answer-content")).to_contain_text("word1 word2 word3")
    expect(chat.locator("#turn-1-marker")).to_contain_text(INTERRUPTED_RESTART)
    wait_for_socket(page)
    chat.get_by_role("button", name="Retry turn 1").click()

    # The same message runs again as turn 2, without retyping.
    expect(chat.locator("#turn-2-answer-content")).to_have_text("The retried answer.", timeout=TURN_WAIT_MS)
    expect(chat.locator("#turn-2 .bubble-user")).to_contain_text("Write the summary")
    expect(chat.get_by_role("button", name="Retry turn 1")).to_have_count(0)
    # The answer streams before the turn's end is stored; the page goes idle after it is.
    expect(page.locator("#chat-status")).to_have_attribute("data-state", "idle", timeout=TURN_WAIT_MS)
    rows = server.query("SELECT [index], user_message, status, retry_of FROM conversations_turn ORDER BY [index]")
    assert rows == [(1, "Write the summary", "interrupted", None), (2, "Write the summary", "complete", 1)]


REPORT = " ".join(f"paragraph{i} " + "lorem ipsum dolor sit amet " * 4 for i in range(1, 121))


def test_killed_during_an_answer_the_call_streaming_is_still_counted(page, start_haico_server, model_server):
    """A long answer streamed for seconds (paid at the provider) and the
    server killed (the OOM killer on a big answer, a crash): the call's
    usage was stored as it streamed (docs/adr/0063), so the person's usage
    page and limit see it, with the answer so far."""
    model_server.script([Reply(text=REPORT, token_delay=0.03), Reply(text="After the restart.")])
    server = start_haico_server(model_env(model_server))
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    _send(page, "Write the long report")
    # About 10 s of tokens on a quiet machine; a busy one streams slower.
    expect(chat.locator("#turn-1-answer-content")).to_contain_text("paragraph8", timeout=3 * TURN_WAIT_MS)
    time.sleep(1.5)  # the answer so far, and the call's usage, are stored twice a second
    server.kill()
    kept = server.query("SELECT answer FROM conversations_turn WHERE [index] = 1")[0][0] or ""
    assert "paragraph5" in kept
    server.start()
    _assert_first_turn_interrupted(server)
    rows = server.query("SELECT input_tokens, output_tokens, estimated FROM conversations_modelusage")
    assert len(rows) == 1, rows
    [(sent, streamed, estimated)] = rows
    assert estimated and sent > 0
    assert len(kept) // 8 <= streamed <= len(REPORT) // 4


def _assert_first_turn_interrupted(server) -> None:
    """The restarted server ends the turn it was running as interrupted (within 20 s)."""
    for _ in range(100):
        if server.query("SELECT status FROM conversations_turn WHERE [index] = 1")[0][0] != "running":
            break
        time.sleep(0.2)
    assert server.query("SELECT status FROM conversations_turn WHERE [index] = 1")[0][0] == "interrupted"


def _kill_once_answered(monkeypatch, server) -> threading.Event:
    """SIGKILL the HAICO server the moment the model server has written the
    last byte of its first streamed answer (before HAICO can store it)."""
    killed = threading.Event()
    real = openai_server._Handler._stream

    def stream(handler, *args, **kwargs):
        real(handler, *args, **kwargs)
        if not killed.is_set():
            server.kill()
            killed.set()

    monkeypatch.setattr(openai_server._Handler, "_stream", stream)
    return killed


def test_killed_right_after_a_call_slow_to_its_first_token_the_call_is_counted(
    page, start_haico_server, model_server, monkeypatch
):
    """A call with a big prompt (paid at the provider) that took its time
    before its first token, then answered in a moment, and the server
    killed as the answer arrived: its request's estimate was stored at the
    turn watcher's first round after it started (docs/adr/0154), so the
    person's usage page and limit see it, once."""
    reply = Reply(
        text="Recording it.",
        tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship the report")],
        usage={"prompt_tokens": 30_000, "completion_tokens": 40},
    )
    model_server.script([Misbehave(reply=reply, pause_after_tokens=0, pause_seconds=1.5), Reply(text="After the restart.")])
    server = start_haico_server(model_env(model_server))
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    killed = _kill_once_answered(monkeypatch, server)
    _send(page, "Record the goal")
    assert killed.wait(TURN_WAIT_MS / 1000), "the model was never asked"
    server.start()
    _assert_first_turn_interrupted(server)
    rows = server.query("SELECT input_tokens, estimated FROM conversations_modelusage")
    assert len(rows) == 1, rows
    [(sent, estimated)] = rows
    assert estimated and sent > 0
    page.goto(f"{server.url}/accounts/usage/")
    expect(page.locator('tr[data-usage="today"]')).not_to_have_attribute("data-tokens", "0")


@pytest.mark.postgres
def _wait_for_a_write_waiting_on_a_lock(database_url: str, timeout: float = TURN_WAIT_MS / 1000) -> None:
    """Until a backend of the database waits on a lock, or fail after
    `timeout` seconds. Its own connection, in autocommit: a transaction sees
    pg_stat_activity as it was at its first read."""
    import psycopg

    query = "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
    deadline = time.monotonic() + timeout
    with psycopg.connect(database_url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        while conn.execute(query).fetchone() is None:
            assert time.monotonic() < deadline, "the tool's write never waited on the thread's row"
            time.sleep(0.05)


def test_killed_during_a_tool_step_the_thread_works_again_at_once(
    page, start_haico_server, migrated_postgres_database_url, model_server
):
    """PostgreSQL, so the tool step can be held in place: the test locks the
    thread's row (the tool's write waits on it) while the checkpoint tables
    stay free, so the model's tool call is checkpointed and its result never
    is, exactly what a kill mid-step leaves."""
    import psycopg

    lock = {}

    def tool_call_then_hold(body):
        conn = psycopg.connect(migrated_postgres_database_url.replace("postgres://", "postgresql://", 1))
        conn.execute("SELECT id FROM conversations_thread FOR UPDATE")
        lock["conn"] = conn
        return Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship the report")])

    model_server.script([tool_call_then_hold, Reply(text="Back to work.")])
    server = start_haico_server(model_env(model_server), database_url=migrated_postgres_database_url)
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    _send(page, "Record the goal")
    reasoning = chat.get_by_role("group", name="Internal reasoning")
    expect(reasoning).to_contain_text("Writing down the goal.", timeout=TURN_WAIT_MS)
    # The kill must come once the tool's write waits on the row lock: the line
    # above shows as the model streams the call, before its step is stored.
    _wait_for_a_write_waiting_on_a_lock(migrated_postgres_database_url)
    server.kill()
    lock["conn"].rollback()
    lock["conn"].close()
    server.start()

    expect(chat.locator("#turn-1-marker")).to_contain_text(INTERRUPTED_RESTART, timeout=TURN_WAIT_MS)
    wait_for_socket(page)
    _send(page, "Carry on")
    expect(chat.locator("#turn-2-answer-content")).to_have_text("Back to work.", timeout=TURN_WAIT_MS)

    # The model was sent a valid history: the killed call has a result,
    # saying its effect is unknown (the test server would answer 400).
    messages = model_server.requests[-1]["messages"]
    [killed_call] = [call for m in messages if m["role"] == "assistant" for call in m.get("tool_calls") or []]
    [result] = [m for m in messages if m["role"] == "tool" and m["tool_call_id"] == killed_call["id"]]
    assert "did not finish" in result["content"] and json.loads(result["content"])["success"] is False
    # The tool never committed: no half-done workspace.
    planning = page.get_by_role("region", name="Planning")
    expect(planning).not_to_contain_text("Ship the report")
