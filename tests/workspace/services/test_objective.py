"""workspace.services.objective, checked against what the database holds afterwards."""

import pytest

from tests.workspace.helpers import _activity
from workspace import selectors
from workspace.errors import InvalidInput
from workspace.models import OBJECTIVE_MAX_CHARS, Objective, ObjectiveRevision, Thread
from workspace.services import objective as objective_services

pytestmark = pytest.mark.django_db


def test_objective_set_creates_then_replaces_the_single_objective(thread):
    before = _activity(thread)
    objective_services.objective_set(thread=thread, text="  Draft a review  ")
    objective_services.objective_set(thread=thread, text="Draft a systematic review")
    assert list(Objective.objects.filter(thread=thread).values_list("text", flat=True)) == ["Draft a systematic review"]
    assert _activity(thread) > before


@pytest.mark.parametrize(
    "text, message",
    [("", "Objective cannot be empty."), ("   ", "Objective cannot be empty."), (None, "Objective must be text.")],
)
def test_objective_set_refuses_empty_text(thread, text, message):
    objective_services.objective_set(thread=thread, text="Keep me")
    with pytest.raises(InvalidInput) as exc:
        objective_services.objective_set(thread=thread, text=text)
    assert exc.value.message == message
    assert selectors.objective_text_for(thread=thread) == "Keep me"


def test_objective_set_refuses_over_long_text(thread):
    with pytest.raises(InvalidInput, match="too long"):
        objective_services.objective_set(thread=thread, text="x" * (OBJECTIVE_MAX_CHARS + 1))
    assert not Objective.objects.filter(thread=thread).exists()
    assert selectors.objective_text_for(thread=thread) is None


def test_each_change_is_kept_with_its_author_and_the_turn_and_a_repeat_is_not_a_change(thread):
    objective_services.objective_set(thread=thread, text="Scripted")
    Thread.objects.filter(pk=thread.pk).update(turn_index=4)
    objective_services.objective_set(thread=thread, text="By the agent", author="agent")
    before = _activity(thread)
    objective_services.objective_set(thread=thread, text="  By the agent ", author="person")  # the same once cleaned
    assert list(ObjectiveRevision.objects.filter(thread=thread).order_by("id").values_list("text", "author", "turn_index")) == [
        ("Scripted", "system", 0),
        ("By the agent", "agent", 4),
    ]
    assert _activity(thread) == before


def test_a_refused_objective_records_no_revision(thread):
    with pytest.raises(InvalidInput):
        objective_services.objective_set(thread=thread, text="", author="person")
    assert not ObjectiveRevision.objects.filter(thread=thread).exists()
