"""The one rule for text that people and the agent write into HAICO.

Every text field (titles, preference wording, plan steps, the objective,
the document, chat messages) goes through `clean_text`, so the same input
gets the same answer everywhere: it must be a string, must not contain NUL
(PostgreSQL text columns refuse it, so it is refused up front with a clear
message instead of failing on save), must fit its limit, and must not be
blank unless the field allows that.
"""

import re

from .errors import InvalidInput

_SURROGATE = re.compile("[\ud800-\udfff]")


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
    if len(value) > max_chars:
        raise InvalidInput(f"{label} is too long ({len(value):,} characters; the limit is {max_chars:,}).")
    return value


def replace_lone_surrogates(text: str) -> str:
    """`text` with every lone surrogate (a half of a UTF-16 pair, which no
    encoder accepts) replaced by U+FFFD: for text nobody can be asked to fix,
    such as a model's output, so one bad character cannot break a socket or
    a checkpoint write."""
    if not isinstance(text, str) or not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


