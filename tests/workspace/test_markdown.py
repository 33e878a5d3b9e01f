"""render_markdown: a real markdown parser, then a sanitiser."""

import re

import pytest
from django.utils.safestring import SafeString

from workspace.markdown import render_markdown


def test_markdown_renders_headings_emphasis_lists_tables_and_code():
    html = render_markdown(
        "# Plan\n\nSome *emphasis* and **strong** and ~~gone~~.\n\n- one\n- two\n\n"
        "| Q | Revenue |\n|---|--:|\n| Q1 | 120 |\n\n```python\nprint(1)\n```\n"
    )
    assert "<h1>Plan</h1>" in html
    assert "<em>emphasis</em>" in html and "<strong>strong</strong>" in html and "<s>gone</s>" in html
    assert "<li>one</li>" in html
    assert "<th>Q</th>" in html and '<td style="text-align:right">120</td>' in html
    assert '<code class="language-python">print(1)' in html


def test_markdown_result_is_marked_safe_for_templates():
    assert isinstance(render_markdown("hi"), SafeString)


@pytest.mark.parametrize("empty", ["", None])
def test_markdown_of_nothing_is_empty(empty):
    assert render_markdown(empty) == ""


def test_markdown_script_tags_never_survive():
    html = render_markdown("Hello\n\n<script>alert('x')</script>\n\n<p onclick=\"steal()\">hi</p>")
    assert "<script" not in html
    assert "<p onclick" not in html  # only as escaped text, never an attribute
    assert "&lt;script&gt;" in html  # shown as the text the person typed


@pytest.mark.parametrize(
    "source",
    [
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](data:text/html;base64,PHNjcmlwdD4=)",
        "<javascript:alert(1)>",
        "[click](vbscript:msgbox)",
    ],
)
def test_markdown_unsafe_link_schemes_do_not_become_links(source):
    html = render_markdown(source)
    assert "href" not in html


def test_markdown_safe_links_get_a_no_referrer_rel():
    html = render_markdown("[docs](https://example.com/a?b=1) and <mailto:me@example.com>")
    assert 'href="https://example.com/a?b=1"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
    assert 'href="mailto:me@example.com"' in html


def test_markdown_images_are_dropped_so_nothing_is_fetched_without_a_click():
    html = render_markdown("![tracking](https://evil.example/pixel.png?doc=secret)")
    assert "<img" not in html
    assert "evil.example" not in html


def _boxes(html: str) -> list[tuple[str, ...]]:
    """Each real <input>'s attributes, sorted (the sanitiser's order varies)."""
    return [tuple(sorted(re.findall(r'(\w+)="[^"]*"', tag))) for tag in re.findall(r"<input[^>]*>", html)]


UNTICKED, TICKED = ("disabled", "type"), ("checked", "disabled", "type")


def test_task_list_items_render_as_disabled_checkboxes_showing_their_state():
    html = render_markdown("- [ ] to do\n- [x] done\n  - [X] nested\n- plain [ ] item\n\n`[ ] code`")
    assert '<ul class="contains-task-list">' in html
    items = re.findall(r'<li class="task-list-item">(<input[^>]*>) (\w+)', html)
    assert [(_boxes(box)[0], text) for box, text in items] == [(UNTICKED, "to"), (TICKED, "done"), (TICKED, "nested")]
    assert all('type="checkbox"' in box and 'disabled="disabled"' in box for box, _ in items)
    assert "<li>plain [ ] item</li>" in html and "<code>[ ] code</code>" in html
    assert len(_boxes(html)) == 3


@pytest.mark.parametrize(
    "source",
    [
        '<input type="text" onfocus="alert(1)" autofocus>',
        '- [ ] <input type="text" onfocus="alert(1)">',
    ],
)
def test_raw_inputs_in_the_source_stay_text_and_no_input_is_ever_more_than_a_disabled_checkbox(source):
    html = render_markdown(source)
    assert "&lt;input type=" in html  # shown as the text it is
    assert set(_boxes(html)) <= {UNTICKED}
    assert all('type="checkbox"' in tag for tag in re.findall(r"<input[^>]*>", html))


# --- a long document renders in parts, each cached (docs/adr/0042) -----------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from workspace import markdown  # noqa: E402

BLOCKS = [
    "# Heading one",
    "## Heading two",
    "###### Six",
    "#Not a heading",
    "   # Indented heading",
    "A paragraph with *emphasis* and a [link](https://example.org).",
    "Another line\ncontinued lazily",
    "- item\n- [x] done\n- [ ] open",
    "1. first\n2. second",
    "   - loose\n\n   - list",
    "> quoted\n> # heading in a quote",
    "| a | b |\n|---|--:|\n| 1 | 2 |",
    "```\ncode\n\n# not a heading\n```",
    "~~~python\n# comment\n\n## still code\n~~~",
    "````\n```\n\n# inside a longer fence\n````",
    "```info`x\nnot a fence",
    "    indented code\n\n    # code too",
    "- item\n\n  ```\n  # code in an item\n  ```",
    "Setext\n===",
    "   ",
    "",
]


def _whole(text: str) -> str:
    """What the one renderer makes of the whole text, uncut and uncached."""
    return markdown._render_part.render(text)


_TAG = re.compile(r"<(\w+)((?:\s+[\w-]+(?:=\"[^\"]*\")?)*)\s*(/?)>")
_ATTRIBUTE = re.compile(r"[\w-]+(?:=\"[^\"]*\")?")


def _canonical(html: str) -> str:
    """The sanitiser writes the attributes it sets in no fixed order: sorted here."""
    return _TAG.sub(lambda m: f"<{m.group(1)} {' '.join(sorted(_ATTRIBUTE.findall(m.group(2))))}{m.group(3)}>", html)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(BLOCKS), min_size=1, max_size=40), st.sampled_from(["\n\n", "\n", "\n\n\n"]))
def test_a_long_document_rendered_in_parts_reads_exactly_as_rendered_whole(blocks, joiner):
    filler = "Filler paragraph that makes the document long enough to be cut into parts.\n\n" * 60
    text = filler + joiner.join(blocks) + "\n\n" + filler + joiner.join(reversed(blocks))
    assert len(text) >= markdown.SPLIT_MIN_CHARS
    parts = markdown.markdown_parts(text)
    assert "".join(parts) == text
    assert _canonical("".join(markdown._render_part.render(part) for part in parts)) == _canonical(_whole(text))


def test_a_document_is_cut_at_headings_after_a_blank_line_outside_code():
    body = "Text.\n\n" * 400
    text = f"# One\n\n{body}## Two\n\n```\n\n# code\n```\n\n{body}### Three\n{body}"
    parts = markdown.markdown_parts(text)
    assert [part.split("\n", 1)[0] for part in parts] == ["# One", "## Two", "### Three"]
    assert "".join(parts) == text


def test_link_references_keep_a_document_whole():
    text = "# One\n\nSee [the source][src].\n\n" + "Text.\n\n" * 800 + "# Two\n\n[src]: https://example.org\n"
    assert markdown.markdown_parts(text) == [text]
    assert 'href="https://example.org"' in render_markdown(text)


def test_a_change_in_one_part_renders_only_that_part_again():
    sections = [f"## Section {n}\n\n" + f"Paragraph {n} of a long report. " * 30 + "\n\n" for n in range(60)]
    text = "".join(sections)
    render_markdown(text)
    before = (markdown._render_part.misses, markdown._render_part.hits)
    edited = text.replace("Paragraph 30 of a long report. ", "Paragraph 30, edited. ", 1)
    html = render_markdown(edited)
    after = (markdown._render_part.misses, markdown._render_part.hits)
    assert "Paragraph 30, edited." in html and _canonical(html) == _canonical(_whole(edited))
    assert (after[0] - before[0], after[1] - before[1]) == (1, len(sections) - 1)


def test_a_chat_page_of_forty_answers_renders_each_once_however_often_it_is_loaded():
    answers = [f"Answer {n}: **the figures** for region {n}, and what they mean." for n in range(40)]
    for answer in answers:
        render_markdown(answer)
    misses = markdown._render.misses
    for _load in range(3):
        assert [str(render_markdown(answer)) for answer in answers] == [
            f"<p>Answer {n}: <strong>the figures</strong> for region {n}, and what they mean.</p>\n" for n in range(40)
        ]
    assert markdown._render.misses == misses


def test_rendered_texts_keep_to_their_size_dropping_the_least_recently_used():
    rendered = markdown.RenderedTexts(lambda text: text.upper(), max_chars=1_000)
    texts = [f"{n:03d}" + "x" * 97 for n in range(12)]  # 100 characters, 200 with the HTML
    for text in texts:
        assert rendered(text) == text.upper()
    assert rendered.chars == 1_000  # the last five
    rendered(texts[7])  # used again: now the most recent
    rendered("y" * 100)  # pushes out the least recently used, texts[8]
    misses = rendered.misses
    for text in (texts[7], texts[9], texts[10], texts[11]):
        rendered(text)
    assert rendered.misses == misses
    rendered(texts[8])
    assert rendered.misses == misses + 1
    assert rendered.chars <= 1_000
    # A text too big to keep is rendered, not kept.
    assert rendered("z" * 300) == "Z" * 300
    assert "z" * 300 not in rendered._entries


# --- deep nesting (docs/adr/0128) -----------------------------------------------------


@pytest.mark.parametrize("depth", [10, 30, 60])
def test_the_preview_shows_a_deeply_nested_outline_and_the_text_after_it(depth):
    outline = "".join("  " * i + f"- level {i}\n" for i in range(depth))
    html = render_markdown("Intro.\n\n" + outline + "\nThe conclusion.\n")
    assert html.count("<ul>") == depth
    assert f"level {depth - 1}" in html
    assert html.rstrip().endswith("<p>The conclusion.</p>")


@pytest.mark.parametrize(
    "deeper",
    [
        "".join("  " * i + f"- level {i}\n" for i in range(150)),
        "- " * 5_000 + "innermost\n",
        ">" * 5_000 + " innermost\n",
    ],
    ids=["indented-outline", "one-line-of-list-markers", "one-line-of-quote-markers"],
)
def test_what_nests_deeper_than_the_limit_shows_as_text_and_nothing_after_it_is_lost(deeper):
    from workspace.markdown import MAX_BLOCK_NESTING

    html = render_markdown("Intro.\n\n" + deeper + "\nThe conclusion.\n")
    assert html.count("<ul>") + html.count("<blockquote>") <= MAX_BLOCK_NESTING
    assert "innermost" in html or "level 149" in html
    assert html.rstrip().endswith("<p>The conclusion.</p>")
