"""Markdown for the workspace: one real parser (markdown-it-py), then an
allow-list sanitiser (nh3) over its output.

Raw HTML in the source is already escaped by the parser (html=False); the
sanitiser is the second wall, so a parser bug or a future option change can
never let a script, an event handler or a `javascript:` link through.

Images are not allowed: the document is partly written by the model, and an
image URL is fetched without a click, which would let injected text leak
workspace content to a third-party server.
"""

from functools import lru_cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

ALLOWED_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "td": {"style"},
    "th": {"style"},
    "code": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}
# Tables emit `style="text-align:…"` for column alignment; nothing else is kept.
ALLOWED_STYLE_PROPERTIES = {"text-align"}


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def render_markdown(text: str | None) -> SafeString:
    """Markdown source → sanitised HTML, safe to put in a template as is."""
    if not text:
        return mark_safe("")
    return _render(str(text))


def markdown_tokens(text: str) -> list:
    """The parser's block tokens for `text`, for exports that build their own
    output (workspace.exports): the same dialect the preview renders."""
    return _parser().parse(text or "")


# A long document costs tens of milliseconds to render, and the same version
# is rendered for its push, the page and the preview request alike.
@lru_cache(maxsize=32)
def _render(text: str) -> SafeString:
    html = _parser().render(text)
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        filter_style_properties=ALLOWED_STYLE_PROPERTIES,
    )
    return mark_safe(clean)
