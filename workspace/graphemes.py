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

import bisect
import itertools
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
# (what `\w` is to `re`) with the marks, joiners and skin tones on them;
# spaces likewise; an ASCII sign with any marks on it; anything else one
# cluster (a flag, a joined emoji). On plain text it gives the tokens
# `_TOKENS` gives, so a stretch nobody touched is the same tokens whether or
# not the text around it has emoji.
_ON = r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=SpacingMark}]"
_WORD = r"[\p{L}\p{N}_]"
_SPACE = r"(?:(?!\n)[\s\x1c-\x1f])"
_SIGN = r"[!-/:-@\[-^`{-~]"
_CLUSTER_TOKENS = regex.compile(rf"{_WORD}+(?:{_ON}+{_WORD}*)*|\n|{_SPACE}+(?:{_ON}+{_SPACE}*)*|{_SIGN}{_ON}*|\X")
# What that pattern could still cut: a carriage return before a line feed,
# a mark prepended to what follows it, a letter that starts a joined emoji
# (ℹ), a virama after a space or a sign (it joins the consonant after it). The first
# pattern is a quick look for any of their characters.
_MAYBE_RARE = regex.compile(r"[\r\p{Grapheme_Cluster_Break=Prepend}\p{Indic_Conjunct_Break=Linker}\N{INFORMATION SOURCE}]")
_RARE = regex.compile(
    r"\r|\p{Grapheme_Cluster_Break=Prepend}|(?=[\p{L}\p{N}])\p{Extended_Pictographic}"
    rf"|(?:{_SPACE}|{_SIGN}){_ON}*\p{{Indic_Conjunct_Break=Linker}}"
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
    if _MAYBE_RARE.search(text) and _RARE.search(text):
        return _joined(text, found)
    return found


# Where tokens start afresh, whatever came before: after a line break, or
# after a space or tab followed by a plain character that is no space (the
# end of the match is the place).
_FRESH = regex.compile(r"\n|[ \t](?=\p{Grapheme_Cluster_Break=Other})(?!\s)")


def tokens_of_versions(base: str, *others: str) -> list[list[str]]:
    """The tokens of `base` and of each of `others` (versions of it), as
    `tokens` gives them; of each other version only the stretch that differs
    from `base` is tokenised, the rest is `base`'s tokens. (A merge of a
    199 000-character line tokenises the line once, not three times.)"""
    found = tokens(base)
    ends = list(itertools.accumulate(map(len, found)))
    out = [found]
    for other in others:
        head = common_prefix(base, other)
        tail = common_prefix(base[head:][::-1], other[head:][::-1])
        # The last token boundary of `base` before the first difference: the
        # tokens up to it end where they do whatever follows the difference.
        first = bisect.bisect_left(ends, head) if head else 0
        start = ends[first - 1] if first else 0
        # The first place after the last difference where tokens start afresh.
        fresh = _FRESH.search(base, len(base) - tail + 1) if tail else None
        stop = fresh.end() if fresh else len(base)
        last = bisect.bisect_left(ends, stop)
        if stop < len(base) and (last >= len(ends) or ends[last] != stop):
            out.append(tokens(other))  # not a boundary after all: the whole of it
            continue
        middle = tokens(other[start : len(other) - (len(base) - stop)])
        out.append(found[:first] + middle + found[last + 1 if stop < len(base) else len(found) :])
    return out


def common_prefix(a: str, b: str) -> int:
    # By halves: each comparison is one memory compare, not a character loop.
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


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
