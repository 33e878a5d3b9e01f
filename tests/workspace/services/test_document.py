"""workspace.services.document: versions, conflicts, the size cap, appends."""

import pytest
from django.conf import settings

from workspace import selectors
from workspace.errors import DocumentConflict, InvalidInput
from workspace.models import Document
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db


def test_document_starts_empty_at_version_zero_and_each_save_bumps_it(thread):
    draft = selectors.document_for(thread=thread)
    assert (draft.pk, draft.title, draft.content, draft.version) == (None, "Untitled", "", 0)
    first = document_services.document_save(thread=thread, title="Review", content="# Intro", base_version=0)
    assert first.version == 1
    second = document_services.document_save(thread=thread, content="# Intro\n\nMore", base_version=1)
    assert (second.title, second.content, second.version) == ("Review", "# Intro\n\nMore", 2)
    document_services.document_save(thread=thread, title="Review v2")
    stored = Document.objects.get(thread=thread)
    assert (stored.title, stored.content, stored.version) == ("Review v2", "# Intro\n\nMore", 3)


def test_document_save_on_a_stale_version_is_a_conflict_and_changes_nothing(thread):
    document_services.document_save(thread=thread, content="mine", base_version=0)
    document_services.document_save(thread=thread, content="agent's edit")
    with pytest.raises(DocumentConflict) as exc:
        document_services.document_save(thread=thread, content="stale text", base_version=1)
    assert exc.value.current_version == 2
    assert "changed since you loaded it" in exc.value.message
    stored = Document.objects.get(thread=thread)
    assert (stored.content, stored.version) == ("agent's edit", 2)


def test_document_conflict_on_a_never_saved_document_creates_nothing(thread):
    with pytest.raises(DocumentConflict):
        document_services.document_save(thread=thread, content="x", base_version=4)
    assert not Document.objects.filter(thread=thread).exists()


def test_document_save_refuses_over_the_size_cap_and_bad_title(thread):
    document_services.document_save(thread=thread, content="keep", base_version=0)
    limit = settings.HAICO_DOCUMENT_MAX_CHARS
    with pytest.raises(InvalidInput, match="too long"):
        document_services.document_save(thread=thread, content="x" * (limit + 1), base_version=1)
    with pytest.raises(InvalidInput, match="Document title cannot be empty"):
        document_services.document_save(thread=thread, title="  ", base_version=1)
    with pytest.raises(InvalidInput, match="must be text"):
        document_services.document_save(thread=thread, content=["not", "text"], base_version=1)
    stored = Document.objects.get(thread=thread)
    assert (stored.content, stored.version) == ("keep", 1)
    document_services.document_save(thread=thread, content="x" * limit, base_version=1)
    assert len(Document.objects.get(thread=thread).content) == limit


def test_document_append_adds_a_line_and_bumps_the_version(thread):
    document_services.document_append(thread=thread, text="First")
    document_services.document_append(thread=thread, text="Second")
    stored = Document.objects.get(thread=thread)
    assert (stored.content, stored.version) == ("First\nSecond", 2)
    with pytest.raises(InvalidInput, match="cannot be empty"):
        document_services.document_append(thread=thread, text="  ")
    with pytest.raises(InvalidInput, match="too long"):
        document_services.document_append(thread=thread, text="x" * settings.HAICO_DOCUMENT_MAX_CHARS)
    assert Document.objects.get(thread=thread).content == "First\nSecond"
