"""The DOCX and HTML exports as other readers see them (docs/adr/0053): the
DOCX read back by pandoc (headings, nested and restarted lists, links, code,
tables), its Word structures checked in the XML (numbering instances,
continuation paragraphs, task boxes, the code style, table alignment and
header row), its metadata (the person, the document's title and times, no
template leftovers), the HTML keeping images and showing the title once,
and both ending with the thread's charts and tables as data.

pandoc is a Debian package (.ci/run installs it); without it the round-trip
test skips, which CI turns into a failure (HAICO_REQUIRE_ALL_TESTS)."""

import io
import re
import shutil
import subprocess
import zipfile
from datetime import UTC

import pytest
from docx import Document as WordDocument
from docx.oxml.ns import qn

from workspace import exports
from workspace.models import DocumentRevision
from workspace.selectors import artifacts_for, document_for
from workspace.services import artifacts as artifact_services
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db

SOURCE = """# Launch plan

Intro with **bold**, *italic*, `code`, a [link](https://example.com) and <https://auto.example.org>.

## Steps

1. Alpha
2. Beta

A paragraph between.

1. Gamma
2. Delta

Another paragraph.

3. Third from three

- first
- second
  - nested one
  - nested two
    1. deep
- third

  Second paragraph of third.

- [ ] open task
- [x] done task

```python
def f():
    if x:
\treturn 1
```

| Name | Value | Note |
| :--- | ---: | :---: |
| Q1 | 120 | *ok* |
| Q2 | 1,300 | [x](https://x.example) |

> quoted
"""


def _document(thread, content=SOURCE, title="Launch plan"):
    document_services.document_save(thread=thread, title=title, content=content)
    return document_for(thread=thread)


def _docx(document, **kwargs) -> bytes:
    return exports.document_docx(document, **kwargs)


@pytest.fixture
def pandoc():
    path = shutil.which("pandoc")
    if path is None:
        pytest.skip("pandoc is not installed (apt-get install pandoc)")
    return path


def test_pandoc_reads_back_headings_lists_links_code_and_tables(thread, pandoc):
    body = _docx(_document(thread))
    markdown = subprocess.run(
        [pandoc, "-f", "docx", "-t", "gfm", "--wrap=none"], input=body, capture_output=True, check=True, timeout=60
    ).stdout.decode()

    assert markdown.startswith("# Launch plan\n")
    assert "\n## Steps\n" in markdown
    assert "[link](https://example.com)" in markdown
    assert markdown.count("auto.example.org") == 1  # an autolink is one link, not its text twice
    assert "<https://auto.example.org>" in markdown
    # Each numbered list counts from its own start.
    assert (
        "1.  Alpha\n\n2.  Beta\n\nA paragraph between.\n\n1.  Gamma\n\n2.  Delta\n\nAnother paragraph.\n\n3.  Third from three"
        in markdown
    )
    # Nested lists keep their levels, a numbered one inside bullets too.
    assert "-   second\n\n    -   nested one\n\n    -   nested two\n\n        1.  deep\n\n-   third" in markdown
    assert "-   [ ] open task" in markdown
    # The code block is code, its indentation as written (pandoc indents the block itself by four).
    assert "    def f():\n        if x:\n    \treturn 1\n" in markdown
    assert re.search(r"\|\s*\*\*Name\*\*\s*\|\s*\*\*Value\*\*\s*\|\s*\*\*Note\*\*\s*\|\n\|[-|:]+\|\n", markdown), markdown
    assert re.search(r"\|\s*Q1\s*\|\s*120\s*\|\s*\*ok\*\s*\|", markdown)
    assert re.search(r"\|\s*Q2\s*\|\s*1,300\s*\|\s*\[x\]\(https://x\.example\)\s*\|", markdown)
    assert "> quoted" in markdown


def _num_id(paragraph) -> tuple[int, int] | None:
    num_pr = paragraph._p.pPr.numPr if paragraph._p.pPr is not None else None
    return None if num_pr is None else (num_pr.numId.val, num_pr.ilvl.val)


def test_word_structures_lists_tasks_code_and_tables(thread):
    word = WordDocument(io.BytesIO(_docx(_document(thread))))
    paragraphs = {p.text: p for p in word.paragraphs}

    # One numbering instance per list, numbered ones restarting at their start.
    lists = [_num_id(paragraphs[t]) for t in ("Alpha", "Beta", "Gamma", "Third from three", "first", "nested one", "deep")]
    assert lists[0][0] == lists[1][0] and len({n for n, _ in lists}) == 6
    assert [level for _, level in lists] == [0, 0, 0, 0, 0, 1, 2]
    numbering = word.part.numbering_part.element
    starts = {
        int(num.get(qn("w:numId"))): [int(v) for v in num.xpath("./w:lvlOverride/w:startOverride/@w:val")]
        for num in numbering.xpath("./w:num")
    }
    assert [starts[n] for n, _ in lists[::2][:2]] + [starts[lists[3][0]]] == [[1], [1], [3]]
    # A list item's second paragraph stays in the item: indented, no bullet of its own.
    continuation = paragraphs["Second paragraph of third."]
    assert _num_id(continuation) is None and continuation.style.name == "List Paragraph"
    assert continuation.paragraph_format.left_indent == 720 * 635  # one level: 720 twips, in EMU
    # Task boxes kept.
    assert _num_id(paragraphs["☐ open task"]) and _num_id(paragraphs["☑ done task"])
    # Code: its own monospace style, every space and tab as written.
    code = paragraphs["def f():\n    if x:\n\treturn 1"]
    assert code.style.name == "Source Code" and code.style.font.name == "Courier New"
    inline_code = [r for r in paragraphs[next(t for t in paragraphs if t.startswith("Intro"))].runs if r.text == "code"]
    assert inline_code[0].style.name == "Verbatim Char"
    # Tables: the header row repeats on every page; each column keeps its alignment.
    table = word.tables[0]
    assert table.rows[0]._tr.trPr.find(qn("w:tblHeader")) is not None
    alignments = [[cell.paragraphs[0].alignment for cell in row.cells] for row in table.rows]
    assert [str(a) for a in alignments[1]] == ["LEFT (0)", "RIGHT (2)", "CENTER (1)"]
    assert [(h.text, h.address) for h in table.cell(2, 2).paragraphs[0].hyperlinks] == [("x", "https://x.example")]
    assert [r.italic for r in table.cell(1, 2).paragraphs[0].runs] == [True]


def test_a_numbered_list_starting_at_zero_starts_at_zero(thread, pandoc):
    """The preview numbers it 0, 1, 2; the DOCX numbered it 1, 2, 3."""
    body = _docx(_document(thread, "Steps:\n\n0. Prepare\n1. Run\n2. Check\n"))
    word = WordDocument(io.BytesIO(body))
    numbering = word.part.numbering_part.element
    assert numbering.xpath("./w:num/w:lvlOverride/w:startOverride/@w:val") == ["0"]
    markdown = subprocess.run([pandoc, "-f", "docx", "-t", "gfm"], input=body, capture_output=True, check=True).stdout.decode()
    assert "0.  Prepare" in markdown and "2.  Check" in markdown


def test_an_empty_item_and_one_opening_with_code_keep_their_bullets(thread):
    """A drafted list: "-" alone, and an item whose first block is code. Each keeps its bullet (they had none),
    the code stays under its own bullet."""
    text = "- first\n-\n- third\n-\n  ```\n  code\n  ```\n- fifth\n\n1. one\n2. ## Heading item\n3. - nested\n"
    word = WordDocument(io.BytesIO(_docx(_document(thread, text))))
    shown = [(p.text, _num_id(p) is not None) for p in word.paragraphs]
    assert shown == [
        ("first", True),
        ("", True),
        ("third", True),
        ("", True),
        ("code", False),
        ("fifth", True),
        ("one", True),
        ("", True),
        ("Heading item", False),
        ("", True),
        ("nested", True),
    ]


def test_each_link_address_is_one_relationship_every_link_to_it_points_at(thread, pandoc):
    """A reference list cites 300 sources, some twice: one relationship per address (the writer keeps its own
    table of them, docs/adr/0053), each link reads back with its own address."""
    refs = "".join(f"{n}. [source {n}](https://example.org/p/{n}) and <https://doi.org/10.1000/{n}>.\n" for n in range(1, 151))
    text = "# Report\n\nSee [the first](https://example.org/p/1) again, and [mail](mailto:a@example.org).\n\n" + refs
    body = _docx(_document(thread, text))
    word = WordDocument(io.BytesIO(body))
    links = {rel.rId: rel.target_ref for rel in word.part.rels.values() if rel.is_external}
    assert sorted(links.values()) == sorted(
        {"https://example.org/p/1", "mailto:a@example.org"}
        | {f"https://example.org/p/{n}" for n in range(1, 151)}
        | {f"https://doi.org/10.1000/{n}" for n in range(1, 151)}
    )
    used = [(h.text, links[h._hyperlink.rId]) for p in word.paragraphs for h in p.hyperlinks]
    assert used[0] == ("the first", "https://example.org/p/1") and ("source 1", "https://example.org/p/1") in used
    assert ("source 150", "https://example.org/p/150") in used and len(used) == 302
    markdown = subprocess.run([pandoc, "-f", "docx", "-t", "gfm"], input=body, capture_output=True, check=True).stdout.decode()
    assert "[source 77](https://example.org/p/77)" in markdown and "<https://doi.org/10.1000/77>" in markdown


def test_an_appendix_tables_cells_hold_their_text_as_written(thread):
    """The appendix's tables are written as XML (docs/adr/0053): markup characters, tabs and line breaks in a
    cell are text, characters XML cannot hold are left out, every row has every column."""
    document = _document(thread, content="Body.\n")
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title="Odd cells",
        turn_index=1,
        payload={
            "columns": ["Name", "Amount", "Note"],
            "rows": [['<b>&amp;</b> "q"', 1, "a\tb\nc"], ["ctrl\x01 end", 2.5], ["  spaced  ", None, "x"]],
        },
    )
    word = WordDocument(io.BytesIO(_docx(document, artifacts=artifacts_for(thread=thread))))
    (table,) = word.tables
    assert [[c.text for c in row.cells] for row in table.rows] == [
        ["Name", "Amount", "Note"],
        ['<b>&amp;</b> "q"', "1", "a\tb\nc"],
        ["ctrl end", "2.5", ""],
        ["  spaced  ", "", "x"],
    ]
    assert table.style.name == "Table Grid"
    assert [r.bold for c in table.rows[0].cells for r in c.paragraphs[0].runs] == [True, True, True]
    assert [r.bold for c in table.rows[1].cells for r in c.paragraphs[0].runs] == [None, None, None]
    assert [str(c.paragraphs[0].alignment) for c in table.rows[1].cells] == ["None", "RIGHT (2)", "None"]
    assert table.rows[0]._tr.trPr.find(qn("w:tblHeader")) is not None and table.rows[1]._tr.trPr is None
    assert len({c.width for row in table.rows for c in row.cells}) == 1
    # The paragraph after the table is after it, the section's properties stay last.
    body = word.element.body
    assert body[-1].tag == qn("w:sectPr") and body[-2].tag == qn("w:tbl")


def test_docx_metadata_is_the_persons_and_the_documents(thread):
    document_services.document_save(thread=thread, title="Draft", content="One.\n")
    DocumentRevision.objects.filter(document__thread=thread, version=1).update(created_at="2026-03-04T05:06:07Z")
    document = _document(thread, content="Two.\n", title="Field guide")
    body = _docx(document, author="Ada Lovelace")
    word = WordDocument(io.BytesIO(body))
    properties = word.core_properties
    assert properties.author == "Ada Lovelace" and properties.last_modified_by == "Ada Lovelace"
    assert properties.title == "Field guide"
    assert properties.comments == ""
    assert properties.created.replace(tzinfo=UTC).isoformat() == "2026-03-04T05:06:07+00:00"
    assert abs((properties.modified.replace(tzinfo=UTC) - document.updated_at).total_seconds()) < 1
    assert properties.revision == 2
    names = zipfile.ZipFile(io.BytesIO(body)).namelist()
    assert not any("thumbnail" in name for name in names)
    files = zipfile.ZipFile(io.BytesIO(body))
    everything = b"".join(files.read(name) for name in names)
    assert b"python-docx" not in everything and b"2013-" not in files.read("docProps/core.xml")
    assert b"<Application>HAICO</Application>" in files.read("docProps/app.xml")
    assert b"Macintosh" not in files.read("docProps/app.xml")
    # Nobody named: HAICO.
    assert WordDocument(io.BytesIO(_docx(document))).core_properties.author == "HAICO"


def test_html_keeps_images_and_shows_the_title_once(thread):
    content = (
        'Intro with an image ![a chart of sales](https://img.example/sales.png "Sales"),'
        " ![inline](data:image/png;base64,iVBORw0KGgo=) and ![nearby](pics/x.png).\n"
    )
    html = exports.document_html(_document(thread, content=content, title="Sales report"))
    main = html.split("<main>")[1]
    assert main.count("Sales report") == 1 and "<h1>Sales report</h1>" in main
    assert '<img src="https://img.example/sales.png" alt="a chart of sales" title="Sales"' in main
    assert 'referrerpolicy="no-referrer"' in main
    # Not a web image: its alt text only.
    for alt in ("inline", "nearby"):
        (image,) = re.findall(rf'<img[^>]*alt="{alt}"[^>]*>', main)
        assert "src=" not in image
    assert "data:" not in main and "pics/" not in main
    # A document that opens with its own heading shows that heading only.
    titled = exports.document_html(_document(thread, content="# Sales report\n\nText.\n", title="Sales report"))
    assert titled.split("<main>")[1].count("Sales report") == 1
    assert "img-src *" in titled.split("<main>")[0] and "script-src" not in titled
    # The app's own preview still shows no image (docs/adr/0053).
    from workspace.markdown import render_markdown

    assert "<img" not in render_markdown(content)


def _artifacts(thread):
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="bar_chart",
        title="Revenue",
        turn_index=1,
        payload={"x_axis_title": "Quarter", "data": [{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}]},
    )
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="document",
        title="A note",
        turn_index=1,
        payload={"content": "not a table"},
    )
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title="Costs <b>",
        turn_index=2,
        payload={"columns": ["Item", "€"], "rows": [["Paper", 12.5], ["Ink", "3"]]},
    )
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="line_chart",
        title="Broken",
        turn_index=3,
        payload={"data": []},
    )
    return artifacts_for(thread=thread)


def test_html_and_docx_end_with_the_threads_charts_and_tables(thread):
    document = _document(thread, content="# Report\n\nBody.\n")
    artifacts = _artifacts(thread)

    html = exports.document_html(document, artifacts=artifacts)
    appendix = html.split('<section class="artifacts"')[1]
    assert [m for m in re.findall(r"<h2>(.*?)</h2>", appendix)] == ["Revenue", "Costs &lt;b&gt;", "Broken"]
    assert "Bar chart from turn 1: the numbers it shows." in appendix
    assert '<th scope="col">Quarter</th><th scope="col" class="num">Value</th>' in appendix
    assert '<td>Q2</td><td class="num">180</td>' in appendix
    assert '<td>Paper</td><td class="num">12.5</td>' in appendix
    assert "A note" not in appendix and "Its data could not be read" in appendix

    word = WordDocument(io.BytesIO(_docx(document, artifacts=artifacts)))
    headings = [(p.style.name, p.text) for p in word.paragraphs if p.style.name.startswith("Heading")]
    assert headings == [
        ("Heading 1", "Report"),
        ("Heading 1", "Artifacts"),
        ("Heading 2", "Revenue"),
        ("Heading 2", "Costs <b>"),
        ("Heading 2", "Broken"),
    ]
    assert [[c.text for c in row.cells] for row in word.tables[0].rows] == [["Quarter", "Value"], ["Q1", "120"], ["Q2", "180"]]
    assert [[c.text for c in row.cells] for row in word.tables[1].rows] == [["Item", "€"], ["Paper", "12.5"], ["Ink", "3"]]
    assert str(word.tables[1].cell(1, 1).paragraphs[0].alignment) == "RIGHT (2)"
    assert word.tables[1].rows[0]._tr.trPr.find(qn("w:tblHeader")) is not None

    # No chart or table: no appendix.
    assert "Artifacts" not in exports.document_html(document)
    assert "Artifacts" not in [p.text for p in WordDocument(io.BytesIO(_docx(document))).paragraphs]


def test_a_csv_starts_with_a_byte_order_mark(thread):
    table = artifact_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title="Prices",
        turn_index=1,
        payload={"columns": ["Item", "Preis €"], "rows": [["Käse", "4,50 €"]]},
    )
    body, filename, content_type = exports.export_artifact(table, "csv")
    assert body.startswith(b"\xef\xbb\xbf") and content_type == "text/csv; charset=utf-8"
    assert body.decode("utf-8-sig") == "Item,Preis €\r\nKäse,4,50 €\r\n".replace("4,50 €", '"4,50 €"')
    assert exports.export_artifact(table, "json")[0].startswith(b"{")  # JSON has none


def test_text_xml_cannot_hold_deep_lists_and_long_names_still_export(thread):
    """Control characters are allowed in the document (the preview shows
    nothing for them) but not in XML; lists nest deeper than Word's nine
    levels; a full name can be longer than a core property may be."""
    deep = "".join(f"{'  ' * n}- level {n}\n" for n in range(12))
    content = f"Bell\x07 and vertical\x0b tab.\n\n| h\x02 | x |\n| --- | --- |\n| v | w |\n\n{deep}"
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title="Odd\x01 table",
        turn_index=1,
        payload={"columns": ["a\x1f"], "rows": [["b\x0c"]]},
    )
    document = _document(thread, content=content, title="Odd")
    word = WordDocument(io.BytesIO(_docx(document, author="A" * 300, artifacts=artifacts_for(thread=thread))))
    texts = [p.text for p in word.paragraphs]
    assert "Bell and vertical tab." in texts and "level 8" in texts and "level 11" in texts and "Odd table" in texts
    assert [c.text for c in word.tables[0].rows[0].cells] == ["h", "x"]
    assert [c.text for c in word.tables[1].rows[0].cells] == ["a"]
    assert word.core_properties.author == "A" * 255
    levels = [_num_id(p)[1] for p in word.paragraphs if _num_id(p)]
    assert levels == [*range(9), 8, 8, 8]  # deeper than Word numbers: at its deepest level (docs/adr/0128)


@pytest.mark.heavy  # a 2 000-row table through pandoc
def test_a_long_report_with_a_2000_row_table_of_its_own_exports_it_whole_and_a_2000_row_artifacts_first_rows(thread):
    # Before, each cell was found by listing all of its table's cells: a
    # 2 000-row table took six minutes. An artifact's table carries its first
    # 200 rows, its CSV every row (docs/adr/0141).
    rows = [[f"Item {n}", n * 1.5, f"note {n}"] for n in range(2_000)]
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title="Stock",
        turn_index=1,
        payload={"columns": ["Item", "Count", "Note"], "rows": rows},
    )
    own_table = "| Year | Sales |\n|---|---:|\n" + "".join(f"| {1000 + n} | {n * 7} |\n" for n in range(2_000))
    sections = "".join(f"## Part {n}\n\nParagraph {n} with *emphasis* and `code`, as reports go on.\n\n" for n in range(1, 1_500))
    document = _document(thread, content=sections + own_table)
    assert len(document.content) > 100_000

    word = WordDocument(io.BytesIO(_docx(document, artifacts=artifacts_for(thread=thread))))
    own, stock = word.tables
    assert len(own.rows) == 2_001 and [c.text for c in own.rows[-1].cells] == ["2999", "13993"]
    assert len(stock.rows) == 201
    assert [c.text for c in stock.rows[1].cells] == ["Item 0", "0.0", "note 0"]
    assert [c.text for c in stock.rows[-1].cells] == ["Item 199", "298.5", "note 199"]
    assert "The first 200 of 2000 rows; the table’s CSV export in the thread has every row." in word.paragraphs[-1].text
    headings = [p.text for p in word.paragraphs if p.style.name == "Heading 2"]
    assert headings[0] == "Part 1" and headings[-1] == "Stock" and len(headings) == 1_500
