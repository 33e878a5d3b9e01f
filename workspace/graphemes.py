"""Characters as people see them: grapheme clusters (docs/adr/0128).

A flag (two regional indicators), an emoji with its skin tone, a family
joined by zero-width joiners, a letter with a combining accent: each is one
character to the person and several code points to Python. The merge, the
diff and the targeted edits work in whole clusters, so none of them splits
one: two sides changing one emoji differently conflict instead of making a
third, a diff shows 🇫🇷 → 🇫🇮 rather than lone letters, an accent stays on
its letter.

The clusters are the `regex` package's `\\X` (Unicode's extended grapheme
clusters). Most text has no code point that joins a cluster (plain ASCII, or
precomposed letters such as "é", CJK, emoji without modifiers): it is
tokenised by the standard library's `re`, as before; other text by one
`regex` pattern that keeps clusters whole and gives the same tokens on the
plain parts (bench/document_editing.py measures both).
"""

from __future__ import annotations

import re

import regex

# The tokens the merge and the diff align: a word, a line break, a run of
# other spaces, or one other character. On text where every code point is a
# cluster of its own the standard library's pattern says it, in C.
_TOKENS = re.compile(r"\w+|\n|[^\S\n]+|[^\w\s]")
# A code point that can make a cluster with its neighbour: anything but a
# plain character, a control or a line feed by Unicode's grapheme rules
# (combining marks, joiners, variation selectors, skin tones, regional
# indicators, Hangul jamo, prepended marks, a carriage return).
_JOINING = regex.compile(r"[^\p{Grapheme_Cluster_Break=Other}\p{Grapheme_Cluster_Break=Control}\n]")
# The same tokens, clusters whole: a word is letters, digits and underscores
# (what `\w` is to `re`), each with the marks, joiners and skin tones on it;
# spaces likewise; anything else one cluster (a flag, a joined emoji). On
# plain text it gives the tokens `_TOKENS` gives, so a stretch nobody
# touched is the same tokens whether or not the text around it has emoji.
_ON = r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=SpacingMark}]*"
_CLUSTER_TOKENS = regex.compile(rf"(?:[\p{{L}}\p{{N}}_]{_ON})+|\n|(?:(?!\n)[\s\x1c-\x1f]{_ON})+|\X")
# What that pattern could still cut: a carriage return before a line feed,
# a mark prepended to what follows it, a letter that starts a joined emoji,
# a virama on a space (it joins the consonant after it).
_RARE = regex.compile(
    r"\r|\p{Grapheme_Cluster_Break=Prepend}|(?=[\p{L}\p{N}])\p{Extended_Pictographic}"
    rf"|[\s\x1c-\x1f]{_ON}\p{{Indic_Conjunct_Break=Linker}}"
)
# A place where a stretch surely starts a cluster: after a line break, or
# after a space or tab followed by a plain character that is no space (the
# end of the match is the place).
_CUT_BEFORE = regex.compile(r"(?r)\n|[ \t](?=\p{Grapheme_Cluster_Break=Other})(?!\s)")
_CLUSTER = regex.compile(r"\X")


def _plain(text: str) -> bool:
    """True when every code point of `text` is a cluster of its own."""
    if text.isascii():
        return "\r" not in text
    return _JOINING.search(text) is None


def tokens(text: str) -> list[str]:
    """`text` as words, line breaks, runs of spaces and single other
    characters, none of them cutting a cluster: an accent or a skin tone
    goes with what it modifies, a flag or a joined emoji is one token."""
    if _plain(text):
        return _TOKENS.findall(text)
    found = _CLUSTER_TOKENS.findall(text)
    return _joined(text, found) if _RARE.search(text) else found


def _joined(text: str, found: list[str]) -> list[str]:
    """`found` (the tokens of `text`), each joined with the next while it
    ends inside a cluster."""
    ends = {match.end() for match in _CLUSTER.finditer(text)}
    out: list[str] = []
    pending, at = "", 0
    for token in found:
        pending += token
        at += len(token)
        if at in ends:
            out.append(pending)
            pending = ""
    if pending:
        out.append(pending)
    return out


def is_boundary(text: str, at: int) -> bool:
    """True when position `at` of `text` is between two clusters (or at
    either end), False when it falls inside one (between an emoji and its
    skin tone, a letter and its accent, the two halves of a flag)."""
    if at <= 0 or at >= len(text):
        return True
    pair = text[at - 1 : at + 1]
    if pair.isascii():
        return pair != "\r\n"
    # From the nearest place before `at` that is surely a boundary.
    before = _CUT_BEFORE.search(text, 0, at)
    start = before.end() if before else 0
    for match in _CLUSTER.finditer(text, start):
        if match.end() >= at:
            return match.end() == at or match.start() == at
    return True
