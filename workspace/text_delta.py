"""A text as a delta against another: what a snapshot stores for a document
that changed a little since the previous snapshot (docs/adr/0015).

A delta is a list of operations that rebuild the new text from the base:
`[start, length]` copies that many characters of the base from `start`, a
string inserts itself. Offsets count Python characters (code points), so
any text, whatever its script or line breaks, rebuilds exactly.
"""

import json
from difflib import SequenceMatcher

Delta = list  # of [start, length] | str


def delta_between(base: str, new: str) -> Delta:
    """Operations that turn `base` into `new`.

    The common start and end are cut first (one edit anywhere costs a copy,
    the edit and a copy, in time linear in the text); what is left is
    aligned by line, and each replaced run of lines is cut the same way, so
    a word changed inside a long paragraph costs that word."""
    ops: Delta = []
    prefix = _common_prefix(base, new)
    suffix = _common_suffix(base, new, limit=min(len(base), len(new)) - prefix)
    _copy(ops, 0, prefix)
    _middle(ops, base, new, prefix, len(base) - suffix, prefix, len(new) - suffix)
    _copy(ops, len(base) - suffix, suffix)
    return ops


def apply_delta(base: str, ops: Delta) -> str:
    return "".join(base[op[0] : op[0] + op[1]] if isinstance(op, list) else op for op in ops)


def encode(ops: Delta) -> str:
    return json.dumps(ops, ensure_ascii=False, separators=(",", ":"))


def decode(text: str) -> Delta:
    return json.loads(text)


def _middle(ops: Delta, base: str, new: str, a_start: int, a_end: int, b_start: int, b_end: int) -> None:
    if a_start == a_end:
        _insert(ops, new[b_start:b_end])
        return
    if b_start == b_end:
        return
    a_lines = base[a_start:a_end].splitlines(keepends=True)
    b_lines = new[b_start:b_end].splitlines(keepends=True)
    if len(a_lines) == 1 or len(b_lines) == 1:
        _insert(ops, new[b_start:b_end])
        return
    a_offsets = _offsets(a_lines, a_start)
    b_offsets = _offsets(b_lines, b_start)
    matcher = SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a_from, a_to, b_from, b_to = a_offsets[i1], a_offsets[i2], b_offsets[j1], b_offsets[j2]
        if tag == "equal":
            _copy(ops, a_from, a_to - a_from)
        elif tag == "insert":
            _insert(ops, new[b_from:b_to])
        elif tag == "replace":
            a_chunk, b_chunk = base[a_from:a_to], new[b_from:b_to]
            prefix = _common_prefix(a_chunk, b_chunk)
            suffix = _common_suffix(a_chunk, b_chunk, limit=min(len(a_chunk), len(b_chunk)) - prefix)
            _copy(ops, a_from, prefix)
            _insert(ops, b_chunk[prefix : len(b_chunk) - suffix])
            _copy(ops, a_to - suffix, suffix)
        # "delete": nothing of it is copied


def _offsets(lines: list[str], start: int) -> list[int]:
    offsets = [start]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return offsets


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
