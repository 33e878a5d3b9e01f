"""workspace/live/: the whole workspace as patches, what a page asks for after
its socket was down or a push too big for it; the centre comes too when the
page lists fewer artifacts than the thread has."""

import pytest
from django.urls import reverse

from workspace.services.artifacts import artifact_create

pytestmark = pytest.mark.django_db

TABLE = {"columns": ["Quarter", "Revenue"], "rows": [["Q1", 120], ["Q2", 180]]}


def _state(client, thread, **params):
    return client.get(reverse("workspace:live", kwargs={"thread_id": thread.pk}), params)


def _table(thread, title):
    return artifact_create(thread=thread, artifact_type="data_table", title=title, payload=TABLE, turn_index=1)


def test_a_page_behind_on_artifacts_gets_the_centre_showing_the_newest(owner_client, thread):
    first = _table(thread, "Revenue")
    newest = _table(thread, "Revenue by quarter")

    body = _state(owner_client, thread, artifacts_through=first.pk).content.decode()

    assert 'id="panel-centre"' in body and f'data-artifact-id="{newest.pk}"' in body
    assert "The agent made “Revenue by quarter” and shows it here." in body
    assert 'id="doc-review-title"' in body  # the document's patch is still there, before it


def test_a_page_that_lists_every_artifact_gets_no_centre(owner_client, thread):
    newest = _table(thread, "Revenue")
    assert 'id="panel-centre"' not in _state(owner_client, thread, artifacts_through=newest.pk).content.decode()


@pytest.mark.parametrize("through", [None, "", "-1", "seven", "1e3"])
def test_without_a_whole_number_the_answer_is_the_workspace_without_the_centre(owner_client, thread, through):
    _table(thread, "Revenue")
    params = {} if through is None else {"artifacts_through": through}
    response = _state(owner_client, thread, **params)
    assert response.status_code == 200
    assert 'id="panel-centre"' not in response.content.decode()


def test_another_persons_page_gets_not_found(client, other_user, thread):
    _table(thread, "Revenue")
    client.force_login(other_user)
    assert _state(client, thread, artifacts_through=0).status_code == 404
