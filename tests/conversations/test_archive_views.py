"""Downloading a thread's archive and importing one from the thread list."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from conversations.archive import thread_archive
from tests.support.web import database_rows
from workspace.models import Thread
from workspace.services.document import document_save

pytestmark = pytest.mark.django_db(transaction=True)


def _upload(data: bytes, name="thread.haico.json"):
    return SimpleUploadedFile(name, data, content_type="application/json")


def test_owner_downloads_the_archive_and_imports_it_as_a_new_thread(owner_client, owner, thread):
    document_save(thread=thread, title="Notes", content="Kept text")
    response = owner_client.get(f"/threads/{thread.pk}/export/")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="lit-review.haico.json"'
    archive = json.loads(response.content)
    assert archive["workspace"]["document"]["content"] == "Kept text"

    imported = owner_client.post("/threads/import/", {"archive": _upload(response.content)})
    new = Thread.objects.exclude(pk=thread.pk).get(owner=owner)
    assert imported.status_code == 302 and imported["Location"] == f"/threads/{new.pk}/workspace/"
    page = owner_client.get(imported["Location"]).content.decode()
    assert "Kept text" in page and new.title in page


def test_another_persons_archive_is_not_found(other_client, thread):
    assert other_client.get(f"/threads/{thread.pk}/export/").status_code == 404


def test_a_refused_import_shows_why_on_the_list_and_creates_nothing(owner_client, thread):
    before = database_rows()
    response = owner_client.post("/threads/import/", {"archive": _upload(b"{not json")})
    assert response.status_code == 400
    page = response.content.decode()
    assert "not valid JSON" in page and 'role="alert"' in page and thread.title in page
    missing = owner_client.post("/threads/import/", {})
    assert missing.status_code == 400 and "Choose an archive file to import." in missing.content.decode()
    assert database_rows() == before


def test_an_oversized_upload_is_refused_before_reading(owner_client, thread, settings):
    settings.HAICO_ARCHIVE_MAX_BYTES = 100
    data = json.dumps(thread_archive(thread)).encode()
    response = owner_client.post("/threads/import/", {"archive": _upload(data)})
    assert response.status_code == 400 and "the limit is 100 bytes." in response.content.decode()
    assert Thread.objects.count() == 1


def test_the_list_offers_import_and_each_thread_export(owner_client, thread):
    page = owner_client.get("/threads/").content.decode()
    assert 'aria-label="Import a thread"' in page and 'name="archive"' in page
    assert f'href="/threads/{thread.pk}/export/"' in page
