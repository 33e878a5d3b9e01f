"""What changed between two versions of the document, for the person to read.

Pure Python, no Django: `diff_text(old, new)` aligns the two texts line by
line with difflib (the standard library's SequenceMatcher), then, within a
changed line that still resembles the line it replaced, word by word, so
the view highlights the words that changed rather than the whole line.
Unchanged stretches are shortened to CONTEXT_LINES around each change.

The result is plain data (text segments marked same / added / removed); the
template escapes it like any other text (docs/adr/0013 for the versions).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

SAME, ADDED, REMOVED, CHANGED = "same", "added", "removed", "changed"
CONTEXT_LINES = 3
# A changed line is compared word by word only up to this many tokens per
# side (SequenceMatcher grows quadratically on long, repetitive lines), and
# only when at least this share of it is unchanged; otherwise it reads as
# one line removed and one added.
WORD_DIFF_MAX_TOKENS = 2_000
WORD_DIFF_MIN_RATIO = 0.4

_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Segment:
    text: str
    change: str  # SAME, ADDED or REMOVED


@dataclass(frozen=True)
class DiffLine:
    kind: str  # SAME, ADDED, REMOVED, or CHANGED (words added and removed inside one line)
    old_number: int | None  # 1-based, None for an added line
    new_number: int | None  # 1-based, None for a removed line
    segments: tuple[Segment, ...]

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)


@dataclass(frozen=True)
class Gap:
    """Unchanged lines left out between the changes."""

    count: int
    kind: str = "gap"


@dataclass(frozen=True)
class TextDiff:
    rows: tuple[DiffLine | Gap, ...]
    lines_added: int
    lines_removed: int
    lines_changed: int

    @property
    def identical(self) -> bool:
        return not (self.lines_added or self.lines_removed or self.lines_changed)


def _lines(text: str) -> list[str]:
    # "a\n" is two lines, the second empty: a trailing line break added or
    # removed shows as a change rather than disappearing.
    return text.split("\n") if text else []


def word_segments(old: str, new: str) -> tuple[tuple[Segment, ...], float]:
    """`old` turned into `new` as segments, and how alike the two are (0..1)."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    segments: list[Segment] = []

    def add(text: str, change: str) -> None:
        if not text:
            return
        if segments and segments[-1].change == change:
            segments[-1] = Segment(segments[-1].text + text, change)
        else:
            segments.append(Segment(text, change))

    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("".join(a[i1:i2]), SAME)
        else:
            add("".join(a[i1:i2]), REMOVED)
            add("".join(b[j1:j2]), ADDED)
    return tuple(segments), matcher.ratio()


def _changed_block(old: list[str], new: list[str], old_start: int, new_start: int) -> list[DiffLine]:
    """A block of lines replaced by another: the lines paired in order are
    shown word by word where they are alike, the rest removed / added."""
    rows: list[DiffLine] = []
    removed: list[DiffLine] = []
    added: list[DiffLine] = []
    for k in range(max(len(old), len(new))):
        o = old[k] if k < len(old) else None
        n = new[k] if k < len(new) else None
        old_no = old_start + k + 1 if o is not None else None
        new_no = new_start + k + 1 if n is not None else None
        if o is not None and n is not None:
            small = max(len(o), len(n)) <= WORD_DIFF_MAX_TOKENS * 4 and (
                len(_TOKENS.findall(o)) <= WORD_DIFF_MAX_TOKENS and len(_TOKENS.findall(n)) <= WORD_DIFF_MAX_TOKENS
            )
            if small:
                segments, ratio = word_segments(o, n)
                if ratio >= WORD_DIFF_MIN_RATIO:
                    rows.append(DiffLine(CHANGED, old_no, new_no, segments))
                    continue
        if o is not None:
            removed.append(DiffLine(REMOVED, old_no, None, (Segment(o, REMOVED),)))
        if n is not None:
            added.append(DiffLine(ADDED, None, new_no, (Segment(n, ADDED),)))
    return rows + removed + added


def diff_text(old: str, new: str, *, context: int = CONTEXT_LINES) -> TextDiff:
    a, b = _lines(old), _lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows: list[DiffLine | Gap] = []
    counts = {ADDED: 0, REMOVED: 0, CHANGED: 0}
    opcodes = matcher.get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            same = [DiffLine(SAME, i1 + k + 1, j1 + k + 1, (Segment(a[i1 + k], SAME),)) for k in range(i2 - i1)]
            first, last = index == 0, index == len(opcodes) - 1
            head = 0 if first else context  # lines kept after the change before
            tail = 0 if last else context  # lines kept before the change after
            if len(same) > head + tail:
                kept = same[:head] + ([Gap(len(same) - head - tail)] if len(same) - head - tail else []) + (
                    same[len(same) - tail:] if tail else []
                )
                rows.extend(kept)
            else:
                rows.extend(same)
            continue
        block = _changed_block(a[i1:i2], b[j1:j2], i1, j1) if tag == "replace" else (
            [DiffLine(REMOVED, i1 + k + 1, None, (Segment(a[i1 + k], REMOVED),)) for k in range(i2 - i1)]
            + [DiffLine(ADDED, None, j1 + k + 1, (Segment(b[j1 + k], ADDED),)) for k in range(j2 - j1)]
        )
        for line in block:
            counts[line.kind] += 1
        rows.extend(block)
    if not (counts[ADDED] or counts[REMOVED] or counts[CHANGED]):
        rows = []
    return TextDiff(tuple(rows), counts[ADDED], counts[REMOVED], counts[CHANGED])
