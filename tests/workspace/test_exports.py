"""Document and artifact exports: what a person gets in each file."""

import csv
import io
import json
import zipfile

import pytest
from docx import Document as WordDocument

from workspace import exports
from workspace.exports import ExportRefused
from workspace.selectors import document_for
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db

SOURCE = """# Launch plan

Intro with **bold**, *italic*, `code` and a [link](https://example.com).

## Steps

- first
- second
  - nested

1. one
2. two

> quoted

```
line one
line two
```

| Name | Value |
| --- | --- |
| Q1 | 120 |
"""


def _document(thread, content=SOURCE, title="Launch plan ü"):
    document_services.document_save(thread=thread, title=title, content=content)
    return document_for(thread=thread)


def test_markdown_export_is_the_text_as_written(thread):
    body, filename, content_type = exports.export_document(_document(thread), "markdown")
    assert body.decode() == SOURCE
    assert filename == "launch-plan-u.md"
    assert content_type.startswith("text/markdown")


def test_html_export_is_a_standalone_sanitised_page(thread):
    document = _document(thread, content=SOURCE + "\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n")
    html = exports.document_html(document)
    assert html.startswith("<!doctype html>")
    assert "<title>Launch plan ü</title>" in html
    assert "<h1>Launch plan</h1>" in html and "<strong>bold</strong>" in html and "<table>" in html
    assert "<script" not in html
    assert 'href="javascript' not in html
    assert "&lt;script&gt;" in html  # the person's text is kept, escaped
    assert "http" not in html.split("<main>")[0].replace("http-equiv", "")  # no outside requests in the head


def test_docx_export_keeps_headings_lists_emphasis_code_and_tables(thread):
    word = WordDocument(io.BytesIO(exports.document_docx(_document(thread))))
    paragraphs = [(p.style.name, p.text) for p in word.paragraphs]
    assert ("Heading 1", "Launch plan") in paragraphs
    assert ("Heading 2", "Steps") in paragraphs
    assert ("List Bullet", "first") in paragraphs
    assert ("List Bullet 2", "nested") in paragraphs
    assert ("List Number", "two") in paragraphs
    assert ("Quote", "quoted") in paragraphs
    intro = next(p for p in word.paragraphs if p.text.startswith("Intro"))
    assert intro.text == "Intro with bold, italic, code and a link."  # a real hyperlink (docs/adr/0053)
    assert [(h.text, h.address) for h in intro.hyperlinks] == [("link", "https://example.com")]
    assert [r.text for r in intro.runs if r.bold] == ["bold"]
    assert [r.text for r in intro.runs if r.italic] == ["italic"]
    assert [r.text for r in intro.runs if r.font.name == "Courier New"] == ["code"]
    assert any(p.text == "line one\nline two" for p in word.paragraphs)
    table = word.tables[0]
    assert [[c.text for c in row.cells] for row in table.rows] == [["Name", "Value"], ["Q1", "120"]]
    assert word.core_properties.title == "Launch plan ü"


def test_an_empty_document_exports_in_every_format(thread):
    document = document_for(thread=thread)
    for fmt in exports.DOCUMENT_FORMATS:
        body, filename, _ = exports.export_document(document, fmt)
        assert filename == f"untitled.{exports.DOCUMENT_FORMATS[fmt][0]}"
        assert body is not None
    assert WordDocument(io.BytesIO(exports.document_docx(document))).paragraphs == []


def test_file_names_never_carry_paths_or_odd_characters():
    assert exports.file_stem("../../etc/passwd", default="x") == "etc-passwd"
    assert exports.file_stem('Q1 "report"; rm -rf', default="x") == "q1-report-rm-rf"
    assert exports.file_stem("日本語", default="document") == "document"
    assert len(exports.file_stem("a" * 500, default="x")) == exports.FILENAME_MAX_CHARS
    # The default may be stored data too (an artifact's type): cleaned alike.
    assert exports.file_stem("日本語", default='invoice.exe"; x="') == "invoice-exe-x"
    assert exports.file_stem("日本語", default="会议") == "file"


def _artifact(thread, artifact_type, payload, title="Revenue"):
    return artifacts_services.artifact_create(
        thread=thread, artifact_type=artifact_type, title=title, payload=payload, turn_index=2
    )


def _rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_artifact_json_carries_type_title_turn_and_payload(thread):
    payload = {"data": [{"name": "Q1", "value": 1}], "style": {"stacked": True}}
    artifact = _artifact(thread, "bar_chart", payload)
    body, filename, content_type = exports.export_artifact(artifact, "json")
    assert json.loads(body) == {"artifact_type": "bar_chart", "title": "Revenue", "turn": 2, "payload": payload}
    assert filename == "revenue.json" and content_type.startswith("application/json")


def test_chart_csv_has_one_column_per_series(thread):
    artifact = _artifact(
        thread,
        "line_chart",
        {
            "x_axis_title": "Quarter",
            "series": ["north", "south"],
            "data": [{"name": "Q1", "north": 1, "south": 2}, {"name": "Q2", "north": 3}],
        },
    )
    assert _rows(exports.artifact_csv(artifact)) == [["Quarter", "north", "south"], ["Q1", "1", "2"], ["Q2", "3", ""]]


def test_table_csv_keeps_cells_and_defuses_formulas(thread):
    artifact = _artifact(
        thread,
        "data_table",
        {
            "columns": ["Item", "Cost"],
            "rows": [['=HYPERLINK("http://x")', -5], ['a, "quoted"', "@SUM(A1)"]],
        },
    )
    assert _rows(exports.artifact_csv(artifact)) == [
        ["Item", "Cost"],
        ['\'=HYPERLINK("http://x")', "-5"],
        ['a, "quoted"', "'@SUM(A1)"],
    ]


def test_csv_of_a_document_artifact_or_a_broken_chart_is_refused(thread):
    with pytest.raises(ExportRefused, match="Only charts and tables"):
        exports.artifact_csv(_artifact(thread, "document", {"content": "x"}))
    with pytest.raises(ExportRefused, match="could not be read"):
        exports.artifact_csv(_artifact(thread, "bar_chart", {"data": []}))


@pytest.mark.parametrize(
    "cell",
    [
        "\n=1+1",
        " =1+1",
        "\u00a0=1+1",
        "\u2003+cmd|' /C calc'!A0",
        "\t=1",
        "\r=1",
        "\u200b@SUM(A1)",
        "\x01-2+3",
        ' \n\u00a0 =HYPERLINK("http://x")',
        "\uff1d1+1",
        "-",
        "@",
    ],
)
def test_a_formula_behind_spaces_line_breaks_or_invisible_characters_is_defused(thread, cell):
    artifact = _artifact(thread, "data_table", {"columns": ["Cell"], "rows": [[cell]]})
    [_header, [written]] = _rows(exports.artifact_csv(artifact))
    assert written == "'" + cell or written == "'" + cell.strip(), repr(written)
    assert written.startswith("'")


@pytest.mark.parametrize("cell", ["plain text", " indented text", "-5", " 2.5", "1e3", "", "   ", "a=b", "x-1"])
def test_text_and_numbers_are_written_as_they_are(thread, cell):
    artifact = _artifact(thread, "data_table", {"columns": ["Cell"], "rows": [[cell]]})
    rows = _rows(exports.artifact_csv(artifact))
    assert not any(value.startswith("'") for row in rows for value in row), rows


@pytest.mark.parametrize("fmt", ["html", "docx"])
def test_an_export_keeps_a_deeply_nested_outline_and_the_text_after_it(thread, fmt):
    from tests.support.unicode_text import big_document

    outline = "".join("  " * i + f"- niveau {i} 🇫🇷\n" for i in range(10))
    text = big_document(30_000) + "\n" + outline + "\nConclusion : le dernier paragraphe compte. 会议\n"
    body, _, _ = exports.export_document(_document(thread, content=text, title="Rapport"), fmt)
    out = body.decode("utf-8") if fmt == "html" else zipfile.ZipFile(io.BytesIO(body)).read("word/document.xml").decode()
    assert "niveau 9 🇫🇷" in out
    assert "Conclusion : le dernier paragraphe compte. 会议" in out


def test_exports_keep_text_as_people_write_it(thread):
    from tests.support.unicode_text import FAMILY, big_document

    text = (
        "# Titre 🇫🇷\n\n"
        + big_document(60_000)
        + "\n| a | b |\n|---|---|\n| 会议 | "
        + FAMILY
        + " |\n\n```\ncode\twith\x0btab\n```\n"
    )
    document = _document(thread, content=text, title="Rapport é")
    assert exports.export_document(document, "markdown")[0].decode("utf-8") == text
    html = exports.export_document(document, "html")[0].decode("utf-8")
    for piece in ("会议纪要", "مرحبا بالعالم", FAMILY, "Cafe\u0301 noir", "🇫🇷"):
        assert piece in html
    docx = exports.export_document(document, "docx")[0]
    xml = zipfile.ZipFile(io.BytesIO(docx)).read("word/document.xml").decode("utf-8")
    for piece in ("会议纪要", "مرحبا بالعالم", "Cafe\u0301 noir", "🙂", "🇫🇷"):
        assert piece in xml
