"""The one rule for text that people and the agent write into HAICO.

Every text field (titles, preference wording, plan steps, the objective,
the document, chat messages) goes through `clean_text`, so the same input
gets the same answer everywhere: it must be a string, must not contain NUL
(PostgreSQL text columns refuse it, so it is refused up front with a clear
message instead of failing on save) nor a lone surrogate (a JSON body or a
socket frame can carry "\\ud800"; no database, page or socket can encode
it), must fit its limit, and must not be blank unless the field allows that.

`encodable` is the last line of defence where text leaves the server (the
live layer, the socket): one unencodable string must never close a socket.
"""

import html
import re

from . import graphemes
from .errors import InvalidInput

# In a Python string every surrogate code point is unpaired (a JSON pair
# "\\ud83d\\ude00" decodes to one astral character), so none can be UTF-8 encoded.
_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(value: str) -> bool:
    # Surrogates are the only code points UTF-8 cannot encode; asking the
    # codec is a thousand times quicker than the pattern on a long document.
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def utf8_size(text: str) -> int:
    """The size of `text` on the wire (UTF-8 bytes, a lone surrogate counted
    as the one byte that replaces it): the live layer's measure of a push."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "replace"))


def encodable(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be sent:
    for text nobody can be asked to fix (a model's output, a page on its way
    out), so one bad character cannot break a socket or a checkpoint write."""
    if not isinstance(text, str) or not has_lone_surrogate(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def clean_text(
    value,
    *,
    label: str,
    max_chars: int,
    allow_empty: bool = False,
    strip: bool = True,
    collapse_whitespace: bool = False,
) -> str:
    """`value` as it will be stored, or InvalidInput saying why not.

    `strip=False` keeps the text exactly as written (documents, chat
    messages: their spacing is content) while still refusing blank text
    unless `allow_empty`. `collapse_whitespace` turns every run of
    whitespace into one space (one-line names such as a thread title)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{label} must be text.")
    if collapse_whitespace:
        value = " ".join(value.split())
    elif strip:
        value = value.strip()
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{label} cannot be empty.")
    if "\x00" in value:
        raise InvalidInput(f"{label} cannot contain NUL characters.")
    if has_lone_surrogate(value):
        raise InvalidInput(f"{label} contains a character that cannot be stored (a lone surrogate); remove it and try again.")
    if len(value) > max_chars:
        raise InvalidInput(f"{label} is too long ({len(value):,} characters; the limit is {max_chars:,}).")
    return value


def as_a_page_reads_it(text: str) -> str:
    """`text` as a page hands it back from its HTML: a parser reads every
    line break ("\r\n", "\r") as "\n". A form that sends back what its page
    showed is compared with the row through this (docs/adr/0125)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def one_line(text: str) -> str:
    """`text` as a one-line form field holds it: the browser drops its line breaks."""
    return text.replace("\r", "").replace("\n", "")


def escape_html(value) -> str:
    """`value` as text for HTML written in Python (workspace.rows, the chat's
    reasoning steps): &, <, >, " and ' encoded, exactly as Django's `escape`
    does, without its lazy-text wrapper, which costs about 2 µs a call where
    a big workspace page escapes about a thousand values."""
    return html.escape(str(value))


def cut_to(text: str, max_chars: int, mark: str = "…") -> str:
    """`text` if it fits `max_chars`, else its start and `mark`, all within
    `max_chars`, cut between two characters as a person sees them, never
    inside one (docs/adr/0128): for a text kept or shown in part."""
    if len(text) <= max_chars:
        return text
    at = max(0, max_chars - len(mark))
    while at > 0 and not graphemes.is_boundary(text, at):
        at -= 1
    return text[:at] + mark
