"""A change to a text sent as the one span it replaced.

A closing page's last save goes in a beacon, and a browser takes at most
64 KB in one: a long document's whole text does not fit, a typed sentence
does. The page sends how much of the version it was based on it kept at
the start and at the end, what it put between them, and a CRC-32 of the
whole result, so the server can rebuild the text and be sure it rebuilt
what the page held (docs/adr/0040).

Lengths are code points, as Python counts; the page converts its UTF-16
offsets, never cutting a pair. The CRC-32 is of the result's UTF-8 bytes.
"""

import zlib
from dataclasses import dataclass

from .errors import InvalidInput

CHANGE_DID_NOT_FIT = (
    "The change sent as the page closed does not fit the version it was typed on, so it cannot be placed. Nothing was saved."
)


@dataclass(frozen=True)
class TextSplice:
    kept_head: int  # code points of the base kept at the start
    kept_tail: int  # code points of the base kept at the end
    middle: str  # what replaces the rest
    crc32: int  # of the resulting text's UTF-8

    def applied_to(self, base: str) -> str:
        """The text the page held; InvalidInput when the base is not the one
        it was typed on (nothing may be guessed into a person's document)."""
        if self.kept_head + self.kept_tail > len(base):
            raise InvalidInput(CHANGE_DID_NOT_FIT)
        text = base[: self.kept_head] + self.middle + base[len(base) - self.kept_tail :]
        if zlib.crc32(text.encode("utf-8")) != self.crc32:
            raise InvalidInput(CHANGE_DID_NOT_FIT)
        return text


def _common_head(a: str, b: str) -> int:
    # Halving on slice comparisons (done in C): a 199 000-character text in
    # about 18 comparisons rather than a Python loop over every character.
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_tail(a: str, b: str, most: int) -> int:
    low, high = 0, most
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid - 1
    return low


def splice_from(base: str, text: str) -> TextSplice:
    """`text` as the one span it changed in `base`: what a page that holds
    `base` needs to rebuild it (a restore's answer, docs/adr/0138)."""
    head = _common_head(base, text)
    tail = _common_tail(base, text, min(len(base), len(text)) - head)
    return TextSplice(head, tail, text[head : len(text) - tail], zlib.crc32(text.encode("utf-8")))


def utf16_units(text: str) -> int:
    """`text`'s length as the page counts it (a character beyond the Basic
    Multilingual Plane is two units there)."""
    return len(text.encode("utf-16-le")) // 2
