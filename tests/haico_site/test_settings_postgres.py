"""The app on PostgreSQL: migrations apply and a thread, its workspace and a
turn snapshot round-trip through the services, written by one process and
read back by another (each `manage.py` run is its own connection)."""

import json
import os
from pathlib import Path

import pytest

from tests.support.forked_python import FORKER

pytestmark = pytest.mark.postgres

BASE_DIR = Path(__file__).resolve().parents[2]

WRITE = """
import json
from django.contrib.auth import get_user_model
from conversations.services import thread_create
from conversations.turns.slot import turn_begin, turn_finish
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

owner = get_user_model().objects.create_user(username="pg-owner", password="a-long-enough-password")
thread = thread_create(owner=owner, title="On Postgres")
objective_services.objective_set(thread=thread, text="Compare Q1 and Q2 revenue")
preferences_services.preference_add(thread=thread, title="Cite every figure", kind="hard", respect_lock=False)
preferences_services.preference_add(thread=thread, title="Short sentences", kind="soft", respect_lock=False)
step = plan_services.todo_add(thread=thread, text="Collect the figures")
plan_services.todo_add(thread=thread, text="Q1", parent=step)
document_services.document_save(thread=thread, title="Report", content="Revenue grew \u2014 a lot.")
turn_index, _ = turn_begin(thread=thread, user_message="chart Q1 vs Q2 revenue: 120, 180")
turn_finish(thread=thread, turn_index=turn_index)
print(json.dumps({"thread": str(thread.pk), "turn": turn_index}))
"""

READ = """
import json, os
from conversations.models import TurnSlot
from workspace.models import Thread
from workspace import selectors
from workspace.models import WorkspaceSnapshot

thread = Thread.objects.get(pk=os.environ["HAICO_CHECK_THREAD"])
snapshot = WorkspaceSnapshot.objects.get(thread=thread, turn_index=int(os.environ["HAICO_CHECK_TURN"]))
reading = selectors.workspace_reading_for(thread=thread)
print(json.dumps({
    "title": thread.title,
    "turn_index": thread.turn_index,
    "running": TurnSlot.objects.filter(thread=thread).values_list("turn_index", flat=True).first(),
    "user_message": snapshot.user_message,
    "objective": snapshot.objective_text,
    "document": [snapshot.document_title, snapshot.document_content],
    "preferences": snapshot.preferences_json,
    "todos": snapshot.todos_json,
    # The prompt's read of the workspace, by name, as PostgreSQL returns it.
    "reading": {
        "preferences": [[p.kind, p.title, p.locked] for p in reading.preferences],
        "todos": [[t.text, t.done, t.depth, t.number] for t in reading.todos],
        "document_version": reading.document.version,
        "updated_at_is_aware": reading.document.updated_at.tzinfo is not None,
    },
}))
"""


def _manage(database_url: str, *args: str, extra_env: dict | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HAICO_TEST_DB"))}
    env.update({"DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "haico_site.settings", **(extra_env or {})})
    env.pop("REDIS_URL", None)
    # Forked from the tests' warm process (docs/adr/0082): a new process
    # with its own connection and settings, without importing LangChain again.
    proc = FORKER.run(["manage.py", *args], env=env, cwd=BASE_DIR, timeout=180)
    assert proc.returncode == 0, f"manage.py {args[0]} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.mark.heavy  # migrates a database from empty
def test_migrations_apply_and_a_turn_snapshot_round_trips_on_postgres(postgres_database_url):
    _manage(postgres_database_url, "migrate", "--noinput")
    _manage(postgres_database_url, "check", "--database", "default")
    assert "No changes detected" in _manage(postgres_database_url, "makemigrations", "--check", "--dry-run")

    written = json.loads(_manage(postgres_database_url, "shell", "-c", WRITE).strip().splitlines()[-1])
    read = json.loads(
        _manage(
            postgres_database_url,
            "shell",
            "-c",
            READ,
            extra_env={"HAICO_CHECK_THREAD": written["thread"], "HAICO_CHECK_TURN": str(written["turn"])},
        )
        .strip()
        .splitlines()[-1]
    )

    assert written["turn"] == 1
    assert read["turn_index"] == 1
    assert read["running"] is None
    # An explicitly titled thread keeps its title on the first message.
    assert read["title"] == "On Postgres"
    assert read["user_message"] == "chart Q1 vs Q2 revenue: 120, 180"
    assert read["objective"] == "Compare Q1 and Q2 revenue"
    assert read["document"] == ["Report", "Revenue grew \u2014 a lot."]
    assert [p["title"] for p in read["preferences"]] == ["Cite every figure", "Short sentences"]
    assert [t["text"] for t in read["todos"]] == ["Collect the figures", "Q1"]
    assert read["reading"] == {
        "preferences": [["hard", "Cite every figure", False], ["soft", "Short sentences", False]],
        "todos": [["Collect the figures", False, 0, "1"], ["Q1", False, 1, "1.1"]],
        "document_version": 1,
        "updated_at_is_aware": True,
    }
