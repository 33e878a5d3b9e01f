"""The document and the artifacts as files a person takes to other tools
(docs/adr/0025).

Every format is produced from the stored text: Markdown is the text as
written; HTML is the same sanitised rendering the preview shows
(workspace.markdown, images kept), wrapped in a page with its own readable
styling and no scripts; DOCX is built with python-docx from the markdown
parser's tokens, so headings, lists (each numbered list counting from its
own start, nested ones at their level), links, emphasis, code, quotes and
tables become Word's own structures rather than a picture of the HTML.
HTML and DOCX end with the thread's charts and tables as data tables
(docs/adr/0053). A CSV starts with a byte order mark.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import unicodedata
from dataclasses import dataclass
from xml.sax.saxutils import escape as escape_xml

from django.template.loader import render_to_string
from django.utils import timezone

from .artifact_registry import PayloadError, build_chart, build_data_table, type_label
from .markdown import markdown_tokens, render_markdown_for_export
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
CSV_BOM = "\ufeff"
FILENAME_MAX_CHARS = 80


class ExportRefused(Exception):
    """The thing asked for has no such format (a CSV of a document artifact)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def file_stem(title: str, *, default: str) -> str:
    """A safe ASCII file name from a title the person or the model wrote:
    letters, digits, dashes; never empty, never a path. `default` (for a
    title with no ASCII letter or digit) is cleaned alike: it may come from
    stored data too, such as an imported artifact's type."""
    return _stem(title) or _stem(default) or "file"


def _stem(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]+", "-", ascii_text).strip("-").lower()[:FILENAME_MAX_CHARS].strip("-")


# -- the document --


def document_markdown(document: Document) -> str:
    return document.content


def _starts_with_title(content: str) -> bool:
    """Whether the text opens with a level-one heading, which then is the
    page's visible title (else the document's title is shown above it)."""
    tokens = markdown_tokens(content)
    return bool(tokens) and tokens[0].type == "heading_open" and tokens[0].tag == "h1"


def document_html(document: Document, *, artifacts=()) -> str:
    return render_to_string(
        "workspace/exports/document.html",
        {
            "title": document.title,
            "show_title": not _starts_with_title(document.content),
            "body": render_markdown_for_export(document.content),
            "artifacts": artifact_tables(artifacts),
        },
    )


def document_docx(document: Document, *, author: str = "", artifacts=()) -> bytes:
    # Imported here: python-docx loads lxml and its template, which only exports need.
    from docx import Document as WordDocument

    word = WordDocument()
    _set_properties(word, document, author=author or DEFAULT_AUTHOR)
    writer = _DocxWriter(word)
    writer.write(markdown_tokens(document.content))
    writer.appendix(artifact_tables(artifacts))
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


def export_document(document: Document, fmt: str, *, author: str = "", artifacts=()) -> tuple[bytes, str, str]:
    """(body, file name, content type) of the document in `fmt`; KeyError for an unknown format.
    `author`: the person exporting (the DOCX's creator); `artifacts`: the thread's, whose
    charts and tables the HTML and DOCX end with."""
    extension, content_type = DOCUMENT_FORMATS[fmt]
    if fmt == "markdown":
        body = document_markdown(document).encode()
    elif fmt == "html":
        body = document_html(document, artifacts=artifacts).encode()
    else:
        body = document_docx(document, author=author, artifacts=artifacts)
    return body, f"{file_stem(document.title, default='document')}.{extension}", content_type


# -- the artifacts appendix --


@dataclass(frozen=True)
class ArtifactTable:
    """A chart's numbers or a table's cells, as the Data table shows them,
    for the end of a document export (docs/adr/0053)."""

    title: str
    kind: str  # "bar chart", "table", ...
    turn: int
    columns: list[str]
    rows: list[list[str]]
    right_aligned: list[bool]  # per column: holds numbers
    problem: str = ""  # why the data could not be read (then no columns)
    row_count: int = 0  # how many rows it has, of which `rows` are the first

    @property
    def header_cells(self) -> list[tuple[str, bool]]:
        return list(zip(self.columns, self.right_aligned))

    @property
    def body_rows(self) -> list[list[tuple[str, bool]]]:
        return [list(zip(row, self.right_aligned)) for row in self.rows]

    @property
    def note(self) -> str:
        what = "the numbers it shows" if self.kind.endswith("chart") else "its cells"
        note = f"{self.kind[:1].upper()}{self.kind[1:]} from turn {self.turn}: {what}."
        if self.row_count > len(self.rows):
            note += (
                f" The first {len(self.rows)} of {self.row_count} rows; the {self.kind}’s CSV export in the thread has every row."
            )
        return note


# How many rows of each chart or table the document's export carries: three
# 10 000-row tables made a 15 s DOCX and a 5 MB HTML page in the request; a
# document is read, the CSV export holds every row (docs/adr/0141).
APPENDIX_ROWS = 200


def artifact_tables(artifacts) -> list[ArtifactTable]:
    """The charts and tables among `artifacts`, oldest first, each with its
    first APPENDIX_ROWS rows."""
    tables = []
    for artifact in sorted(artifacts, key=lambda a: a.pk or 0):
        if artifact.artifact_type not in CSV_TYPES:
            continue
        kind = type_label(artifact.artifact_type)
        try:
            tables.append(_artifact_table(artifact, kind))
        except PayloadError as exc:
            title = artifact.title or f"Untitled {kind}"
            tables.append(ArtifactTable(title, kind, artifact.turn_index, [], [], [], problem=exc.message))
    return tables


def _artifact_table(artifact: Artifact, kind: str) -> ArtifactTable:
    """As the centre panel's Data table shows it (the same builders); PayloadError
    when the payload cannot be read."""
    payload = artifact.payload if isinstance(artifact.payload, dict) else None
    if payload is None:
        raise PayloadError("Its data is not an object.")
    if artifact.artifact_type == "data_table":
        data = build_data_table(payload, artifact, rows_shown=APPENDIX_ROWS)
        rows = [[cell["text"] for cell in row] for row in data["rows"]]
        # A column of numbers (and blanks) is right-aligned, as numbers are in a spreadsheet.
        numeric = [
            bool(data["rows"]) and all(row[c]["sort"] is not None or not row[c]["text"] for row in data["rows"])
            for c in range(len(data["columns"]))
        ]
        return ArtifactTable(
            data["title"], kind, artifact.turn_index, data["columns"], rows, numeric, row_count=data["row_count"]
        )
    data = build_chart(payload, artifact, rows_shown=APPENDIX_ROWS)
    columns = data["table_columns"]
    numeric = [False] + [True] * (len(columns) - 1)  # the labels, then one column of numbers per series
    return ArtifactTable(
        data["title"], kind, artifact.turn_index, columns, data["table_rows"], numeric, row_count=data["row_count"]
    )


# -- DOCX --

DEFAULT_AUTHOR = "HAICO"
# Links and images that become real hyperlinks; anything else stays text
# (markdown-it already drops javascript: and the like).
LINK_SCHEMES = ("http://", "https://", "mailto:")
# The names pandoc reads as a code block and as code within a line.
CODE_STYLE, INLINE_CODE_STYLE = "Source Code", "Verbatim Char"
LIST_INDENT_TWIPS = 720  # per list level
LIST_LEVELS = 9  # what Word's numbering holds
PROPERTY_MAX_CHARS = 255  # python-docx refuses longer core properties
BULLETS = ("•", "◦", "▪")
CHECKBOXES = {True: "☑ ", False: "☐ "}
# What XML 1.0 cannot hold (lxml refuses it): control characters but tab and
# line breaks, lone surrogates, and the two non-characters. Nobody sees them
# in the preview, so the DOCX leaves them out.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("", text)


APP_PROPERTIES = (
    b"<?xml version='1.0' encoding='UTF-8' standalone='yes'?>\n"
    b'<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" '
    b'xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">'
    b"<Application>HAICO</Application></Properties>"
)


def _utc(moment):
    # python-docx writes the datetime as given, followed by "Z".
    return moment.astimezone(dt.UTC).replace(tzinfo=None)


def _set_properties(word, document: Document, *, author: str) -> None:
    """The file's own metadata, not python-docx's template's: the person as
    creator, the document's title and times, no description, no thumbnail."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT

    now = timezone.now()
    first = document.revisions.order_by("version").values_list("created_at", flat=True).first() if document.pk else None
    properties = word.core_properties
    author = _xml_safe(author)[:PROPERTY_MAX_CHARS]
    properties.author = author
    properties.last_modified_by = author
    properties.title = _xml_safe(document.title)[:PROPERTY_MAX_CHARS]
    properties.comments = ""  # the template says "generated by python-docx"
    properties.created = _utc(first or now)
    properties.modified = _utc(document.updated_at if document.pk and document.updated_at else now)
    properties.revision = max(1, document.version)
    package = word.part.package
    for rel_id, rel in list(package.rels.items()):
        if rel.reltype == RT.THUMBNAIL:  # the template's blank page
            del package.rels[rel_id]
        elif rel.reltype == RT.EXTENDED_PROPERTIES:
            rel.target_part._blob = APP_PROPERTIES  # the template's says "Microsoft Macintosh Word"


@dataclass
class _List:
    ordered: bool
    num_id: int
    level: int  # 0-based nesting


@dataclass
class _Item:
    numbered: bool = False  # its first paragraph (the numbered or bulleted one) is written


class _DocxWriter:
    """Markdown tokens → Word paragraphs, runs, lists and tables.

    Block tokens open and close; inline tokens carry the text of one
    paragraph, heading or cell as children (text, emphasis, code, links,
    images, task checkboxes). Each list gets its own Word numbering
    instance (w:num), so every numbered list starts at its own first
    number, and its level is the nesting depth; a list item's later
    paragraphs are indented under it, unnumbered.
    """

    def __init__(self, word):
        self.word = word
        self.lists: list[_List] = []
        self.items: list[_Item] = []
        self.quote_depth = 0
        self.heading_level: int | None = None
        self.table: list[list[tuple]] | None = None  # rows of (inline token, alignment)
        self.cell_alignment: str | None = None
        self._numbering = None
        self._abstract_ids: dict[bool, int] = {}
        self._style_ids: dict[str, str] = {}
        self._link_ids: dict[str, str] = {}  # url -> relationship id
        self._next_rel = 1  # no relationship id below this one is free
        self._body_end = None  # the body's w:sectPr, which stays last
        self._styles()

    # -- styles and numbering --

    def _styles(self) -> None:
        from docx.enum.style import WD_STYLE_TYPE
        from docx.shared import Pt, RGBColor, Twips

        styles = self.word.styles
        code = styles.add_style(CODE_STYLE, WD_STYLE_TYPE.PARAGRAPH)
        code.base_style = styles["Normal"]
        code.font.name = "Courier New"
        code.font.size = Pt(9.5)
        code.paragraph_format.left_indent = Twips(360)
        code.paragraph_format.space_before = Pt(4)
        code.paragraph_format.space_after = Pt(4)
        verbatim = styles.add_style(INLINE_CODE_STYLE, WD_STYLE_TYPE.CHARACTER)
        verbatim.font.name = "Courier New"
        link = styles.add_style("Hyperlink", WD_STYLE_TYPE.CHARACTER)
        link.font.color.rgb = RGBColor(0x0B, 0x57, 0xD0)
        link.font.underline = True

    # python-docx finds a style named in add_paragraph or run.style by
    # scanning every style of the file, twice, for each paragraph and run: a
    # 150 000-character report took 2 s of its 4 to export. Each name is
    # looked up once here and the paragraph or run is given its style's id.

    def _style_id(self, name: str) -> str:
        style_id = self._style_ids.get(name)
        if style_id is None:
            style_id = self._style_ids[name] = self.word.styles[name].style_id
        return style_id

    def _append(self, element) -> None:
        """`element` (a w:p or w:tbl) at the end of the body, before its
        section properties. python-docx's add_paragraph and add_table look
        for those by going through every paragraph and table already there,
        for each new one, so a long report's export grew with the square of
        its length (docs/adr/0053)."""
        if self._body_end is None:
            self._body_end = self.word.element.body.sectPr
        if self._body_end is None:
            self.word.element.body.append(element)
        else:
            self._body_end.addprevious(element)

    def _add_paragraph(self, style: str | None = None, text: str = ""):
        from docx.oxml import OxmlElement
        from docx.text.paragraph import Paragraph

        element = OxmlElement("w:p")
        self._append(element)
        paragraph = Paragraph(element, self.word._body)
        if text:
            paragraph.add_run(text)
        if style is not None:
            paragraph._p.get_or_add_pPr().style = self._style_id(style)
        return paragraph

    def _add_heading(self, text: str, level: int):
        return self._add_paragraph("Title" if level == 0 else f"Heading {level}", text)

    def _set_run_style(self, run, style: str) -> None:
        run._r.get_or_add_rPr().style = self._style_id(style)

    def _num(self, ordered: bool, level: int, start: int) -> int:
        """A new numbering instance for one list: numbered lists restart at `start`."""
        from docx.oxml import parse_xml
        from docx.oxml.ns import nsdecls

        if self._numbering is None:
            self._numbering = self.word.part.numbering_part.element
        if ordered not in self._abstract_ids:
            existing = [int(v) for v in self._numbering.xpath("./w:abstractNum/@w:abstractNumId")]
            abstract_id = max(existing, default=-1) + 1
            levels = "".join(self._level_xml(ordered, n) for n in range(LIST_LEVELS))
            abstract = parse_xml(
                f'<w:abstractNum {nsdecls("w")} w:abstractNumId="{abstract_id}">'
                f'<w:multiLevelType w:val="multilevel"/>{levels}</w:abstractNum>'
            )
            # The schema wants every w:abstractNum before the first w:num.
            nums = self._numbering.xpath("./w:num")
            if nums:
                nums[0].addprevious(abstract)
            else:
                self._numbering.append(abstract)
            self._abstract_ids[ordered] = abstract_id
        num = self._numbering.add_num(self._abstract_ids[ordered])
        if ordered:
            # Without a start override Word continues the count of the last list of the same kind.
            override = parse_xml(
                f'<w:lvlOverride {nsdecls("w")} w:ilvl="{level}"><w:startOverride w:val="{start}"/></w:lvlOverride>'
            )
            num.append(override)
        return num.numId

    @staticmethod
    def _level_xml(ordered: bool, level: int) -> str:
        indent = f'<w:pPr><w:ind w:left="{LIST_INDENT_TWIPS * (level + 1)}" w:hanging="360"/></w:pPr>'
        if ordered:
            return (
                f'<w:lvl w:ilvl="{level}"><w:start w:val="1"/><w:numFmt w:val="decimal"/>'
                f'<w:lvlText w:val="%{level + 1}."/><w:lvlJc w:val="left"/>{indent}</w:lvl>'
            )
        bullet = BULLETS[level % len(BULLETS)]
        return (
            f'<w:lvl w:ilvl="{level}"><w:start w:val="1"/><w:numFmt w:val="bullet"/>'
            f'<w:lvlText w:val="{bullet}"/><w:lvlJc w:val="left"/>{indent}</w:lvl>'
        )

    # -- blocks --

    def write(self, tokens) -> None:
        for token in tokens:
            kind = token.type
            if kind == "heading_open":
                self._item_marker()
                self.heading_level = int(token.tag[1])
            elif kind == "heading_close":
                self.heading_level = None
            elif kind in ("bullet_list_open", "ordered_list_open"):
                self._item_marker()  # a list opening an item: the item keeps its own marker
                ordered = kind == "ordered_list_open"
                # markdown-it gives a start only when it is not 1; 0 is one ("0. Prepare").
                given = token.attrGet("start") if ordered else None
                start = int(given) if given is not None else 1
                level = min(len(self.lists), LIST_LEVELS - 1)
                self.lists.append(_List(ordered, self._num(ordered, level, start), level))
            elif kind in ("bullet_list_close", "ordered_list_close"):
                self.lists.pop()
            elif kind == "list_item_open":
                self.items.append(_Item())
            elif kind == "list_item_close":
                self._item_marker()  # an empty item ("-" alone) is still a bullet
                self.items.pop()
            elif kind == "blockquote_open":
                self.quote_depth += 1
            elif kind == "blockquote_close":
                self.quote_depth -= 1
            elif kind in ("fence", "code_block"):
                self._item_marker()
                self._code(token.content)
            elif kind == "hr":
                self._item_marker()
                self._add_paragraph(text="* * *").alignment = 1  # centred
            elif kind == "table_open":
                self._item_marker()
                self.table = []
            elif kind == "tr_open" and self.table is not None:
                self.table.append([])
            elif kind in ("th_open", "td_open"):
                self.cell_alignment = _alignment(token.attrGet("style"))
            elif kind == "table_close":
                self._table(self.table or [])
                self.table = None
            elif kind == "inline":
                if self.table is not None:
                    if self.table:
                        self.table[-1].append((token, self.cell_alignment))
                else:
                    self._inline(self._paragraph(), token)

    def _item_marker(self) -> None:
        """The current list item's numbered or bulleted paragraph, empty, when
        the item has none yet and what comes is not its text: nothing (an
        empty item), a code block, a table, a rule, a heading or a list. The
        marker went on the item's first text paragraph, so such an item lost
        it (or gave it to a later item's text)."""
        if self.lists and self.items and not self.items[-1].numbered:
            self._paragraph()

    def _paragraph(self):
        from docx.shared import Twips

        if self.heading_level is not None:
            return self._add_heading("", min(self.heading_level, 9))
        if self.lists and self.items:
            current, item = self.lists[-1], self.items[-1]
            depth = len(self.lists)
            if not item.numbered:
                item.numbered = True
                base = "List Number" if current.ordered else "List Bullet"
                paragraph = self._add_paragraph(base if depth == 1 else f"{base} {min(depth, 3)}")
                num_pr = paragraph._p.get_or_add_pPr().get_or_add_numPr()
                num_pr.get_or_add_ilvl().val = current.level
                num_pr.get_or_add_numId().val = current.num_id
                return paragraph
            # A later paragraph of the same item: under its text, not a new bullet.
            paragraph = self._add_paragraph("List Paragraph")
            paragraph.paragraph_format.left_indent = Twips(LIST_INDENT_TWIPS * depth)
            return paragraph
        if self.quote_depth:
            return self._add_paragraph("Quote")
        return self._add_paragraph()

    def _code(self, text: str) -> None:
        from docx.shared import Twips

        paragraph = self._add_paragraph(CODE_STYLE)
        if self.lists:
            paragraph.paragraph_format.left_indent = Twips(LIST_INDENT_TWIPS * len(self.lists) + 360)
        lines = text.rstrip("\n").split("\n")
        for n, line in enumerate(lines):
            run = paragraph.add_run(_xml_safe(line))  # leading spaces and tabs kept as written
            if n < len(lines) - 1:
                run.add_break()

    def _table(self, rows: list[list[tuple]]) -> None:
        if not rows:
            return
        width = max(len(row) for row in rows)
        from docx.oxml.table import CT_Tbl
        from docx.table import Table

        element = CT_Tbl.new_tbl(len(rows), width, self.word._block_width)
        self._append(element)
        table = Table(element, self.word._body)
        table._tbl.tblStyle_val = self._style_id("Table Grid")
        cells = _cells(table)
        for r, row in enumerate(rows):
            for c, (inline, alignment) in enumerate(row):
                paragraph = cells[r * width + c].paragraphs[0]
                self._inline(paragraph, inline, bold=r == 0)
                if alignment is not None:
                    paragraph.alignment = alignment
        _repeat_header_row(table)

    # -- inline --

    def _inline(self, paragraph, token, *, bold: bool = False) -> None:
        emphasis = {"strong": int(bold), "em": 0, "s": 0}
        link = None  # the w:hyperlink the runs go into, while inside a link

        def add(text: str, *, code: bool = False):
            run = paragraph.add_run(_xml_safe(text))
            run.bold = emphasis["strong"] > 0 or None
            run.italic = emphasis["em"] > 0 or None
            run.font.strike = emphasis["s"] > 0 or None
            if code:
                self._set_run_style(run, INLINE_CODE_STYLE)
                run.font.name = "Courier New"  # also where the style is not known
            elif link is not None:
                self._set_run_style(run, "Hyperlink")
            if link is not None:
                link.append(run._r)
            return run

        for child in token.children or []:
            kind = child.type
            if kind in ("strong_open", "em_open", "s_open"):
                emphasis[kind[:-5]] += 1
            elif kind in ("strong_close", "em_close", "s_close"):
                emphasis[kind[:-6]] -= 1
            elif kind == "link_open":
                link = self._hyperlink(paragraph, child.attrGet("href"))
            elif kind == "link_close":
                link = None
            elif kind == "softbreak":
                add(" ")  # as the preview shows it
            elif kind == "hardbreak":
                add("").add_break()
            elif kind in ("text", "code_inline"):
                add(child.content, code=kind == "code_inline")
            elif kind == "html_inline" and "checkbox" in child.content:
                add(CHECKBOXES["checked" in child.content])  # a task list item's box
            elif kind == "image":  # never fetched: its description, linked to where it is
                outer, link = link, link if link is not None else self._hyperlink(paragraph, child.attrGet("src"))
                add(child.content or "image")
                link = outer

    def _hyperlink(self, paragraph, url: str | None):
        """A w:hyperlink to `url` at the end of `paragraph`, or None for a URL that stays text."""
        from docx.oxml import OxmlElement
        from docx.oxml.ns import qn

        if not url or not url.lower().startswith(LINK_SCHEMES):
            return None
        element = OxmlElement("w:hyperlink")
        element.set(qn("r:id"), self._link_id(paragraph.part, url))
        paragraph._p.append(element)
        return element

    def _link_id(self, part, url: str) -> str:
        """The id of the document's one relationship to `url`, added the first
        time. python-docx's relate_to compares a new link with every earlier
        relationship, and picks its id by trying rId1, rId2, ... in turn: a
        100 000-character report citing 3 000 links took 5.4 s to export,
        against 0.9 s without them (docs/adr/0053, bench/document_exports.py)."""
        from docx.opc.constants import RELATIONSHIP_TYPE as RT

        link_id = self._link_ids.get(url)
        if link_id is None:
            rels = part.rels
            while f"rId{self._next_rel}" in rels:
                self._next_rel += 1
            link_id = self._link_ids[url] = f"rId{self._next_rel}"
            rels.add_relationship(RT.HYPERLINK, url, link_id, is_external=True)
        return link_id

    # -- the artifacts --

    def appendix(self, tables: list[ArtifactTable]) -> None:
        if not tables:
            return
        self._add_heading("Artifacts", 1)
        for artifact in tables:
            self._add_heading(_xml_safe(artifact.title), 2)
            self._add_paragraph(text=artifact.note)
            if artifact.problem:
                self._add_paragraph(text=_xml_safe(f"Its data could not be read: {artifact.problem}"))
                continue
            self._append(self._appendix_table(artifact))

    def _appendix_table(self, artifact: ArtifactTable):
        """The artifact's rows as a Word table, written as XML and parsed once:
        the same table python-docx makes (Table Grid, even columns, the header
        row bold and repeated on every page, number columns right-aligned),
        without its objects for each cell, run and property: a report in a
        thread with 50 artifacts of 2 000 rows took 7.5 s to export, 2.4 s
        now (docs/adr/0053, bench/document_exports.py)."""
        from docx.oxml import parse_xml
        from docx.oxml.ns import nsdecls

        width = len(artifact.columns)
        column = int(self.word._block_width / width / EMU_PER_TWIP)
        cell_properties = f'<w:tcPr><w:tcW w:type="dxa" w:w="{column}"/></w:tcPr>'
        aligned = ['<w:pPr><w:jc w:val="right"/></w:pPr>' if right else "" for right in artifact.right_aligned]
        rows = []
        for r, row in enumerate([artifact.columns, *artifact.rows]):
            bold = "<w:rPr><w:b/></w:rPr>" if r == 0 else ""
            cells = "".join(
                f"<w:tc>{cell_properties}<w:p>{aligned[c]}<w:r>{bold}{_run_xml(text)}</w:r></w:p></w:tc>"
                for c, text in enumerate([*row, *[""] * (width - len(row))][:width])
            )
            header = "<w:trPr><w:tblHeader/></w:trPr>" if r == 0 else ""
            rows.append(f"<w:tr>{header}{cells}</w:tr>")
        grid = f'<w:gridCol w:w="{column}"/>' * width
        return parse_xml(
            f'<w:tbl {nsdecls("w")}><w:tblPr><w:tblStyle w:val="{escape_xml(self._style_id("Table Grid"))}"/>'
            '<w:tblW w:type="auto" w:w="0"/><w:tblLook w:firstColumn="1" w:firstRow="1" w:lastColumn="0" '
            'w:lastRow="0" w:noHBand="0" w:noVBand="1" w:val="04A0"/></w:tblPr>'
            f"<w:tblGrid>{grid}</w:tblGrid>{''.join(rows)}</w:tbl>"
        )


EMU_PER_TWIP = 635


def _run_xml(text: str) -> str:
    """A run's content for `text`, as python-docx's run.text writes it: tabs
    as w:tab, line breaks as w:br, the rest as w:t."""
    parts = []
    for piece in re.split(r"(\t|\r\n|\n|\r)", _xml_safe(text)):
        if piece == "\t":
            parts.append("<w:tab/>")
        elif piece in ("\n", "\r", "\r\n"):
            parts.append("<w:br/>")
        elif piece:
            parts.append(f'<w:t xml:space="preserve">{escape_xml(piece)}</w:t>')
    return "".join(parts)


def _cells(table) -> list:
    """Every cell of a new table (no merged cells), row by row. python-docx's
    table.cell(r, c) lists all the table's cells to return one, so filling a
    table cell by cell took time growing with the square of its size: a
    2 000-row table of a thread made its document's export take 6 minutes."""
    return table._cells


def _alignment(style: str | None):
    from docx.enum.text import WD_ALIGN_PARAGRAPH

    match = re.search(r"text-align:\s*(left|center|right)", style or "")
    return {"left": WD_ALIGN_PARAGRAPH.LEFT, "center": WD_ALIGN_PARAGRAPH.CENTER, "right": WD_ALIGN_PARAGRAPH.RIGHT}.get(
        match.group(1) if match else "", None
    )


def _repeat_header_row(table) -> None:
    """The first row is the table's header: Word repeats it on every page."""
    from docx.oxml import OxmlElement

    table.rows[0]._tr.get_or_add_trPr().append(OxmlElement("w:tblHeader"))


# -- artifacts --


def artifact_json(artifact: Artifact) -> str:
    return (
        json.dumps(
            {
                "artifact_type": artifact.artifact_type,
                "title": artifact.title,
                "turn": artifact.turn_index,
                "payload": artifact.payload,
            },
            indent=2,
            ensure_ascii=False,
            default=str,
        )
        + "\n"
    )


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
        raise ExportRefused(f"This artifact's data could not be read ({exc.message}), so it cannot be exported as CSV.") from exc
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
    # A CSV starts with the UTF-8 byte order mark: without it spreadsheets
    # (Excel above all) guess a legacy encoding and garble "€" or "ü".
    body = artifact_json(artifact) if fmt == "json" else CSV_BOM + artifact_csv(artifact)
    stem = file_stem(artifact.title, default=artifact.artifact_type or "artifact")
    return body.encode(), f"{stem}.{extension}", content_type
