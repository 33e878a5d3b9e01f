"""Backups as README says to make and restore them (docs/adr/0060), taken
while the server runs and restored into a fresh database: the owner signs in
on a server started on the restored database, sees the thread's workspace
and transcript, and runs a new turn whose model request carries the first
turn's conversation (the agent's checkpoints came along).

SQLite: `manage.py backup` (the sqlite3 backup API) and the copy put in
place of the database file. PostgreSQL: the real pg_dump -Fc, then
pg_restore into a new database."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import Page, expect
from psycopg import sql

from tests.support.fake_model import Reply, tool_call

from .helpers import TURN_WAIT_MS, log_in, model_env, new_thread_for, wait_for_socket

FIRST = "Plan my essay on tides"
FIRST_ANSWER = "Three steps, to start with."
SECOND = "What was the first step again?"
SECOND_ANSWER = "Outline the argument, as we said."


@pytest.fixture
def model_server(model_server):
    model_server.script(
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "add_todos",
                        "Planning the essay.",
                        steps=[{"text": "Outline the argument"}, {"text": "Write the draft"}, {"text": "Revise"}],
                    )
                ]
            ),
            Reply(text=FIRST_ANSWER),
            Reply(text=SECOND_ANSWER),
        ]
    )
    return model_server


def send(page: Page, text: str) -> None:
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def first_turn(page: Page, url: str) -> str:
    thread_url = new_thread_for(page, url, "ada")
    wait_for_socket(page)
    send(page, FIRST)
    expect(page.locator("#chat-messages .answer").first).to_have_text(FIRST_ANSWER, timeout=TURN_WAIT_MS)
    return thread_url


def restored_thread_carries_on(page: Page, url: str, thread_path: str, model_server) -> None:
    log_in(page, url, "ada")
    page.goto(url + thread_path)
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator(".bubble-text", has_text=FIRST)).to_be_visible()
    expect(chat.locator("#chat-messages .answer").first).to_have_text(FIRST_ANSWER)
    expect(page.get_by_role("region", name="Planning")).to_contain_text("Outline the argument")
    wait_for_socket(page)
    send(page, SECOND)
    expect(chat.locator("#chat-messages .answer").nth(1)).to_have_text(SECOND_ANSWER, timeout=TURN_WAIT_MS)
    # The new turn's model request holds the first turn, from the restored checkpoints.
    contents = [str(m.get("content")) for m in model_server.requests[-1]["messages"]]
    assert any(FIRST in c for c in contents) and any(FIRST_ANSWER in c for c in contents), contents


def test_an_sqlite_backup_taken_while_serving_restores_a_thread_that_carries_on(
    new_page, start_haico_server, model_server, tmp_path
):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    thread_url = first_turn(page, server.url)
    backup = tmp_path / "backup.sqlite3"
    output = server.manage("backup", str(backup))  # the server is still running
    assert f"Backed up the database to {backup}" in output
    page.close()

    # A fresh server whose database file is the backup.
    restored = start_haico_server(model_env(model_server))
    restored.stop()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{restored.db_path}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(backup, restored.db_path)
    restored.start()
    restored_thread_carries_on(new_page(), restored.url, thread_url.removeprefix(server.url), model_server)


def test_a_backup_never_overwrites_a_file(haico_server, tmp_path):
    existing = tmp_path / "there.sqlite3"
    existing.write_text("keep me")
    with pytest.raises(RuntimeError, match="exists already"):
        haico_server.manage("backup", str(existing))
    assert existing.read_text() == "keep me"


@pytest.mark.postgres
def test_a_pg_dump_restored_with_pg_restore_into_a_fresh_database_carries_on(
    new_page, start_haico_server, model_server, migrated_postgres_database_url, tmp_path
):
    if not (shutil.which("pg_dump") and shutil.which("pg_restore")):
        pytest.skip("pg_dump / pg_restore are not installed")
    server = start_haico_server(model_env(model_server), database_url=migrated_postgres_database_url)
    page = new_page()
    thread_url = first_turn(page, server.url)
    dump = tmp_path / "haico.dump"
    # As README says, while the server runs.
    subprocess.run(
        ["pg_dump", "-Fc", "--no-owner", "-f", str(dump), "-d", migrated_postgres_database_url], check=True, timeout=120
    )
    page.close()
    server.stop()

    base = migrated_postgres_database_url.rsplit("/", 1)[0]
    fresh = f"haico_restored_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(fresh)))
    try:
        subprocess.run(["pg_restore", "--no-owner", "-d", f"{base}/{fresh}", str(dump)], check=True, timeout=120)
        restored = start_haico_server(model_env(model_server), database_url=f"{base}/{fresh}")
        restored_thread_carries_on(new_page(), restored.url, thread_url.removeprefix(server.url), model_server)
        restored.stop()
    finally:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(fresh)))
