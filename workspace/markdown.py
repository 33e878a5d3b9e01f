"""Markdown for the workspace: one real parser (markdown-it-py), then an
allow-list sanitiser (nh3) over its output.

Raw HTML in the source is already escaped by the parser (html=False); the
sanitiser is the second wall, so a parser bug or a future option change can
never let a script, an event handler or a `javascript:` link through.

Task list items (`- [ ] to do`, `- [x] done`) become list items with a
checkbox that only shows the state: every <input> the sanitiser lets through
is made a disabled checkbox, whatever the markup asked for.

Images are not allowed in the app: the document is partly written by the
model, and an image URL is fetched without a click, which would let
injected text leak workspace content to a third-party server while the
person reads. The HTML export (`render_markdown_for_export`) keeps them,
with http(s) sources and their alt text: it is a file the person chose to
take away and open, where a missing picture would be a loss, and they load
with no referrer (docs/adr/0053).
"""

import re
import threading
from collections import OrderedDict
from functools import lru_cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

ALLOWED_TAGS = {
    "a",
    "blockquote",
    "br",
    "code",
    "del",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "input",
    "li",
    "ol",
    "p",
    "pre",
    "s",
    "strong",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "td": {"style"},
    "th": {"style"},
    "code": {"class"},
    "input": {"checked"},
}
# Forced on every <input>: a checkbox nobody can tick in the preview.
INPUT_ATTRIBUTES = {"input": {"type": "checkbox", "disabled": "disabled"}}
# Forced on every image of the HTML export: fetched without telling where from.
IMAGE_ATTRIBUTES = {"img": {"referrerpolicy": "no-referrer", "loading": "lazy"}}
ALLOWED_CLASSES = {"li": {"task-list-item"}, "ul": {"contains-task-list"}, "ol": {"contains-task-list"}}
TASK_MARKER = re.compile(r"\[([ xX])\][ \t]+")
URL_SCHEMES = {"http", "https", "mailto"}
# Tables emit `style="text-align:…"` for column alignment; nothing else is kept.
ALLOWED_STYLE_PROPERTIES = {"text-align"}


def _task_lists(state: StateCore) -> None:
    """A list item whose paragraph starts with "[ ] " or "[x] " becomes a
    task: the marker is replaced by a checkbox, the item and its list get a
    class for the stylesheet."""
    tokens = state.tokens
    for i in range(2, len(tokens)):
        inline = tokens[i]
        if inline.type != "inline" or tokens[i - 1].type != "paragraph_open" or tokens[i - 2].type != "list_item_open":
            continue
        match = TASK_MARKER.match(inline.content)
        first = inline.children[0] if inline.children else None
        if not match or first is None or first.type != "text" or not first.content.startswith(match.group(0)):
            continue
        first.content = first.content[match.end() :]
        box = Token("html_inline", "", 0)
        box.content = (
            '<input type="checkbox" disabled checked> ' if match.group(1) in "xX" else '<input type="checkbox" disabled> '
        )
        inline.children.insert(0, box)  # type: ignore[union-attr]  # it has a first child (checked above)
        tokens[i - 2].attrJoin("class", "task-list-item")
        depth = tokens[i - 2].level - 1
        for j in range(i - 3, -1, -1):
            if tokens[j].type in ("bullet_list_open", "ordered_list_open") and tokens[j].level == depth:
                if "contains-task-list" not in str(tokens[j].attrGet("class") or ""):
                    tokens[j].attrJoin("class", "contains-task-list")
                break


# How deep blocks nest before what is deeper is shown as plain text. Each
# list is two levels (the list and its item), a quote one, so a list nested
# 100 deep still renders as lists. The preset's own limit (20) made
# markdown-it drop everything after a list nested 10 deep, the rest of the
# document with it (docs/adr/0128). Each level costs the parser two or three
# Python frames: 200 stays well inside the interpreter's recursion limit.
MAX_BLOCK_NESTING = 200


def _tokenize_blocks(tokenize):
    """The block parser's tokenize, rendering a block nested deeper than
    MAX_BLOCK_NESTING as one plain paragraph of its lines (markdown-it would
    skip them and every line after them to the end of the text)."""

    def tokenize_within_limit(state: StateBlock, start_line: int, end_line: int, *args) -> None:
        if state.level < MAX_BLOCK_NESTING:
            tokenize(state, start_line, end_line, *args)
            return
        line = start_line
        while line < end_line and (state.isEmpty(line) or state.sCount[line] >= state.blkIndent):
            line += 1
        while line > start_line and state.isEmpty(line - 1):
            line -= 1
        if line == start_line:
            return
        state.line = line
        text = "\n".join(state.getLines(n, n + 1, state.blkIndent, False).strip() for n in range(start_line, line))
        opening = state.push("paragraph_open", "p", 1)
        opening.map = [start_line, line]
        inline = state.push("inline", "", 0)
        inline.content = text
        inline.map = [start_line, line]
        inline.children = []
        state.push("paragraph_close", "p", -1)

    return tokenize_within_limit


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # The block limit is ours (MAX_BLOCK_NESTING, above); markdown-it's own
    # is set past it so it never skips text, and still bounds inline nesting
    # (links and emphasis, where it keeps the text).
    parser = MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_BLOCK_NESTING + 20}).enable(["table", "strikethrough"])
    parser.block.tokenize = _tokenize_blocks(parser.block.tokenize)  # type: ignore[method-assign]  # see _tokenize_blocks
    parser.core.ruler.push("task_lists", _task_lists)
    return parser


def render_markdown(text: str | None) -> SafeString:
    """Markdown source → sanitised HTML, safe to put in a template as is."""
    if not text:
        return mark_safe("")
    return mark_safe(_render(str(text)))


# A long document is rendered in parts, each cached on its own, so a change
# costs the part it is in, not the whole (docs/adr/0042). A part starts at an
# ATX heading ("# ", "## " …) at the start of a line after a blank line,
# outside a fenced code block: such a heading ends whatever block came before
# it, so the parts' HTML put together is the whole's. Not when the text
# defines link references ("[label]: url"), which reach across the document.
SPLIT_MIN_CHARS = 4_000
# At the start of the line: an indented one may belong to the list item above.
_HEADING = re.compile(r"#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:", re.MULTILINE)


def markdown_parts(text: str) -> list[str]:
    """`text` cut where each part renders on its own exactly as it does in
    the whole (see above); one part when it is short or cannot be cut."""
    if len(text) < SPLIT_MIN_CHARS or ("]:" in text and _REFERENCE.search(text)):
        return [text]
    parts, start, at, fence, blank_before = [], 0, 0, None, False
    for line in text.split("\n"):
        maybe_fence = "``" in line or "~~" in line  # most lines are prose: skip the patterns
        if fence is None:
            if blank_before and at > start and line[:1] == "#" and _HEADING.match(line):
                parts.append(text[start:at])
                start = at
            opening = maybe_fence and _FENCE.match(line)
            # A backtick fence's info string holds no backtick (CommonMark).
            if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
                fence = opening.group(1)
        else:
            closing = maybe_fence and _FENCE.match(line)
            if (
                closing
                and closing.group(1)[0] == fence[0]
                and len(closing.group(1)) >= len(fence)
                and not closing.group(2).strip()
            ):
                fence = None
        blank_before = not line.strip(" \t")
        at += len(line) + 1
    parts.append(text[start:])
    return parts


def markdown_tokens(text: str) -> list:
    """The parser's block tokens for `text`, for exports that build their own
    output (workspace.exports): the same dialect the preview renders."""
    return _parser().parse(text or "")


class RenderedTexts:
    """HTML by source text, for texts rendered again and again (a chat's
    answers on every load of its page, the document for its push, the page
    and the preview alike), the least recently used dropped first once the
    texts and their HTML together pass `max_chars`. A count of entries would
    bound nothing: one answer may be 200 000 characters, and a chat page
    shows forty answers, more than a small count keeps, so every load missed
    them all. Shared by the server's threads."""

    def __init__(self, render, *, max_chars: int):
        self.render = render  # uncached
        self.max_chars = max_chars
        self._entries: OrderedDict[str, str] = OrderedDict()
        self.chars = 0
        self.hits = self.misses = 0
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        with self._lock:
            html = self._entries.get(text)
            if html is not None:
                self._entries.move_to_end(text)
                self.hits += 1
                return html
            self.misses += 1
        # Rendered outside the lock: another thread's text need not wait for
        # this one (two threads may then render the same text, once each).
        html = self.render(text)
        size = len(text) + len(html)
        if size > self.max_chars // 4:
            return html  # not kept: it would push out most of what is there
        with self._lock:
            if text not in self._entries:
                self._entries[text] = html
                self.chars += size
                while self.chars > self.max_chars:
                    old_text, old_html = self._entries.popitem(last=False)
                    self.chars -= len(old_text) + len(old_html)
        return html

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.chars = self.hits = self.misses = 0


# At most about 100 MB of a server's memory for both (characters of up to
# four bytes, most of them one), whatever it has rendered since it started.
_render_part = RenderedTexts(lambda text: _clean(_parser().render(text)), max_chars=20_000_000)
# The whole text, put together from its parts, so a long document is not cut
# into parts again for every request that shows it.
_render = RenderedTexts(lambda text: mark_safe("".join(_render_part(part) for part in markdown_parts(text))), max_chars=5_000_000)


def _clean(html: str, *, images: bool = False) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS | {"img"} if images else ALLOWED_TAGS,
        attributes={**ALLOWED_ATTRIBUTES, "img": {"src", "alt", "title"}} if images else ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        filter_style_properties=ALLOWED_STYLE_PROPERTIES,
        allowed_classes=ALLOWED_CLASSES,
        set_tag_attribute_values={**INPUT_ATTRIBUTES, **IMAGE_ATTRIBUTES} if images else INPUT_ATTRIBUTES,
        attribute_filter=_web_images_only if images else None,
    )


def _web_images_only(tag: str, attribute: str, value: str) -> str | None:
    if tag == "img" and attribute == "src" and not value.lower().startswith(("http://", "https://")):
        return None  # a mailto: or relative "image" shows as its alt text
    return value


def render_markdown_for_export(text: str | None) -> SafeString:
    """As `render_markdown`, keeping images with an http(s) source (the HTML export)."""
    if not text:
        return mark_safe("")
    return mark_safe(_clean(_parser().render(str(text)), images=True))
