"""What every surface service shares (workspace.services.common and
workspace.text): writes touch the thread's activity, and text with NUL
characters is refused with a message (PostgreSQL refuses them; the services
say so first)."""

import pytest

from tests.workspace.helpers import _activity
from workspace.errors import InvalidInput
from workspace.models import Artifact, Document, Objective, Preference, Todo
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db


def test_writes_touch_the_thread_activity(thread):
    stamps = [_activity(thread)]
    preferences_services.preference_add(thread=thread, title="P", respect_lock=False)
    stamps.append(_activity(thread))
    plan_services.todo_add(thread=thread, text="T")
    stamps.append(_activity(thread))
    document_services.document_save(thread=thread, content="D")
    stamps.append(_activity(thread))
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda t: objective_services.objective_set(thread=t, text="a\x00b"), "Objective cannot contain NUL characters."),
        (
            lambda t: preferences_services.preference_add(thread=t, title="a\x00b", respect_lock=False),
            "Title cannot contain NUL characters.",
        ),
        (lambda t: plan_services.todo_add(thread=t, text="a\x00b"), "Step text cannot contain NUL characters."),
        (
            lambda t: document_services.document_save(thread=t, content="a\x00b"),
            "Document content cannot contain NUL characters.",
        ),
        (
            lambda t: artifacts_services.artifact_create(
                thread=t, artifact_type="table", title="T", payload={"v": "a\x00b"}, turn_index=0
            ),
            "Artifact payload cannot contain NUL characters.",
        ),
    ],
)
def test_text_with_nul_characters_is_refused_with_a_message(thread, write, message):
    with pytest.raises(InvalidInput) as exc:
        write(thread)
    assert exc.value.message == message
    assert not any(m.objects.filter(thread=thread).exists() for m in (Objective, Preference, Todo, Document, Artifact))
