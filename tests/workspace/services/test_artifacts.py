"""workspace.services.artifacts: what is stored, and what is refused."""

import pytest

from workspace import selectors
from workspace.errors import InvalidInput
from workspace.models import Artifact
from workspace.services import artifacts as artifacts_services

pytestmark = pytest.mark.django_db


def test_artifact_create_stores_the_payload_newest_first(thread):
    older = artifacts_services.artifact_create(
        thread=thread, artifact_type="table", title="T", payload={"columns": ["a"], "rows": [[1]]}, turn_index=1
    )
    newer = artifacts_services.artifact_create(thread=thread, artifact_type="line_chart", title=None, payload={}, turn_index=2)
    assert [a.pk for a in selectors.artifacts_for(thread=thread)] == [newer.pk, older.pk]
    assert selectors.latest_artifact_for(thread=thread) == newer
    assert [a.pk for a in selectors.artifacts_for(thread=thread, artifact_type="table")] == [older.pk]
    assert Artifact.objects.get(pk=older.pk).payload == {"columns": ["a"], "rows": [[1]]}
    assert newer.title == ""


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"artifact_type": ""}, "Artifact type cannot be empty."),
        ({"artifact_type": "t" * 51}, "Artifact type is too long"),
        ({"artifact_type": 'invoice.exe"; x="'}, "Artifact type must be a name"),
        ({"artifact_type": "Bar chart"}, "Artifact type must be a name"),
        ({"title": "t" * 201}, "Artifact title is too long"),
        ({"payload": [1, 2]}, "Artifact payload must be a JSON object."),
        ({"payload": {"when": object()}}, "Artifact payload must be plain JSON"),
        ({"payload": {"v": float("nan")}}, "Artifact payload must be plain JSON"),
        ({"payload": {"blob": "x" * artifacts_services.ARTIFACT_PAYLOAD_MAX_BYTES}}, "Artifact payload is too large"),
    ],
)
def test_artifact_create_refuses_bad_input(thread, kwargs, message):
    args = {"thread": thread, "artifact_type": "table", "title": "T", "payload": {}, "turn_index": 0} | kwargs
    with pytest.raises(InvalidInput) as exc:
        artifacts_services.artifact_create(**args)
    assert exc.value.message.startswith(message)
    assert not Artifact.objects.exists()
