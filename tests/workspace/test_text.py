"""The one text rule (workspace.text): a lone surrogate, which a JSON body or
a socket frame can carry but no database, page or socket can encode, is
refused with a message by every write; `encodable` makes any string safe to
send."""

import pytest
from django.utils.html import escape

from workspace.errors import InvalidInput
from workspace.models import Artifact, Document, Objective, Preference, Todo
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services
from workspace.text import clean_text, encodable, escape_html

pytestmark = pytest.mark.django_db

SURROGATE = "\ud800"


@pytest.mark.parametrize(
    "write, message",
    [
        (
            lambda t: objective_services.objective_set(thread=t, text=f"a{SURROGATE}b"),
            "Objective contains a character that cannot be stored",
        ),
        (
            lambda t: preferences_services.preference_add(thread=t, title=SURROGATE, respect_lock=False),
            "Title contains a character",
        ),
        (lambda t: plan_services.todo_add(thread=t, text="step \udfff"), "Step text contains a character"),
        (
            lambda t: document_services.document_save(thread=t, content=f"long text {SURROGATE}"),
            "Document content contains a character",
        ),
        (
            lambda t: artifacts_services.artifact_create(
                thread=t, artifact_type="table", title="T", payload={"v": [SURROGATE]}, turn_index=0
            ),
            "Artifact payload contains a character that cannot be stored",
        ),
    ],
    ids=["objective", "preference", "plan-step", "document", "artifact-payload"],
)
def test_a_lone_surrogate_is_refused_with_a_message_and_nothing_is_stored(thread, write, message):
    with pytest.raises(InvalidInput) as exc:
        write(thread)
    assert exc.value.message.startswith(message)
    assert not any(m.objects.filter(thread=thread).exists() for m in (Objective, Preference, Todo, Document, Artifact))


def test_characters_beyond_the_basic_plane_are_text_like_any_other(thread):
    # A JSON pair "\ud83d\ude00" decodes to one character: nothing to refuse.
    assert clean_text("smile \U0001f600", label="Title", max_chars=20) == "smile \U0001f600"
    artifact = artifacts_services.artifact_create(
        thread=thread, artifact_type="table", title="T", payload={"v": "\U0001f600"}, turn_index=0
    )
    assert Artifact.objects.get(pk=artifact.pk).payload == {"v": "\U0001f600"}


def test_encodable_replaces_only_lone_surrogates():
    assert encodable(f"a{SURROGATE}b\udfffc \U0001f600") == "a\ufffdb\ufffdc \U0001f600"
    assert encodable("plain <b>html</b>") == "plain <b>html</b>"
    encodable(f"x{SURROGATE}").encode("utf-8")  # sendable


@pytest.mark.parametrize("value", ['<b class="x">Tom & Jerry\'s</b>', "plain", "", 42, "&amp; already escaped"])
def test_escape_html_encodes_what_djangos_escape_does(value):
    assert escape_html(value) == escape(value)
