"""The thread's activity log (model warnings and turn errors) in the chat header."""

import pytest

from conversations.models import ActivityLogEntry
from conversations.services import activity_log

pytestmark = pytest.mark.django_db


def _url(thread):
    return f"/threads/{thread.pk}/activity/"


def test_owner_sees_warnings_and_errors_newest_first(owner_client, thread):
    activity_log(thread=thread, message="The model's reply was cut off; raise HAICO_MODEL_MAX_TOKENS.", level="warning", turn_index=2)
    activity_log(thread=thread, message="The model server could not be reached.", level=ActivityLogEntry.Level.ERROR, turn_index=3)
    response = owner_client.get(_url(thread), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("could not be reached") < html.index("raise HAICO_MODEL_MAX_TOKENS")
    assert "turn 3" in html and "Warning" in html and "Error" in html


def test_an_empty_log_says_so(owner_client, thread):
    response = owner_client.get(_url(thread))
    assert "no warnings or errors" in response.content.decode()


def test_the_workspace_page_offers_the_activity_log(owner_client, thread):
    html = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()
    assert "Activity log" in html and _url(thread) in html


def test_another_user_gets_404_and_sees_nothing(other_client, thread):
    activity_log(thread=thread, message="secret warning", level="warning")
    response = other_client.get(_url(thread))
    assert response.status_code == 404
    assert b"secret warning" not in response.content


def test_anonymous_is_sent_to_login(client, thread):
    response = client.get(_url(thread))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_post_is_not_allowed(owner_client, thread):
    assert owner_client.post(_url(thread)).status_code == 405
