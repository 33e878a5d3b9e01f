"""A stale tab acting on a row another tab deleted (workspace.views.common.gone):
a short message in the panel and the panel's rows as stored, so the page
drops the stale row; never an error page, with DEBUG on or off. Nothing
changes in the database."""

import pytest

from tests.support.patches import read_patches
from tests.support.web import HTMX, ws_url
from workspace.models import Preference, Todo
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db


def _kinds(html):
    return {patch.kind: patch for patch in read_patches(html)}


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "action, data",
    [
        ("edit", {"text": "Renamed"}),
        ("done", {"done": "1"}),
        ("delete", {}),
        ("add", {"text": "Child"}),
        ("move", {"direction": "up"}),
    ],
)
def test_acting_on_a_step_deleted_in_another_tab_shows_a_message_and_the_plan_as_stored(
    owner_client, thread, settings, debug, action, data
):
    settings.DEBUG = debug
    kept = plan_services.todo_add(thread=thread, text="Kept")
    stale = plan_services.todo_add(thread=thread, text="Deleted elsewhere")
    plan_services.todo_delete(todo=stale)

    response = owner_client.post(ws_url(thread, f"plan/{stale.pk}/{action}/"), data, **HTMX)

    assert response.status_code == 200
    patches = _kinds(response.content.decode())
    assert patches["error"].attrs["data-panel"] == "plan"
    assert "That step no longer exists" in patches["error"].text
    refreshed = patches["plan"]
    assert refreshed.attrs.get("data-complete") == "1"  # the page drops rows not in it
    assert [row.text for row in refreshed.rows] == ["Kept"]
    assert list(Todo.objects.filter(thread=thread).values_list("pk", "text", "done")) == [(kept.pk, "Kept", False)]


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("action, data", [("edit", {"title": "Renamed"}), ("lock", {"locked": "1"}), ("delete", {})])
def test_acting_on_a_preference_deleted_in_another_tab_shows_a_message_and_the_list_as_stored(
    owner_client, thread, settings, debug, action, data
):
    settings.DEBUG = debug
    preference_services.preference_add(thread=thread, title="Kept", respect_lock=False)
    stale = preference_services.preference_add(thread=thread, title="Deleted elsewhere", respect_lock=False)
    stale_pk = stale.pk  # delete() clears it on the instance
    preference_services.preference_delete(preference=stale, respect_lock=False)

    response = owner_client.post(ws_url(thread, f"preferences/{stale_pk}/{action}/"), data, **HTMX)

    assert response.status_code == 200
    patches = _kinds(response.content.decode())
    assert "That preference no longer exists" in patches["error"].text
    assert patches["preferences"].attrs.get("data-complete") == "1"
    assert [row.text for row in patches["preferences"].rows] == ["Kept"]
    assert list(Preference.objects.filter(thread=thread).values_list("title", "locked")) == [("Kept", False)]


def test_without_htmx_a_deleted_step_is_a_404(owner_client, thread):
    stale = plan_services.todo_add(thread=thread, text="Deleted elsewhere")
    plan_services.todo_delete(todo=stale)
    assert owner_client.post(ws_url(thread, f"plan/{stale.pk}/done/"), {"done": "1"}).status_code == 404
