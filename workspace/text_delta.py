"""A text as a delta against another: what a snapshot stores for a document
that changed a little since the previous snapshot (docs/adr/0015).

A delta is a list of operations that rebuild the new text from the base:
`[start, length]` copies that many characters of the base from `start`, a
string inserts itself. Offsets count Python characters (code points), so
any text, whatever its script or line breaks, rebuilds exactly.
"""

import json

Delta = list  # of [start, length] | str


def delta_between(base: str, new: str) -> Delta:
    """Operations that turn `base` into `new`.

    The common start and end are cut first (one edit anywhere costs a copy,
    the edit and a copy, in time linear in the text). What is left is
    aligned on its anchors, the lines found exactly once on each side, kept
    in the longest run that is in the same order on both (a patience diff,
    O(n log n): no alignment on repeated lines such as blank ones, which is
    quadratic); between two anchors the same is done again, and what has no
    anchor is cut at its common start and end, so a word changed inside a
    long paragraph costs that word."""
    ops: Delta = []
    _align(ops, base, new, 0, len(base), 0, len(new), depth=0)
    return ops


def apply_delta(base: str, ops: Delta) -> str:
    return "".join(base[op[0] : op[0] + op[1]] if isinstance(op, list) else op for op in ops)


def encode(ops: Delta) -> str:
    return json.dumps(ops, ensure_ascii=False, separators=(",", ":"))


def decode(text: str) -> Delta:
    return json.loads(text)


# Rounds of anchoring inside the gaps between anchors; what is left after them is cut, not aligned.
MAX_ALIGN_DEPTH = 3


def _align(ops: Delta, base: str, new: str, a_start: int, a_end: int, b_start: int, b_end: int, *, depth: int) -> None:
    """Append the operations that rebuild new[b_start:b_end] from base[a_start:a_end]."""
    a_chunk, b_chunk = base[a_start:a_end], new[b_start:b_end]
    prefix = _common_prefix(a_chunk, b_chunk)
    suffix = _common_suffix(a_chunk, b_chunk, limit=min(len(a_chunk), len(b_chunk)) - prefix)
    _copy(ops, a_start, prefix)
    a_start, a_end, b_start, b_end = a_start + prefix, a_end - suffix, b_start + prefix, b_end - suffix
    anchors = _anchors(base, new, a_start, a_end, b_start, b_end) if depth < MAX_ALIGN_DEPTH else []
    if not anchors:
        _insert(ops, new[b_start:b_end])  # nothing to align on: this part of `new` as it is
    else:
        for a_from, b_from, length in anchors:
            if base[a_start:a_from] == new[b_start:b_from]:  # most gaps: unchanged (a blank line)
                _copy(ops, a_start, a_from - a_start)
            else:
                _align(ops, base, new, a_start, a_from, b_start, b_from, depth=depth + 1)
            _copy(ops, a_from, length)
            a_start, b_start = a_from + length, b_from + length
        _align(ops, base, new, a_start, a_end, b_start, b_end, depth=depth + 1)
    _copy(ops, a_end, suffix)


def _anchors(base: str, new: str, a_start: int, a_end: int, b_start: int, b_end: int) -> list[tuple[int, int, int]]:
    """(offset in base, offset in new, length) of the lines found once on each
    side, in the longest run that is in the same order on both."""
    if a_start == a_end or b_start == b_end:
        return []
    a_lines = _lines_once(base, a_start, a_end)
    b_lines = _lines_once(new, b_start, b_end)
    pairs = sorted((a_lines[line], b_lines[line], len(line)) for line in a_lines.keys() & b_lines.keys())
    return _longest_increasing(pairs)


def _lines_once(text: str, start: int, end: int) -> dict[str, int]:
    """Each line of text[start:end] found there exactly once, with its offset."""
    seen: dict[str, int] = {}
    repeated: set[str] = set()
    offset = start
    for line in text[start:end].splitlines(keepends=True):
        if line in seen:
            repeated.add(line)
        else:
            seen[line] = offset
        offset += len(line)
    for line in repeated:
        del seen[line]
    return seen


def _longest_increasing(pairs: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The longest subsequence of `pairs` (sorted by base offset) whose new
    offsets increase too (patience sorting)."""
    tails: list[int] = []  # tails[k]: index in pairs ending the best run of length k + 1
    previous: list[int] = [-1] * len(pairs)
    for i, (_a, b, _length) in enumerate(pairs):
        low, high = 0, len(tails)
        while low < high:
            mid = (low + high) // 2
            if pairs[tails[mid]][1] < b:
                low = mid + 1
            else:
                high = mid
        if low:
            previous[i] = tails[low - 1]
        if low == len(tails):
            tails.append(i)
        else:
            tails[low] = i
    run, i = [], tails[-1] if tails else -1
    while i != -1:
        run.append(pairs[i])
        i = previous[i]
    return run[::-1]


def _copy(ops: Delta, start: int, length: int) -> None:
    if length <= 0:
        return
    if ops and isinstance(ops[-1], list) and ops[-1][0] + ops[-1][1] == start:
        ops[-1][1] += length
    else:
        ops.append([start, length])


def _insert(ops: Delta, text: str) -> None:
    if not text:
        return
    if ops and isinstance(ops[-1], str):
        ops[-1] += text
    else:
        ops.append(text)


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    if a[:limit] == b[:limit]:
        return limit
    low, high = 0, limit  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid
    return low


def _common_suffix(a: str, b: str, *, limit: int) -> int:
    """Length of the common end, at most `limit` (so it never overlaps the common start)."""
    if limit <= 0:
        return 0
    if a[len(a) - limit :] == b[len(b) - limit :]:
        return limit
    low, high = 0, limit
    while high - low > 1:
        mid = (low + high) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid
    return low
