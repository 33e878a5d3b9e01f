"""The owner's JSON reads of the snapshots: the compact list and one full
snapshot as captured; nobody else sees either."""

import pytest
from django.conf import settings
from django.shortcuts import resolve_url

from conversations.turns.slot import turn_begin, turn_finish
from tests.support.web import ws_url
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_turns(thread):
    document_services.document_save(thread=thread, title="Notes", content="First draft 🌍\n")
    for message in ("hello", "and more"):
        index, _ = turn_begin(thread=thread, user_message=message)
        turn_finish(thread=thread, turn_index=index)
        objective_services.objective_set(thread=thread, text="Write the notes", author="agent")
        plan_services.todo_add(thread=thread, text="Outline")
    return thread


def test_the_owner_gets_the_compact_list_oldest_first(owner_client, two_turns):
    response = owner_client.get(ws_url(two_turns, "snapshots/"))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    rows = response.json()
    assert [(r["turn_index"], r["user_message"]) for r in rows] == [(1, "hello"), (2, "and more")]
    assert set(rows[0]) == {"id", "turn_index", "user_message", "captured_at"}
    assert rows[0]["captured_at"] <= rows[1]["captured_at"]


def test_the_owner_gets_one_snapshot_as_captured(owner_client, two_turns):
    first = owner_client.get(ws_url(two_turns, "snapshots/1/")).json()
    second = owner_client.get(ws_url(two_turns, "snapshots/2/")).json()
    assert (first["turn_index"], first["user_message"], first["objective_text"]) == (1, "hello", None)
    assert (first["document_title"], first["document_content"]) == ("Notes", "First draft 🌍\n")
    assert (first["preferences_json"], first["todos_json"]) == ([], [])
    assert second["objective_text"] == "Write the notes"
    assert second["todos_json"] == [{"text": "Outline", "done": False, "position": 0, "depth": 0}]
    assert second["id"] == owner_client.get(ws_url(two_turns, "snapshots/")).json()[1]["id"]


def test_a_turn_without_a_snapshot_is_404(owner_client, two_turns):
    assert owner_client.get(ws_url(two_turns, "snapshots/3/")).status_code == 404


def test_another_person_gets_404_and_an_anonymous_visitor_is_sent_to_log_in(client, other_user, two_turns):
    for suffix in ("snapshots/", "snapshots/1/"):
        anonymous = client.get(ws_url(two_turns, suffix))
        assert anonymous.status_code == 302 and anonymous["Location"].startswith(resolve_url(settings.LOGIN_URL) + "?next=")
    client.force_login(other_user)
    for suffix in ("snapshots/", "snapshots/1/"):
        response = client.get(ws_url(two_turns, suffix))
        assert response.status_code == 404 and "hello" not in response.content.decode()


def test_the_snapshots_refuse_writes(owner_client, two_turns):
    assert owner_client.post(ws_url(two_turns, "snapshots/")).status_code == 405
    assert owner_client.post(ws_url(two_turns, "snapshots/1/")).status_code == 405
