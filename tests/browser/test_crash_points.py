"""A real server killed (SIGKILL, as a crash) at the exact moment between
two writes that are not in one transaction, then started again: what the
person finds, and what the cleanup removes (docs/adr/0045). The moment is a
crash point (conversations.faults) named by HAICO_CRASH_AT.

- A Regenerate killed after its branch was made and before its turn began:
  no branch with only the shared turns is ever listed, the half-made one is
  removed, and trying again makes exactly one branch, which runs the turn.
- An archive import killed after it wrote the checkpointer history and
  before its rows: nothing is listed, the hidden thread and its history are removed,
  and importing again works."""

import signal
import time
import uuid

from playwright.sync_api import expect

from tests.support.fake_model import Reply

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, thread_id_from, wait_for_socket

# The servers here take a half-made thing for abandoned after a second (a
# real server: five minutes); their cleanup runs every 10 s.
CLEANUP_WAIT_SECONDS = 45


def _env(model_server, crash_at: str) -> dict:
    return model_env(model_server, HAICO_CRASH_AT=crash_at, HAICO_ABANDONED_AFTER_SECONDS="1")


def _send(page, text: str, turn: int, answer: str) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(f"#turn-{turn}-answer-content")).to_have_text(answer, timeout=TURN_WAIT_MS)


def _killed(server) -> None:
    deadline = time.monotonic() + 20
    while server.process.poll() is None:
        assert time.monotonic() < deadline, "the server did not reach its crash point"
        time.sleep(0.1)
    assert server.process.returncode == -signal.SIGKILL


def _restart_without_crash_point(server) -> None:
    server.env.pop("HAICO_CRASH_AT")
    server.start()


def _thread_ids(server) -> set[uuid.UUID]:
    return {uuid.UUID(str(row[0])) for row in server.query("SELECT id FROM conversations_thread")}


def _history_ids(server) -> set[uuid.UUID]:
    return {uuid.UUID(row[0]) for row in server.query("SELECT DISTINCT thread_id FROM checkpoints")}


def _eventually(condition, what: str) -> None:
    deadline = time.monotonic() + CLEANUP_WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def _listed(page, base_url: str):
    page.goto(f"{base_url}/threads/")
    return page.get_by_role("list", name="Threads").get_by_role("listitem")


def test_a_regenerate_killed_before_its_turn_began_leaves_no_branch_and_trying_again_makes_one(
    page, start_haico_server, model_server
):
    model_server.script([Reply(text="Answer one."), Reply(text="Answer two.")])
    model_server.default_reply = Reply(text="A regenerated answer.")
    server = start_haico_server(_env(model_server, "branch-made"))
    url = new_thread_for(page, server.url, "ada")
    source = uuid.UUID(thread_id_from(url))
    wait_for_socket(page)
    _send(page, "first message", 1, "Answer one.")
    _send(page, "second message", 2, "Answer two.")

    page.get_by_role("region", name="Chat").get_by_role("button", name="Regenerate turn 2").click()
    _killed(server)
    # What it left: a hidden, pending branch with its seeded history.
    [(half_made, status)] = server.query("SELECT thread_id, status FROM conversations_branchlink")
    half_made = uuid.UUID(str(half_made))
    assert status == "pending" and half_made in _history_ids(server)

    _restart_without_crash_point(server)
    threads = _listed(page, server.url)
    expect(threads).to_have_count(1)  # the source alone: no branch with only its turns
    expect(threads.first).not_to_have_class("thread-row is-branch")
    page.goto(url)
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator("#turn-2-answer-content")).to_have_text("Answer two.")
    # Nothing offers a second version: the half-made branch is nobody's version.
    expect(chat.get_by_role("navigation", name="Versions of turn 2")).to_have_count(0)

    _eventually(lambda: half_made not in _thread_ids(server) | _history_ids(server), "the half-made branch was never removed")
    assert server.query("SELECT count(*) FROM conversations_branchlink") == [(0,)]

    # Trying again: one branch, running the turn.
    wait_for_socket(page)
    chat.get_by_role("button", name="Regenerate turn 2").click()
    expect(page).not_to_have_url(url, timeout=TURN_WAIT_MS)
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator("#turn-2-answer-content")).to_have_text("A regenerated answer.", timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("navigation", name="Versions of turn 2")).to_contain_text("2/2")
    [(branch, status)] = server.query("SELECT thread_id, status FROM conversations_branchlink")
    assert status == "active" and uuid.UUID(str(branch)) == uuid.UUID(thread_id_from(page.url.split("#")[0]))
    assert _thread_ids(server) == {source, uuid.UUID(str(branch))}
    expect(_listed(page, server.url)).to_have_count(2)


def test_an_import_killed_after_writing_its_history_leaves_nothing_and_importing_again_works(
    page, start_haico_server, model_server
):
    model_server.default_reply = Reply(text="An answer to export.")
    server = start_haico_server(_env(model_server, "import-history-written"))
    url = new_thread_for(page, server.url, "ada")
    source = uuid.UUID(thread_id_from(url))
    wait_for_socket(page)
    _send(page, "a message worth keeping", 1, "An answer to export.")
    archive = page.request.get(f"{server.url}/threads/{source}/export/").body()
    assert b"a message worth keeping" in archive

    def import_it():
        page.goto(f"{server.url}/threads/")
        page.wait_for_load_state("load")
        # Choosing the file sends it (static/js/workspace.js).
        page.get_by_label("Import a thread archive").set_input_files(
            {"name": "thread.json", "mimeType": "application/json", "buffer": archive}
        )

    import_it()
    _killed(server)
    # The import's thread is there, hidden (never listed), with its history.
    [half_imported] = _thread_ids(server) - {source}
    assert half_imported in _history_ids(server)

    _restart_without_crash_point(server)
    expect(_listed(page, server.url)).to_have_count(1)
    _eventually(
        lambda: half_imported not in _thread_ids(server) | _history_ids(server),
        "the half-made import was never removed",
    )
    assert _thread_ids(server) == {source}
    assert source in _history_ids(server)  # the thread's own history stays

    import_it()
    expect(page.get_by_role("region", name="Chat").locator("#turn-1-answer-content")).to_have_text("An answer to export.")
    imported = uuid.UUID(thread_id_from(page.url.split("#")[0]))
    assert _thread_ids(server) == {source, imported}
    expect(_listed(page, server.url)).to_have_count(2)
    assert _history_ids(server) == {source, imported}
