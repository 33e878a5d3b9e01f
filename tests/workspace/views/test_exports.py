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


def _long_table(thread, rows):
    payload = {"columns": ["Item", "Amount"], "rows": [[f"Item {n}", n] for n in range(rows)]}
    return artifacts_services.artifact_create(
        thread=thread, artifact_type="data_table", title="Sales", payload=payload, turn_index=1
    )


def test_the_document_export_carries_a_long_tables_first_rows_and_says_the_csv_has_all(owner_client, thread):
    """The owner's DOCX and HTML end with each table's first 200 rows and say
    how many it has; its CSV still has every row (docs/adr/0141)."""
    import io

    from docx import Document as WordDocument

    table = _long_table(thread, 450)
    note = "Table from turn 1: its cells. The first 200 of 450 rows; the table’s CSV export in the thread has every row."
    word = WordDocument(io.BytesIO(owner_client.get(ws_url(thread, "document/export/?format=docx")).content))
    assert note in [p.text for p in word.paragraphs]
    (appended,) = word.tables
    assert len(appended.rows) == 201 and appended.rows[-1].cells[0].text == "Item 199"
    html = owner_client.get(ws_url(thread, "document/export/?format=html")).content.decode()
    assert note in html and html.count("<tr><td>") == 200 and "<td>Item 199</td>" in html and "Item 200" not in html
    csv = owner_client.get(ws_url(thread, f"artifacts/{table.pk}/export/?format=csv")).content.decode("utf-8-sig")
    assert csv.count("\r\n") == 451 and "Item 449,449\r\n" in csv


def test_the_document_export_carries_a_short_table_whole_with_no_note(owner_client, thread):
    _long_table(thread, 200)
    html = owner_client.get(ws_url(thread, "document/export/?format=html")).content.decode()
    assert html.count("<tr><td>") == 200 and "Table from turn 1: its cells.</p>" in html


def test_a_table_of_powers_of_two_the_agent_makes_shows_and_exports(owner_client, thread):
    """A table of "powers of two up to 2^1400": integers too large for a float, valid for the table tool. The
    centre panel, the document's HTML and DOCX and the table's CSV all carry their digits (each was a 500)."""
    import io

    from docx import Document as WordDocument

    from agent.tools.schemas import DataTableArgs
    from agent.tools.tables import data_table

    rows = ",".join(f"[{n}, {2**n}]" for n in range(0, 1401, 50))
    args = DataTableArgs.model_validate_json(f'{{"title": "Powers of two", "columns": ["n", "2^n"], "rows": [{rows}]}}')
    _, made = data_table(thread, **args.model_dump())
    table = artifacts_services.artifact_create(thread=thread, turn_index=1, **made)
    document_services.document_save(thread=thread, title="Report", content="# Report\n\nBody.\n")
    largest = str(2**1400)

    centre = owner_client.get(ws_url(thread, f"centre/?artifact={table.pk}"))
    assert centre.status_code == 200 and largest in centre.content.decode()
    assert owner_client.get(f"/threads/{thread.pk}/workspace/").status_code == 200
    html = owner_client.get(ws_url(thread, "document/export/?format=html"))
    assert html.status_code == 200 and largest in html.content.decode()
    docx = owner_client.get(ws_url(thread, "document/export/?format=docx"))
    assert docx.status_code == 200
    cells = [cell.text for t in WordDocument(io.BytesIO(docx.content)).tables for row in t.rows for cell in row.cells]
    assert largest in cells
    csv = owner_client.get(ws_url(thread, f"artifacts/{table.pk}/export/?format=csv"))
    assert csv.status_code == 200 and f"1400,{largest}\r\n" in csv.content.decode()


def test_a_chart_holding_a_number_too_large_for_a_float_shows_and_exports(owner_client, thread):
    """Stored before the chart tool refused it, or imported from an archive: the point is a gap, nothing is a 500."""
    chart = artifacts_services.artifact_create(
        thread=thread,
        artifact_type="bar_chart",
        title="Growth",
        payload={"data": [{"name": "2024", "value": 1}, {"name": "2025", "value": 10**400}]},
        turn_index=1,
    )
    document_services.document_save(thread=thread, title="Report", content="Body.\n")
    assert owner_client.get(f"/threads/{thread.pk}/workspace/").status_code == 200
    assert owner_client.get(ws_url(thread, f"centre/?artifact={chart.pk}")).status_code == 200
    for fmt in ("html", "docx"):
        assert owner_client.get(ws_url(thread, f"document/export/?format={fmt}")).status_code == 200, fmt
    csv = owner_client.get(ws_url(thread, f"artifacts/{chart.pk}/export/?format=csv"))
    assert csv.status_code == 200 and csv.content.decode().endswith("2024,1\r\n2025,\r\n")


@pytest.mark.parametrize("artifact_type", ['invoice.exe"; x="', "../../etc/passwd", "line\nbreak", "data_table"])
def test_an_artifact_title_without_ascii_names_its_download_after_its_type_cleaned(owner_client, thread, artifact_type):
    """A row imported before types were checked: its type (free text then) never reaches the file name raw
    (it was `invoice.exe"; x=".json`, a path, or a 500 for the line break)."""
    from workspace.models import Artifact

    artifact = Artifact.objects.create(thread=thread, artifact_type=artifact_type, title="会议", payload={"k": 1}, turn_index=0)
    response = owner_client.get(ws_url(thread, f"artifacts/{artifact.pk}/export/?format=json"))
    assert response.status_code == 200
    expected = {"data_table": "data-table", "../../etc/passwd": "etc-passwd", "line\nbreak": "line-break"}.get(
        artifact_type, "invoice-exe-x"
    )
    assert response["Content-Disposition"] == f'attachment; filename="{expected}.json"'
