"""The document and the artifacts as files a person takes to other tools
(docs/adr/0025).

Every format is produced from the stored text alone: Markdown is the text as
written; HTML is the same sanitised rendering the preview shows
(workspace.markdown), wrapped in a page with its own readable styling and no
scripts or outside requests; DOCX is built with python-docx from the
markdown parser's tokens, so headings, lists, emphasis, code, quotes and
tables become Word's own styles rather than a picture of the HTML.
"""

from __future__ import annotations

import csv
import unicodedata
import io
import json
import re
import unicodedata

from django.template.loader import render_to_string

from .artifact_registry import PayloadError, build_chart, build_data_table
from .markdown import markdown_tokens, render_markdown
from .models import Artifact, Document

DOCUMENT_FORMATS = {
    "markdown": ("md", "text/markdown; charset=utf-8"),
    "html": ("html", "text/html; charset=utf-8"),
    "docx": ("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
}
ARTIFACT_FORMATS = {
    "json": ("json", "application/json; charset=utf-8"),
    "csv": ("csv", "text/csv; charset=utf-8"),
}
CSV_TYPES = {"line_chart", "bar_chart", "pie_chart", "data_table"}
FILENAME_MAX_CHARS = 80


class ExportRefused(Exception):
    """The thing asked for has no such format (a CSV of a document artifact)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def file_stem(title: str, *, default: str) -> str:
    """A safe ASCII file name from a title the person or the model wrote:
    letters, digits, dashes; never empty, never a path."""
    ascii_title = unicodedata.normalize("NFKD", title or "").encode("ascii", "ignore").decode()
    stem = re.sub(r"[^A-Za-z0-9]+", "-", ascii_title).strip("-").lower()[:FILENAME_MAX_CHARS].strip("-")
    return stem or default


# -- the document --


def document_markdown(document: Document) -> str:
    return document.content


def document_html(document: Document) -> str:
    return render_to_string(
        "workspace/exports/document.html", {"title": document.title, "body": render_markdown(document.content)}
    )


def document_docx(document: Document) -> bytes:
    # Imported here: python-docx loads lxml and its template, which only exports need.
    from docx import Document as WordDocument

    word = WordDocument()
    word.core_properties.title = document.title
    _DocxWriter(word).write(markdown_tokens(document.content))
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


def export_document(document: Document, fmt: str) -> tuple[bytes, str, str]:
    """(body, file name, content type) of the document in `fmt`; KeyError for an unknown format."""
    extension, content_type = DOCUMENT_FORMATS[fmt]
    if fmt == "markdown":
        body = document_markdown(document).encode()
    elif fmt == "html":
        body = document_html(document).encode()
    else:
        body = document_docx(document)
    return body, f"{file_stem(document.title, default='document')}.{extension}", content_type


class _DocxWriter:
    """Markdown tokens → Word paragraphs, runs and tables.

    Block tokens open and close; inline tokens carry the text of one
    paragraph, heading or cell as children (text, emphasis, code, links).
    """

    def __init__(self, word):
        self.word = word
        self.lists: list[str] = []  # "bullet" / "number", innermost last
        self.quote_depth = 0
        self.table_rows: list[list[str]] | None = None
        self.heading_level: int | None = None

    def write(self, tokens) -> None:
        for token in tokens:
            kind = token.type
            if kind == "heading_open":
                self.heading_level = int(token.tag[1])
            elif kind == "heading_close":
                self.heading_level = None
            elif kind == "bullet_list_open":
                self.lists.append("bullet")
            elif kind == "ordered_list_open":
                self.lists.append("number")
            elif kind in ("bullet_list_close", "ordered_list_close"):
                self.lists.pop()
            elif kind == "blockquote_open":
                self.quote_depth += 1
            elif kind == "blockquote_close":
                self.quote_depth -= 1
            elif kind in ("fence", "code_block"):
                self._code(token.content)
            elif kind == "hr":
                self.word.add_paragraph("* * *").alignment = 1  # centred
            elif kind == "table_open":
                self.table_rows = []
            elif kind == "tr_open" and self.table_rows is not None:
                self.table_rows.append([])
            elif kind == "table_close":
                self._table(self.table_rows or [])
                self.table_rows = None
            elif kind == "inline":
                if self.table_rows is not None:
                    if self.table_rows:
                        self.table_rows[-1].append(token.content)
                else:
                    self._inline(token)

    def _paragraph(self):
        if self.heading_level is not None:
            return self.word.add_heading(level=min(self.heading_level, 9))
        if self.lists:
            depth = len(self.lists)
            base = "List Bullet" if self.lists[-1] == "bullet" else "List Number"
            return self.word.add_paragraph(style=base if depth == 1 else f"{base} {min(depth, 3)}")
        if self.quote_depth:
            return self.word.add_paragraph(style="Quote")
        return self.word.add_paragraph()

    def _inline(self, token) -> None:
        paragraph = self._paragraph()
        bold = italic = strike = 0
        link: str | None = None
        for child in token.children or []:
            kind = child.type
            if kind == "strong_open":
                bold += 1
            elif kind == "strong_close":
                bold -= 1
            elif kind == "em_open":
                italic += 1
            elif kind == "em_close":
                italic -= 1
            elif kind == "s_open":
                strike += 1
            elif kind == "s_close":
                strike -= 1
            elif kind == "link_open":
                link = child.attrs.get("href") if child.attrs else None
            elif kind == "link_close":
                if link:
                    paragraph.add_run(f" ({link})")
                link = None
            elif kind in ("softbreak", "hardbreak"):
                paragraph.add_run().add_break()
            elif kind in ("text", "code_inline"):
                run = paragraph.add_run(child.content)
                run.bold = bold > 0 or None
                run.italic = italic > 0 or None
                run.font.strike = strike > 0 or None
                if kind == "code_inline":
                    run.font.name = "Courier New"
            elif kind == "image":  # never fetched; its description stays
                paragraph.add_run(child.content)

    def _code(self, text: str) -> None:
        paragraph = self.word.add_paragraph()
        lines = text.rstrip("\n").split("\n")
        for n, line in enumerate(lines):
            run = paragraph.add_run(line)
            run.font.name = "Courier New"
            if n < len(lines) - 1:
                run.add_break()

    def _table(self, rows: list[list[str]]) -> None:
        if not rows:
            return
        width = max(len(row) for row in rows)
        table = self.word.add_table(rows=len(rows), cols=width)
        table.style = "Table Grid"
        for r, row in enumerate(rows):
            for c, text in enumerate(row):
                cell = table.cell(r, c)
                cell.text = text
                if r == 0:
                    for run in cell.paragraphs[0].runs:
                        run.bold = True


# -- artifacts --


def artifact_json(artifact: Artifact) -> str:
    return json.dumps(
        {"artifact_type": artifact.artifact_type, "title": artifact.title, "turn": artifact.turn_index,
         "payload": artifact.payload},
        indent=2, ensure_ascii=False, default=str,
    ) + "\n"


def artifact_csv(artifact: Artifact) -> str:
    """A chart's numbers or a table's cells, one row per line, the header first.
    Raises ExportRefused for a type without rows or a payload that cannot be read."""
    if artifact.artifact_type not in CSV_TYPES:
        raise ExportRefused("Only charts and tables can be exported as CSV; export this artifact as JSON.")
    payload = artifact.payload if isinstance(artifact.payload, dict) else None
    if payload is None:
        raise ExportRefused("This artifact's data could not be read, so it cannot be exported as CSV.")
    try:
        if artifact.artifact_type == "data_table":
            data = build_data_table(payload, artifact)
            header, rows = data["columns"], [[cell["text"] for cell in row] for row in data["rows"]]
        else:
            data = build_chart(payload, artifact)
            header, rows = data["table_columns"], data["table_rows"]
    except PayloadError as exc:
        raise ExportRefused(f"This artifact's data could not be read ({exc.message}), so it cannot be exported as CSV.")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([_csv_safe(value) for value in header])
    writer.writerows([_csv_safe(value) for value in row] for row in rows)
    return out.getvalue()


# What makes a spreadsheet run a cell as a formula: its first character
# (the fullwidth forms too, which some spreadsheets fold into the others).
FORMULA_STARTS = "=+-@\t\r\uff1d\uff0b\uff0d\uff20"


def _csv_safe(value: str) -> str:
    """The cell as text a spreadsheet shows rather than runs. The model
    writes these cells, so one that would be a formula is prefixed with '.
    Spreadsheets skip leading spaces, line breaks, no-break spaces and other
    invisible characters before they look, so this looks past them too.
    Numbers stay numbers."""
    start = _first_visible(value)
    if start is not None and value[start] in FORMULA_STARTS and not _is_plain_number(value):
        return "'" + value
    return value


def _first_visible(value: str) -> int | None:
    """The position of the first character that is not whitespace, a
    control character or an invisible format character; None if none is."""
    for position, character in enumerate(value):
        if character in "\t\r":
            return position  # formula starts themselves
        if not (character.isspace() or unicodedata.category(character) in ("Cc", "Cf")):
            return position
    return None


def _is_plain_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def export_artifact(artifact: Artifact, fmt: str) -> tuple[bytes, str, str]:
    """(body, file name, content type); KeyError for an unknown format, ExportRefused for CSV of a non-table."""
    extension, content_type = ARTIFACT_FORMATS[fmt]
    body = artifact_json(artifact) if fmt == "json" else artifact_csv(artifact)
    stem = file_stem(artifact.title, default=artifact.artifact_type.replace("_", "-") or "artifact")
    return body.encode(), f"{stem}.{extension}", content_type
