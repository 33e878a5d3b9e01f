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
    ["[click](javascript:alert(1))", "[click](JaVaScRiPt:alert(1))", "[click](data:text/html;base64,PHNjcmlwdD4=)",
     "<javascript:alert(1)>", "[click](vbscript:msgbox)"],
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


@pytest.mark.parametrize("source", [
    '<input type="text" onfocus="alert(1)" autofocus>',
    '- [ ] <input type="text" onfocus="alert(1)">',
])
def test_raw_inputs_in_the_source_stay_text_and_no_input_is_ever_more_than_a_disabled_checkbox(source):
    html = render_markdown(source)
    assert "&lt;input type=" in html  # shown as the text it is
    assert set(_boxes(html)) <= {UNTICKED}
    assert all('type="checkbox"' in tag for tag in re.findall(r"<input[^>]*>", html))
