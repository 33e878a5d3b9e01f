"""The export downloads: owner only, a clear refusal for a bad format."""

import pytest

from tests.support.web import ws_url
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db


def test_owner_downloads_the_document_in_each_format(owner_client, thread):
    document_services.document_save(thread=thread, title="Notes", content="# Hello\n\nworld")
    for fmt, extension in (("markdown", "md"), ("html", "html"), ("docx", "docx")):
        response = owner_client.get(ws_url(thread, f"document/export/?format={fmt}"))
        assert response.status_code == 200
        assert response["Content-Disposition"] == f'attachment; filename="notes.{extension}"'
    markdown = owner_client.get(ws_url(thread, "document/export/?format=markdown"))
    assert markdown.content == b"# Hello\n\nworld"


def test_an_unknown_format_is_refused_with_a_message(owner_client, thread):
    response = owner_client.get(ws_url(thread, "document/export/?format=exe"))
    assert response.status_code == 400
    assert response.content.decode() == "Choose a format: markdown, html, docx."


def test_another_users_document_and_artifact_are_not_found(other_client, thread):
    artifact = artifacts_services.artifact_create(
        thread=thread, artifact_type="data_table", title="T", payload={"columns": ["a"], "rows": [[1]]}, turn_index=1
    )
    assert other_client.get(ws_url(thread, "document/export/?format=markdown")).status_code == 404
    assert other_client.get(ws_url(thread, f"artifacts/{artifact.pk}/export/?format=csv")).status_code == 404


def test_artifact_csv_download_and_refusal(owner_client, thread):
    table = artifacts_services.artifact_create(
        thread=thread, artifact_type="data_table", title="Costs", payload={"columns": ["a"], "rows": [[1]]}, turn_index=1
    )
    note = artifacts_services.artifact_create(
        thread=thread, artifact_type="document", title="Note", payload={"content": "x"}, turn_index=1
    )
    response = owner_client.get(ws_url(thread, f"artifacts/{table.pk}/export/?format=csv"))
    assert response.status_code == 200 and response.content == b"\xef\xbb\xbfa\r\n1\r\n"  # UTF-8 with its BOM
    assert response["Content-Disposition"] == 'attachment; filename="costs.csv"'
    refused = owner_client.get(ws_url(thread, f"artifacts/{note.pk}/export/?format=csv"))
    assert refused.status_code == 400 and "Only charts and tables" in refused.content.decode()
    assert owner_client.get(ws_url(thread, f"artifacts/{note.pk + 99}/export/?format=json")).status_code == 404


def test_the_export_menu_offers_the_formats_for_what_is_shown(owner_client, thread):
    chart = artifacts_services.artifact_create(
        thread=thread,
        artifact_type="bar_chart",
        title="Rev",
        payload={"data": [{"name": "a", "value": 1}]},
        turn_index=1,
    )
    page = owner_client.get(ws_url(thread, "centre/")).content.decode()
    assert ">Markdown</a>" in page and ">HTML</a>" in page and ">DOCX</a>" in page and ">CSV</a>" not in page
    shown = owner_client.get(ws_url(thread, f"centre/?artifact={chart.pk}")).content.decode()
    assert ">JSON</a>" in shown and ">CSV</a>" in shown and ">PNG image</button>" in shown


def test_document_downloads_carry_the_person_and_the_threads_artifacts(owner_client, owner, thread):
    import io

    from docx import Document as WordDocument

    document_services.document_save(thread=thread, title="Notes", content="# Notes\n\nBody.\n")
    artifacts_services.artifact_create(
        thread=thread, artifact_type="data_table", title="Costs", payload={"columns": ["a"], "rows": [[1]]}, turn_index=1
    )
    word = WordDocument(io.BytesIO(owner_client.get(ws_url(thread, "document/export/?format=docx")).content))
    assert word.core_properties.author == "owner"  # no full name: the username
    assert "Costs" in [p.text for p in word.paragraphs]
    owner.first_name, owner.last_name = "Ada", "Lovelace"
    owner.save()
    word = WordDocument(io.BytesIO(owner_client.get(ws_url(thread, "document/export/?format=docx")).content))
    assert word.core_properties.author == "Ada Lovelace"
    html = owner_client.get(ws_url(thread, "document/export/?format=html")).content.decode()
    assert '<h1 id="artifacts-title">Artifacts</h1>' in html and "<h2>Costs</h2>" in html
    markdown = owner_client.get(ws_url(thread, "document/export/?format=markdown")).content.decode()
    assert markdown == "# Notes\n\nBody.\n"  # the text as written, nothing added
