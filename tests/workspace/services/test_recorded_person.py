"""The workspace services record the person they are given on the rows
they write (docs/adr/0085): every kind of document write, the objective,
Keep and Undo; a script's write records nobody."""

import pytest

from workspace.models import Document, DocumentReviewDecision, DocumentRevision, ObjectiveRevision, Thread
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import review as review_services

pytestmark = pytest.mark.django_db

PERSON, AGENT = DocumentRevision.Author.PERSON, DocumentRevision.Author.AGENT


def _revisions(thread):
    return list(
        DocumentRevision.objects.filter(document__thread=thread)
        .order_by("version")
        .values_list("version", "author", "person_id", "person_username")
    )


def test_every_document_write_records_the_person_given(owner, other_user, thread):
    document_services.document_save(thread=thread, title="Notes", content="One.\n", base_version=0, author=PERSON, person=owner)
    document_services.document_append(thread=thread, text="Two.", author=AGENT, person=other_user)
    document_services.document_edit_passage(
        thread=thread, passage="One.", replacement="Uno.", base_version=2, author=PERSON, person=owner
    )
    document_services.document_restore(thread=thread, version=1, base_version=3, person=other_user)
    document_services.document_save(thread=thread, content="By a script.")
    assert _revisions(thread) == [
        (1, "person", owner.pk, "owner"),
        (2, "agent", other_user.pk, "intruder"),
        (3, "person", owner.pk, "owner"),
        (4, "person", other_user.pk, "intruder"),
        (5, "system", None, ""),
    ]


def test_a_merged_save_records_its_own_person_not_the_one_it_merged_with(owner, other_user, thread):
    document_services.document_save(thread=thread, content="A.\n\nB.\n", base_version=0, author=PERSON, person=owner)
    document_services.document_save(thread=thread, content="A, edited.\n\nB.\n", base_version=1, author=PERSON, person=owner)
    saved = document_services.document_save(
        thread=thread, content="A.\n\nB, edited.\n", base_version=1, author=PERSON, person=other_user
    )
    assert saved.merged
    assert _revisions(thread)[-1] == (3, "person", other_user.pk, "intruder")


def test_the_objective_records_the_person_given(owner, thread):
    objective_services.objective_set(thread=thread, text="Ship it", author=PERSON, person=owner)
    objective_services.objective_set(thread=thread, text="Ship it soon")
    assert list(ObjectiveRevision.objects.filter(thread=thread).order_by("id").values_list("text", "person_username")) == [
        ("Ship it", "owner"),
        ("Ship it soon", ""),
    ]


BEFORE = "# Notes\n\nFirst paragraph.\n\nSecond paragraph."
AFTER = "# Notes\n\nFirst paragraph, by the agent.\n\nSecond paragraph, by the agent."


def _agent_turn(thread):
    document_services.document_save(thread=thread, content=BEFORE, author=PERSON)
    Thread.objects.filter(pk=thread.pk).update(turn_index=1)
    document_services.document_save(thread=thread, content=AFTER, author=AGENT)


def test_keep_and_undo_record_who_answered_and_the_undo_is_their_revision(owner, other_user, thread):
    _agent_turn(thread)
    review_services.review_keep(thread=thread, turn_index=1, hunk=0, person=owner)
    review_services.review_undo(thread=thread, turn_index=1, hunk=1, person=other_user)
    document = Document.objects.get(thread=thread)
    decisions = DocumentReviewDecision.objects.filter(document=document).order_by("hunk")
    assert [(d.hunk, d.decision, d.person_id, d.person_username) for d in decisions] == [
        (0, "kept", owner.pk, "owner"),
        (1, "undone", other_user.pk, "intruder"),
    ]
    assert _revisions(thread)[-1] == (3, "person", other_user.pk, "intruder")
