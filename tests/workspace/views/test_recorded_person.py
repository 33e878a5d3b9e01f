"""The workspace's views record the signed-in person on what they write,
and the histories and diffs show the person's name, the same for every
viewer (docs/adr/0085)."""

import pytest

from tests.support.web import HTMX, ws_url
from workspace.models import DocumentReviewDecision, DocumentRevision, ObjectiveRevision, Thread
from workspace.services import document as document_services
from workspace.services import objective as objective_services

pytestmark = pytest.mark.django_db

PERSON, AGENT = DocumentRevision.Author.PERSON, DocumentRevision.Author.AGENT


@pytest.fixture
def named_owner(owner):
    owner.first_name, owner.last_name = "Ada", "Lovelace"
    owner.save()
    return owner


def _newest_revision(thread):
    return DocumentRevision.objects.filter(document__thread=thread).order_by("-version").first()


def test_a_document_save_and_a_restore_are_recorded_as_the_signed_in_persons(owner_client, owner, thread):
    response = owner_client.post(ws_url(thread, "document/save/"), {"title": "T", "content": "One", "base_version": 0}, **HTMX)
    assert response.status_code == 200
    assert (_newest_revision(thread).author, _newest_revision(thread).person_id) == ("person", owner.pk)
    document_services.document_save(thread=thread, content="Two", base_version=1, author=AGENT)
    owner_client.post(ws_url(thread, "document/history/restore/"), {"version": 1, "base_version": 2}, **HTMX)
    restored = _newest_revision(thread)
    assert (restored.version, restored.author, restored.person_id, restored.person_username) == (3, "person", owner.pk, "owner")


def test_an_objective_edit_is_recorded_as_the_signed_in_persons(owner_client, owner, thread):
    owner_client.post(ws_url(thread, "objective/edit/"), {"text": "Mine"}, **HTMX)
    revision = ObjectiveRevision.objects.get(thread=thread)
    assert (revision.author, revision.person_id, revision.person_username) == ("person", owner.pk, "owner")


def test_keep_and_undo_are_recorded_as_the_signed_in_persons(owner_client, owner, thread):
    document_services.document_save(thread=thread, content="# N\n\nFirst.\n\nSecond.", author=PERSON)
    Thread.objects.filter(pk=thread.pk).update(turn_index=1)
    document_services.document_save(thread=thread, content="# N\n\nFirst, agent.\n\nSecond, agent.", author=AGENT)
    owner_client.post(ws_url(thread, "document/review/keep/"), {"turn": 1, "hunk": 0}, **HTMX)
    owner_client.post(ws_url(thread, "document/review/undo/"), {"turn": 1, "hunk": 1}, **HTMX)
    answers = DocumentReviewDecision.objects.order_by("hunk").values_list("decision", "person_id")
    assert list(answers) == [("kept", owner.pk), ("undone", owner.pk)]
    assert _newest_revision(thread).person_id == owner.pk


def test_the_history_names_the_person_by_full_name_and_mcp_writes_by_the_tokens_person(named_owner, owner_client, thread):
    document_services.document_save(thread=thread, content="Mine", base_version=0, author=PERSON, person=named_owner)
    document_services.document_save(
        thread=thread, content="Through MCP", base_version=1, author="mcp", token_name="Laptop", person=named_owner
    )
    document_services.document_save(thread=thread, content="The agent's", base_version=2, author=AGENT, person=named_owner)
    html = owner_client.get(ws_url(thread, "document/history/"), **HTMX).content.decode()
    assert '<span class="doc-history-who">Ada Lovelace</span>' in html
    assert "Ada Lovelace, through MCP (token “Laptop”)" in html
    assert ">You<" not in html and "You, through MCP" not in html


def test_a_diff_says_who_wrote_each_version(named_owner, owner_client, thread):
    document_services.document_save(thread=thread, content="Mine", base_version=0, author=PERSON, person=named_owner)
    document_services.document_save(thread=thread, content="The agent's", base_version=1, author=AGENT, person=named_owner)
    html = owner_client.get(ws_url(thread, "document/history/diff/"), {"old": 1, "new": 2}, **HTMX).content.decode()
    assert "Version 1 by Ada Lovelace; version 2 by Agent." in html
    from_empty = owner_client.get(ws_url(thread, "document/history/diff/"), {"old": 0, "new": 1}, **HTMX).content.decode()
    assert "Version 1 by Ada Lovelace." in from_empty


def test_the_objective_history_names_the_person_who_edited_it(named_owner, owner_client, thread):
    objective_services.objective_set(thread=thread, text="First", author=PERSON, person=named_owner)
    objective_services.objective_set(thread=thread, text="Second", author="mcp", token_name="Laptop", person=named_owner)
    html = owner_client.get(ws_url(thread, "objective/history/"), **HTMX).content.decode()
    assert "Edited by Ada Lovelace before the first turn" in html
    assert "Set by Ada Lovelace through MCP (token “Laptop”)" in html


def test_a_name_kept_only_as_text_is_shown_as_it_is(owner_client, thread):
    # An imported archive's person with no account here (workspace.people.imported).
    document_services.document_save(thread=thread, content="Theirs", base_version=0, author=PERSON)
    DocumentRevision.objects.filter(document__thread=thread).update(person_username="grace")
    html = owner_client.get(ws_url(thread, "document/history/"), **HTMX).content.decode()
    assert '<span class="doc-history-who">grace</span>' in html


def test_a_name_with_markup_is_shown_as_text(owner, owner_client, thread):
    owner.first_name = '<img src=x onerror="alert(1)">'
    owner.save()
    document_services.document_save(thread=thread, content="Mine", base_version=0, author=PERSON, person=owner)
    html = owner_client.get(ws_url(thread, "document/history/"), **HTMX).content.decode()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
