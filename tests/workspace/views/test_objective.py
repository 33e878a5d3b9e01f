"""Objective panel: inline edit, standing objective, history popover."""

import pytest

from conversations.services import thread_soft_delete
from conversations.turns.slot import turn_begin, turn_finish
from tests.support.web import HTMX, answered_as_missing, ws_url
from workspace.models import Objective, ObjectiveRevision
from workspace.selectors import STANDING_OBJECTIVE
from workspace.services import objective as objective_services

pytestmark = pytest.mark.django_db


def test_objective_panel_shows_standing_objective_until_one_is_set(owner_client, thread):
    response = owner_client.get(ws_url(thread, "objective/"), **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="panel-objective"' in html
    # The standing objective is the agent's instruction; the person is told what to do instead.
    assert "No objective yet" in html
    assert STANDING_OBJECTIVE not in html


def test_set_objective_persists_and_returns_the_panel(owner_client, thread):
    response = owner_client.post(ws_url(thread, "objective/edit/"), {"text": "Compare three survey designs"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert Objective.objects.get(thread=thread).text == "Compare three survey designs"
    assert 'id="panel-objective"' in html
    assert "Compare three survey designs" in html
    assert "No objective yet" not in html
    # The page after a reload shows the same value.
    assert "Compare three survey designs" in owner_client.get(ws_url(thread)).content.decode()


def test_the_persons_edit_is_recorded_as_theirs(owner_client, thread):
    owner_client.post(ws_url(thread, "objective/edit/"), {"text": "Mine"}, **HTMX)
    assert list(ObjectiveRevision.objects.filter(thread=thread).values_list("text", "author")) == [("Mine", "person")]


def test_set_objective_without_htmx_redirects_to_page(owner_client, thread):
    response = owner_client.post(ws_url(thread, "objective/edit/"), {"text": "Plain form"})
    assert response.status_code == 302
    assert response["Location"] == ws_url(thread)
    assert Objective.objects.get(thread=thread).text == "Plain form"


@pytest.mark.parametrize(
    "text, message",
    [
        ("   ", "Objective cannot be empty."),
        ("y" * 1001, "Objective is too long (1,001 characters; the limit is 1,000)."),
    ],
)
def test_bad_objective_shows_error_keeps_input_and_changes_nothing(owner_client, thread, text, message):
    objective_services.objective_set(thread=thread, text="Keep me")

    response = owner_client.post(ws_url(thread, "objective/edit/"), {"text": text}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert 'role="alert"' in html
    assert message in html
    assert Objective.objects.get(thread=thread).text == "Keep me"
    if text.strip():
        assert text in html  # the person's input is still in the textbox


def test_bad_objective_without_htmx_is_400(owner_client, thread):
    response = owner_client.post(ws_url(thread, "objective/edit/"), {"text": ""})
    assert response.status_code == 400
    assert not Objective.objects.filter(thread=thread).exists()


def test_objective_edit_refuses_get(owner_client, thread):
    assert owner_client.get(ws_url(thread, "objective/edit/")).status_code == 405


def test_objective_history_refuses_post(owner_client, thread):
    assert owner_client.post(ws_url(thread, "objective/history/")).status_code == 405


def test_objective_edit_of_another_users_thread_is_404(other_client, thread):
    response = other_client.post(ws_url(thread, "objective/edit/"), {"text": "Mine now"}, **HTMX)
    assert answered_as_missing(response)
    assert not Objective.objects.filter(thread=thread).exists()


@pytest.mark.parametrize("suffix", ["objective/", "objective/history/"])
def test_objective_reads_of_another_users_thread_are_404(other_client, thread, suffix):
    assert answered_as_missing(other_client.get(ws_url(thread, suffix), **HTMX))


def test_objective_edit_requires_login(client, thread):
    response = client.post(ws_url(thread, "objective/edit/"), {"text": "Anon"})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert not Objective.objects.filter(thread=thread).exists()


def test_objective_edit_of_deleted_thread_is_404(owner_client, thread):
    thread_soft_delete(thread=thread)
    assert owner_client.post(ws_url(thread, "objective/edit/"), {"text": "x"}).status_code == 404


def test_objective_history_lists_each_change_with_who_made_it_newest_first(owner_client, thread):
    # Turn 1: the agent sets it; the person edits it; turn 2 starts (no change); the agent sharpens it.
    index, _ = turn_begin(thread=thread, user_message="hello")
    objective_services.objective_set(thread=thread, text="First objective", author="agent")
    turn_finish(thread=thread, turn_index=index)
    owner_client.post(ws_url(thread, "objective/edit/"), {"text": "My own objective"}, **HTMX)
    index, _ = turn_begin(thread=thread, user_message="more")
    objective_services.objective_set(thread=thread, text="Sharper objective", author="agent")
    turn_finish(thread=thread, turn_index=index)

    response = owner_client.get(ws_url(thread, "objective/history/"), **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    order = [html.index(text) for text in ("Now", "Sharper objective", "My own objective", "First objective", "No objective yet")]
    assert order == sorted(order)
    assert html.count("Sharper objective") == 1  # the live value is not listed a second time
    assert "Set by the agent during turn 2" in html
    assert "Edited by owner after turn 1" in html
    assert "Set by the agent during turn 1" in html


def test_objective_history_with_no_changes_says_so(owner_client, thread):
    index, _ = turn_begin(thread=thread, user_message="hello")
    turn_finish(thread=thread, turn_index=index)
    html = owner_client.get(ws_url(thread, "objective/history/"), **HTMX).content.decode()
    assert "No earlier values yet" in html
    assert "No objective yet" in html and STANDING_OBJECTIVE not in html
    assert "Turn 1" not in html


def test_an_objective_change_pushes_only_its_read_view(thread):
    from workspace.panels import render_objective_patch

    objective_services.objective_set(thread=thread, text="Pushed")
    html = render_objective_patch(thread=thread)
    # innerHTML of the read view only: an open edit form next to it is left alone.
    assert html.startswith('<div hx-swap-oob="innerHTML:#objective-view">')
    assert "Pushed" in html and "<form" not in html and "<textarea" not in html
