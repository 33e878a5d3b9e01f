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
import itertools
import math
import sys
from dataclasses import dataclass
from functools import lru_cache

from . import alignment, graphemes

SAME, ADDED, REMOVED, CHANGED = "same", "added", "removed", "changed"
CONTEXT_LINES = 3
# A changed line is compared word by word only up to this many tokens per
# side (SequenceMatcher grows quadratically on long, repetitive lines), and
# only when at least this share of it is unchanged; otherwise it reads as
# one line removed and one added.
WORD_DIFF_MAX_TOKENS = 2_000
WORD_DIFF_MIN_RATIO = 0.4

# Words are compared as workspace.graphemes.tokens: words, runs of spaces
# and single other characters, never part of a character (a flag, a joined
# emoji, a letter with its accent shows whole, docs/adr/0128).
# Lines are aligned exactly (no popular-item heuristic) however many there
# are; what both texts start and end with is matched without looking
# (workspace.alignment), so a long document costs what changed in it.
LINES_EXACT = sys.maxsize
# A bounded comparison cuts a line longer than the characters it has left,
# rather than leave it out, but shows at least this many of it: the first
# line of a change (and the line that replaced it) however little is left,
# a later one only when this much is.
LINE_SHOWN_MIN = 500


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
    chars_left_out: int = 0  # of a line a bounded comparison cut: its characters after those shown

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.segments)


@dataclass(frozen=True)
class Gap:
    """Unchanged lines left out between the changes."""

    count: int
    kind: str = "gap"


@dataclass(frozen=True)
class Cut:
    """The rest of one change left out of a bounded comparison: its lines
    after those shown (the longer side's count)."""

    count: int
    kind: str = "cut"


@dataclass(frozen=True)
class TextDiff:
    rows: tuple[DiffLine | Gap | Cut, ...]
    # Of every change, shown or not: the lines a bounded comparison does not
    # show (not compared word by word) count as their line alignment reads,
    # a replaced line as changed, the lines a replacement adds or drops as
    # added or removed.
    lines_added: int
    lines_removed: int
    lines_changed: int
    changes: int = 0  # every changed stretch of the two texts
    changes_left_out: int = 0  # those after the ones shown
    lines_left_out: int = 0  # their lines (the longer side's count of each)

    @property
    def identical(self) -> bool:
        return not (self.lines_added or self.lines_removed or self.lines_changed or self.changes_left_out)

    @property
    def changes_shown(self) -> int:
        return self.changes - self.changes_left_out

    @property
    def bounded(self) -> bool:
        """Whether anything was left out."""
        return bool(self.changes_left_out) or any(
            isinstance(row, Cut) or (isinstance(row, DiffLine) and row.chars_left_out) for row in self.rows
        )


def _lines(text: str) -> list[str]:
    # "a\n" is two lines, the second empty: a trailing line break added or
    # removed shows as a change rather than disappearing.
    return text.split("\n") if text else []


def word_segments(old: str, new: str) -> tuple[tuple[Segment, ...], float]:
    """`old` turned into `new` as segments, and how alike the two are (0..1)."""
    a, b = graphemes.tokens(old), graphemes.tokens(new)
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


def _changed_block(old: list[str], new: list[str], old_start: int, new_start: int, *, paired: bool = False) -> list[DiffLine]:
    """A block of lines replaced by another: the lines paired in order are
    shown word by word where they are alike, the rest removed / added: all
    the removed lines, then all the added ones; or, `paired`, each removed
    line just before the line that replaced it, so a comparison that shows
    only its first lines shows the new text of each old line it shows."""
    rows: list[DiffLine] = []
    removed: list[DiffLine] = []
    added: list[DiffLine] = []
    for k in range(max(len(old), len(new))):
        o = old[k] if k < len(old) else None
        n = new[k] if k < len(new) else None
        old_no = old_start + k + 1 if o is not None else None
        new_no = new_start + k + 1 if n is not None else None
        if o is not None and n is not None:
            if o == n:
                # A line both sides have at the same place in the block (a
                # blank line between two rewritten paragraphs) is unchanged.
                rows.append(DiffLine(SAME, old_no, new_no, (Segment(o, SAME),)))
                continue
            small = max(len(o), len(n)) <= WORD_DIFF_MAX_TOKENS * 4 and (
                len(graphemes.tokens(o)) <= WORD_DIFF_MAX_TOKENS and len(graphemes.tokens(n)) <= WORD_DIFF_MAX_TOKENS
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
        if paired:
            rows += removed + added
            removed, added = [], []
    return rows + removed + added


def _cut(line: DiffLine, chars: int) -> DiffLine:
    """`line` with only its first `chars` characters (never part of a
    character: docs/adr/0128), and how many it leaves out."""
    if len(line.text) <= chars:
        return line
    text = line.text
    while chars > 0 and not graphemes.is_boundary(text, chars):
        chars -= 1
    segments: list[Segment] = []
    left = chars
    for segment in line.segments:
        if left <= 0:
            break
        segments.append(Segment(segment.text[:left], segment.change))
        left -= len(segment.text)
    return DiffLine(line.kind, line.old_number, line.new_number, tuple(segments), len(text) - chars)


def _budgeted(block: list[DiffLine], lines_left: float, chars_left: float) -> list[DiffLine]:
    """The rows of one change a bounded comparison shows: within the lines
    and characters left, and always its first. A removed line and the line
    that replaced it (paired, `_changed_block`) are shown together, the
    characters left shared between them when both do not fit, each cut with
    a mark: what would replace a line is never left out of what is shown of
    it (the approval card's preview is what the person approves)."""
    kept: list[DiffLine] = []
    at = 0
    while at < len(block) and (not kept or lines_left > 0):
        pair = block[at].kind == REMOVED and at + 1 < len(block) and block[at + 1].kind == ADDED
        rows = block[at : at + 2] if pair else block[at : at + 1]
        sizes = [len(row.text) for row in rows]
        if sum(sizes) > chars_left:
            room = max(chars_left, LINE_SHOWN_MIN * len(rows)) if not kept else chars_left
            if room < LINE_SHOWN_MIN * len(rows):
                break
            # The shorter side whole if it takes less than its half, the other the rest.
            shares = [int(room // len(rows))] * len(rows)
            if pair:
                short = 0 if sizes[0] <= sizes[1] else 1
                shares[short] = min(sizes[short], shares[short])
                shares[1 - short] = int(room) - shares[short]
            rows = [_cut(row, share) for row, share in zip(rows, shares, strict=True)]
        kept += rows
        lines_left -= len(rows)
        chars_left -= sum(len(row.text) for row in rows)
        at += len(rows)
    return kept


def _aligned_counts(old_lines: int, new_lines: int, tag: str) -> tuple[int, int, int]:
    """(added, removed, changed) of lines not compared, as their alignment
    reads them: in a replacement, each old line paired with a new one is
    changed, the lines one side has over the other added or removed."""
    changed = min(old_lines, new_lines) if tag == "replace" else 0
    return new_lines - changed, old_lines - changed, changed


def _reach_within(old: list[str], new: list[str], chars_left: float) -> int:
    """How many of a change's lines can be shown in `chars_left` characters:
    the row of a line pair holds at least the longer of the two (a line
    compared word by word holds both), so lines past that many are never
    shown, and need not be compared. One more than fit, and at least one,
    so the budget, not this count, decides where the change is cut."""
    reach, used = 0, 0
    for k in range(max(len(old), len(new))):
        reach += 1
        used += max(len(old[k]) if k < len(old) else 0, len(new[k]) if k < len(new) else 0)
        if used > chars_left:
            break
    return max(reach, 1)


def diff_text(
    old: str,
    new: str,
    *,
    context: int = CONTEXT_LINES,
    max_changes: int | None = None,
    max_lines: int | None = None,
    max_chars: int | None = None,
) -> TextDiff:
    """`old` -> `new` as rows. With the `max_` bounds, only the first
    changes are shown: at most `max_changes` of them, `max_lines` of their
    lines and `max_chars` characters of every row shown, each change at
    least its first line; the rest is counted, and not compared word by
    word (docs/adr/0110: a comparison of two far-apart versions of a long
    document is thousands of lines otherwise)."""
    a, b = _lines(old), _lines(new)
    rows: list[DiffLine | Gap | Cut] = []
    counts = {ADDED: 0, REMOVED: 0, CHANGED: 0}
    opcodes = alignment.opcodes(a, b, exact_up_to=LINES_EXACT)
    changes = sum(1 for op in opcodes if op[0] != "equal")
    shown, lines_left, chars_left = 0, max_lines or math.inf, max_chars or math.inf
    stopped_at = None
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            # The change after this stretch is not shown: this is the end of what is.
            full = (max_changes is not None and shown >= max_changes) or lines_left <= 0 or chars_left <= 0
            stop = shown > 0 and index < len(opcodes) - 1 and full
            same = [DiffLine(SAME, i1 + k + 1, j1 + k + 1, (Segment(a[i1 + k], SAME),)) for k in range(i2 - i1)]
            first, last = index == 0, index == len(opcodes) - 1 or stop
            head = 0 if first else context  # lines kept after the change before
            tail = 0 if last else context  # lines kept before the change after
            if stop:
                rows.extend(same[:head])
                stopped_at = index + 1
                break
            kept: list[DiffLine | Gap] = list(same)
            if len(same) > head + tail:
                kept = [*same[:head], *([Gap(len(same) - head - tail)] if len(same) - head - tail else [])]
                kept += same[len(same) - tail :] if tail else []
            rows.extend(kept)
            chars_left -= sum(len(line.text) for line in kept if isinstance(line, DiffLine))
            continue
        # Only as many lines as can be shown are compared (word by word, the costly part).
        reach = int(min(max(i2 - i1, j2 - j1), max(lines_left, 1)))
        if max_chars is not None:
            reach = _reach_within(a[i1 : i1 + reach], b[j1 : j1 + reach], chars_left)
        bounded = max_lines is not None or max_chars is not None
        block = (
            _changed_block(a[i1 : i1 + reach], b[j1 : j1 + reach], i1, j1, paired=bounded)
            if tag == "replace"
            else (
                [DiffLine(REMOVED, i1 + k + 1, None, (Segment(a[i1 + k], REMOVED),)) for k in range(min(i2 - i1, reach))]
                + [DiffLine(ADDED, None, j1 + k + 1, (Segment(b[j1 + k], ADDED),)) for k in range(min(j2 - j1, reach))]
            )
        )
        if bounded:
            block = _budgeted(block, lines_left, chars_left)
        shown += 1
        lines_left -= len(block)
        chars_left -= sum(len(line.text) for line in block)
        for line in block:
            if line.kind in counts:
                counts[line.kind] += 1
        rows.extend(block)
        old_left = (i2 - i1) - sum(1 for line in block if line.old_number is not None)
        new_left = (j2 - j1) - sum(1 for line in block if line.new_number is not None)
        if old_left or new_left:
            rows.append(Cut(max(old_left, new_left)))
            for kind, count in zip((ADDED, REMOVED, CHANGED), _aligned_counts(old_left, new_left, tag), strict=True):
                counts[kind] += count
    left_out = [op for op in opcodes[stopped_at:] if op[0] != "equal"] if stopped_at is not None else []
    for tag, i1, i2, j1, j2 in left_out:
        for kind, count in zip((ADDED, REMOVED, CHANGED), _aligned_counts(i2 - i1, j2 - j1, tag), strict=True):
            counts[kind] += count
    if not (counts[ADDED] or counts[REMOVED] or counts[CHANGED]):
        rows = []
    return TextDiff(
        tuple(rows),
        counts[ADDED],
        counts[REMOVED],
        counts[CHANGED],
        changes=changes,
        changes_left_out=len(left_out),
        lines_left_out=sum(max(i2 - i1, j2 - j1) for _tag, i1, i2, j1, j2 in left_out),
    )


# --- one turn's changes as hunks the person keeps or undoes one by one ---------------


@dataclass(frozen=True)
class Hunk:
    """One changed stretch of lines between two texts: lines
    [old_start, old_end) of the old text became [new_start, new_end) of the
    new one (0-based; an empty range is a pure insertion or deletion)."""

    index: int  # its place among the hunks of the two texts, from 0
    old_start: int
    old_end: int
    new_start: int
    new_end: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    rows: tuple[DiffLine, ...]  # for the view: removed / added / changed word by word
    context_before: str = ""  # the unchanged line just above, for orientation
    context_after: str = ""


def change_hunks(old: str, new: str) -> list[Hunk]:
    """The changed stretches of `old` -> `new`, in document order. Derived
    from the two texts alone, so the same two texts always give the same
    hunks with the same indexes (a kept or undone hunk is stored by index).
    Every push of the document carries the review of the agent's last turn:
    the hunks of one pair of texts are worked out once per process."""
    return list(_change_hunks(old, new))


@lru_cache(maxsize=16)
def _change_hunks(old: str, new: str) -> tuple[Hunk, ...]:
    a, b = _lines(old), _lines(new)
    hunks: list[Hunk] = []
    for tag, i1, i2, j1, j2 in alignment.opcodes(a, b, exact_up_to=LINES_EXACT):
        if tag == "equal":
            continue
        if tag == "replace":
            rows = _changed_block(a[i1:i2], b[j1:j2], i1, j1)
        else:
            rows = [DiffLine(REMOVED, i1 + k + 1, None, (Segment(a[i1 + k], REMOVED),)) for k in range(i2 - i1)] + [
                DiffLine(ADDED, None, j1 + k + 1, (Segment(b[j1 + k], ADDED),)) for k in range(j2 - j1)
            ]
        hunks.append(
            Hunk(
                index=len(hunks),
                old_start=i1,
                old_end=i2,
                new_start=j1,
                new_end=j2,
                old_lines=tuple(a[i1:i2]),
                new_lines=tuple(b[j1:j2]),
                rows=tuple(rows),
                context_before=b[j1 - 1] if j1 > 0 else "",
                context_after=b[j2] if j2 < len(b) else "",
            )
        )
    return tuple(hunks)


def _line_map(after: list[str], current: list[str]) -> list[int | None]:
    """For each line of `after`, where it is in `current` if it is unchanged there."""
    where: list[int | None] = [None] * len(after)
    for i, j, size in alignment.matching_blocks(after, current, exact_up_to=LINES_EXACT):
        for k in range(size):
            where[i + k] = j + k
    return where


def _current_span(hunk: Hunk, where: list[int | None], after_len: int, current_len: int) -> tuple[int, int] | None:
    """The lines of the current text that hold `hunk`'s new lines untouched,
    as [start, end); None when any of them changed since (or, for a deletion,
    when nothing around the place it was is left to find it by)."""
    if hunk.new_end > hunk.new_start:
        lines = where[hunk.new_start : hunk.new_end]
        span = [line for line in lines if line is not None]
        if len(span) < len(lines):
            return None
        if any(later != earlier + 1 for earlier, later in itertools.pairwise(span)):
            return None  # lines typed in between
        return span[0], span[-1] + 1
    # A deletion: put the old lines back where they were, between the
    # neighbours they had, if those neighbours are still side by side.
    before = where[hunk.new_start - 1] if hunk.new_start > 0 else -1
    after = where[hunk.new_start] if hunk.new_start < after_len else current_len
    if before is None or after is None or after != before + 1:
        return None
    return after, after


def revert_hunks(after: str, current: str, hunks: list[Hunk]) -> tuple[str, list[int], list[int]]:
    """`current` with each of `hunks` (hunks of some old text -> `after`)
    put back to its old lines, where its new lines are still there exactly.

    Returns (the text, indexes reverted, indexes refused because the person,
    the agent or another tab changed those lines since). Nothing around a
    reverted hunk is touched, so every other edit made since stays."""
    a, c = _lines(after), _lines(current)
    where = _line_map(a, c)
    spans = []
    reverted, refused = [], []
    for hunk in hunks:
        span = _current_span(hunk, where, len(a), len(c))
        if span is None:
            refused.append(hunk.index)
        else:
            spans.append((span, hunk))
            reverted.append(hunk.index)
    # From the end, so the spans still to replace keep their line numbers.
    for (start, end), hunk in sorted(spans, key=lambda item: item[0], reverse=True):
        c[start:end] = list(hunk.old_lines)
    return "\n".join(c), reverted, refused
