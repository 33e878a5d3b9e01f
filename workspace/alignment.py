"""Which items two sequences share, in order (lines or word tokens of two
versions of the document): difflib's matching blocks, at a cost that grows
with what differs rather than with the whole length (docs/adr/0042).

difflib.SequenceMatcher compares every item of one sequence with the
matching items of the other: aligning two 200 000-character texts that
differ by one word took it seconds (the whole text one long line, so the
word pass got all of it), and up to a minute for a rewrite. Here:

1. what both sequences start and end with alike is matched as it stands
   (an edit of one paragraph leaves only that paragraph to look at);
2. a short middle goes to difflib as before;
3. a long one is first cut at items that occur exactly once in each side
   (the longest run of them in the same order: "patience" anchors), and
   each stretch between two anchors is aligned the same way; a long
   stretch without any is left to difflib's popular-item heuristic.

difflib's "popular item" heuristic (autojunk) is off for stretches of up
to `exact_up_to` items on each side: it would stop a space or a common word
from anchoring a match. Beyond that it is on, because aligning many repeats
of one item without it is quadratic or worse.

Pure Python, no Django. `matching_blocks` returns difflib's format: triples
(i, j, n) with a[i:i+n] == b[j:j+n], ascending, ending with (len(a), len(b), 0).
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Sequence

# Middles up to this many items (both sides together) go to difflib directly.
DIRECT_MAX_ITEMS = 2_000


def matching_blocks(a: Sequence, b: Sequence, *, exact_up_to: int = 0) -> list[tuple[int, int, int]]:
    blocks: list[tuple[int, int, int]] = []
    _align(a, b, 0, len(a), 0, len(b), exact_up_to, blocks)
    return _joined(blocks) + [(len(a), len(b), 0)]


def opcodes(a: Sequence, b: Sequence, *, exact_up_to: int = 0) -> list[tuple[str, int, int, int, int]]:
    """difflib's get_opcodes() over `matching_blocks`."""
    out, i, j = [], 0, 0
    for ai, bj, size in matching_blocks(a, b, exact_up_to=exact_up_to):
        if i < ai and j < bj:
            out.append(("replace", i, ai, j, bj))
        elif i < ai:
            out.append(("delete", i, ai, j, bj))
        elif j < bj:
            out.append(("insert", i, ai, j, bj))
        if size:
            out.append(("equal", ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return out


class Matcher:
    """The part of difflib.SequenceMatcher's interface merge3 uses
    (constructed as (isjunk, a, b), then get_matching_blocks())."""

    exact_up_to = 0

    def __init__(self, isjunk=None, a: Sequence = (), b: Sequence = ()):
        self.a, self.b = a, b

    def get_matching_blocks(self) -> list[tuple[int, int, int]]:
        return matching_blocks(self.a, self.b, exact_up_to=self.exact_up_to)


def _align(a, b, alo, ahi, blo, bhi, exact_up_to, out) -> None:
    head = 0
    while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
        head += 1
    tail = 0
    while ahi - tail > alo + head and bhi - tail > blo + head and a[ahi - 1 - tail] == b[bhi - 1 - tail]:
        tail += 1
    if head:
        out.append((alo, blo, head))
    alo, blo, ahi_mid, bhi_mid = alo + head, blo + head, ahi - tail, bhi - tail
    if alo < ahi_mid and blo < bhi_mid:
        if (ahi_mid - alo) + (bhi_mid - blo) <= DIRECT_MAX_ITEMS:
            _difflib(a, b, alo, ahi_mid, blo, bhi_mid, exact_up_to, out)
        else:
            anchors = _anchors(a, b, alo, ahi_mid, blo, bhi_mid)
            if not anchors:
                _difflib(a, b, alo, ahi_mid, blo, bhi_mid, 0, out)
            else:
                i, j = alo, blo
                for ai, bj in anchors:
                    _align(a, b, i, ai, j, bj, exact_up_to, out)
                    out.append((ai, bj, 1))
                    i, j = ai + 1, bj + 1
                _align(a, b, i, ahi_mid, j, bhi_mid, exact_up_to, out)
    if tail:
        out.append((ahi - tail, bhi - tail, tail))


def _difflib(a, b, alo, ahi, blo, bhi, exact_up_to, out) -> None:
    exact = ahi - alo <= exact_up_to and bhi - blo <= exact_up_to
    matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=not exact)
    out.extend((alo + i, blo + j, n) for i, j, n in matcher.get_matching_blocks() if n)


def _anchors(a, b, alo, ahi, blo, bhi) -> list[tuple[int, int]]:
    """Positions (i, j) of items found exactly once in a[alo:ahi] and once
    in b[blo:bhi], the longest chain of them in the same order in both."""
    count_a, count_b = Counter(a[alo:ahi]), Counter(b[blo:bhi])
    where_b = {b[j]: j for j in range(blo, bhi) if count_b[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi) if count_a[a[i]] == 1 and a[i] in where_b]
    # Longest increasing run of j (patience sorting), pairs already by i.
    tops: list[int] = []  # smallest j ending a chain of each length
    ends: list[int] = []  # index into pairs of that chain's last pair
    previous = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tops, j)
        if k:
            previous[n] = ends[k - 1]
        if k == len(tops):
            tops.append(j)
            ends.append(n)
        else:
            tops[k], ends[k] = j, n
    chain, n = [], ends[-1] if ends else -1
    while n >= 0:
        chain.append(pairs[n])
        n = previous[n]
    return chain[::-1]


def _joined(blocks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Neighbouring blocks as one, as difflib reports them."""
    out: list[tuple[int, int, int]] = []
    for i, j, n in blocks:
        if out and out[-1][0] + out[-1][2] == i and out[-1][1] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + n)
        else:
            out.append((i, j, n))
    return out
