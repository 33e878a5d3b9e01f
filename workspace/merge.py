"""Three-way merge of the shared document's text (docs/adr/0013).

Pure Python, no Django: `merge_text(base, ours, theirs)` combines two edits
of the same `base` text. `theirs` is the current text (what is saved now),
`ours` the text being saved, `base` the version `ours` was edited from.

1. merge3 aligns the three texts line by line. A line region changed on one
   side only takes that side; changed identically on both, it is taken once.
2. A region changed on both sides (merge3's conflict) is merged again the
   same way over word / whitespace / punctuation tokens, so two edits on
   neighbouring lines, or in different words of one line, both land.
3. What still overlaps at token level merges only when one side merely
   added text at an edge of it (before or after the text the other side
   replaced), or when both wrote the same tokens at its start or end and
   what is left changed on one side only (an addition that extends the
   other side's addition at the same place). Lines both sides only added
   at the same place, differently, are both kept, ours first: no text of
   the base is at stake. Anything else is a `Conflict`: reported, never
   guessed.

Input is expected with plain "\\n" line breaks (the document service
normalises them); nothing here depends on it for correctness.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from merge3 import Merge3

from . import alignment, graphemes

OURS, THEIRS, BOTH = "ours", "theirs", "both"
RESOLUTIONS = (OURS, THEIRS, BOTH)

_LINES = re.compile(r"[^\n]*\n|[^\n]+")
# The word-level tokens are workspace.graphemes.tokens: words, every line
# break a token of its own (spaces and tabs run together: a run of blank
# lines as one token made "\n" and "\n\n" unrelated, so two sides that both
# added a blank line, at what merge3 or the shared-lines cut placed at
# neighbouring points among identical lines, conflicted (or not) depending
# on unchanged text around them), and never part of a character: a flag, a
# joined emoji or a letter with its accent is one token, so two sides that
# changed it differently conflict (docs/adr/0128).
# A side that kept less than this share of a passage's characters rewrote
# it: it is not merged with the other side word by word (see _TokenMatcher).
MIN_KEPT_SHARE = 0.5
# Passages up to this many tokens are aligned exactly (see _TokenMatcher).
# Either pass costs what differs, not the whole text (workspace.alignment).
EXACT_ALIGNMENT_MAX_TOKENS = 1_000


@dataclass(frozen=True)
class Conflict:
    """A part both sides changed differently. `base` is None when the common
    version is unknown. Offsets are character positions: `start`/`end` in
    the current text (theirs), `ours_start`/`ours_end` in ours."""

    base: str | None
    ours: str
    theirs: str
    start: int
    end: int
    ours_start: int
    ours_end: int

    def resolved(self, choice: str, *, whole_lines: bool = False) -> str:
        if choice == OURS:
            return self.ours
        if choice == THEIRS:
            return self.theirs
        if choice == BOTH:
            return self.ours + _separator(self.ours, self.theirs, whole_lines) + self.theirs
        raise ValueError(f"choice must be one of {RESOLUTIONS}, not {choice!r}")


def _separator(first: str, second: str, whole_lines: bool) -> str:
    # Lines stack one under the other; words sit side by side.
    if not first or not second or first.endswith("\n") or second.startswith("\n"):
        return ""
    return "\n" if whole_lines or "\n" in first or "\n" in second else " "


@dataclass(frozen=True)
class MergeResult:
    """The merged text as agreed pieces (str) and `Conflict`s, in order."""

    pieces: tuple[str | Conflict, ...]

    @property
    def conflicts(self) -> list[Conflict]:
        return [piece for piece in self.pieces if isinstance(piece, Conflict)]

    @property
    def clean(self) -> bool:
        return not self.conflicts

    @property
    def text(self) -> str | None:
        """The merged text; None while anything conflicts."""
        return self.resolve(OURS) if self.clean else None

    def resolve(self, choice: str) -> str:
        """The text with every conflict settled the same way: `ours`, `theirs`,
        or `both` (ours first, on its own line when the conflict is whole
        lines)."""
        out = []
        for i, piece in enumerate(self.pieces):
            if not isinstance(piece, Conflict):
                out.append(piece)
                continue
            before = self.pieces[i - 1] if i else "\n"
            after = self.pieces[i + 1] if i + 1 < len(self.pieces) else "\n"
            whole_lines = isinstance(before, str) and isinstance(after, str) and before.endswith("\n") and after.startswith("\n")
            out.append(piece.resolved(choice, whole_lines=whole_lines))
        return "".join(out)


class _TokenMatcher(alignment.Matcher):
    """The alignment for the word-level pass (merge3 compares the base, as
    `a`, with each side), with two rules of its own.

    - difflib's "popular item" heuristic is off for stretches of up to
      EXACT_ALIGNMENT_MAX_TOKENS tokens (workspace.alignment): it would stop
      a space or a common word from anchoring a match. The line pass keeps
      difflib's default, as merge3 does.
    - A side that rewrote the passage (kept less than MIN_KEPT_SHARE of it)
      keeps only the matches at its start and end: inside a rewrite, a
      stray "of the" shared with the old text is a coincidence, not a place
      where the other side's edit may land.
    - Nor is a space that words replaced on both sides of it share: a
      sentence selected and typed over ("says what was found" became
      "SELREPLACED by Bea.") kept most of its line, and matched word by
      word its spaces became places where the other side's words typed
      inside the old sentence landed, in the middle of the new one
      ("SELREPLACED by <her words> Bea."). Without them the sentence is one
      replacement, and words typed inside it are a conflict; words typed
      at its edge still merge (docs/adr/0162).
    """

    exact_up_to = EXACT_ALIGNMENT_MAX_TOKENS

    def get_matching_blocks(self):
        blocks = self._without_spaces_between_replacements(super().get_matching_blocks())
        kept = sum(sum(map(len, self.a[i : i + n])) for i, _, n in blocks)
        if kept >= MIN_KEPT_SHARE * sum(map(len, self.a)):
            return blocks
        edges = [(i, j, n) for i, j, n in blocks[:-1] if (i == 0 and j == 0) or (i + n == len(self.a) and j + n == len(self.b))]
        return edges + blocks[-1:]

    def _without_spaces_between_replacements(self, blocks):
        kept: list = []
        for k, (i, j, n) in enumerate(blocks[:-1]):
            prev_i, prev_j = (kept[-1][0] + kept[-1][2], kept[-1][1] + kept[-1][2]) if kept else (0, 0)
            next_i, next_j = blocks[k + 1][0], blocks[k + 1][1]
            spaces = all(token and not token.strip(" \t") for token in self.a[i : i + n])
            replaced_before = i > prev_i and j > prev_j
            replaced_after = next_i > i + n and next_j > j + n
            if not (spaces and replaced_before and replaced_after):
                kept.append((i, j, n))
        return [*kept, blocks[-1]]


def merge_text(base: str, ours: str, theirs: str) -> MergeResult:
    if ours == theirs or ours == base:
        return MergeResult((theirs,) if theirs else ())
    if theirs == base:
        return MergeResult((ours,) if ours else ())
    merged = _merge_text(base, ours, theirs)
    if merged.clean or not base or base.endswith("\n"):
        return merged
    # A text typed in the editor often ends without a line break: one side
    # goes on writing its last line while the other adds lines after it
    # (the agent appending), and by lines both changed that last line. With
    # a line break after all three, the lines after it are an addition of
    # their own (docs/adr/0116); it is taken off again once merged.
    ended = _merge_text(base + "\n", ours + "\n", theirs + "\n")
    text = ended.text
    if text is None or not text.endswith("\n"):
        return merged
    return MergeResult((text[:-1],) if len(text) > 1 else ())


def _merge_text(base: str, ours: str, theirs: str) -> MergeResult:
    # Whole lines all three start and end with are agreed as they stand; only
    # the stretch between them is merged, so a long document costs what changed.
    head, tail = _shared_lines(base, ours, theirs)
    middle = [text[head : len(text) - tail] for text in (base, ours, theirs)]
    base_lines, ours_lines, theirs_lines = (_LINES.findall(text) for text in middle)
    pieces = _merge_items(base_lines, ours_lines, theirs_lines, head, head, refine=True)
    return MergeResult(tuple(_coalesce([base[:head], *pieces, base[len(base) - tail :]])))


def merge_lines_keeping_ours(base: str, ours: str, theirs: str) -> str:
    """Both sides' changes of `base` by whole lines, where lines both changed
    are ours as they stand: never a conflict, and never a line made of
    words from both. (The review puts the person's edits made during an
    agent turn on the text before it this way: a line they rewrote after
    the agent changed it is theirs, not part of the agent's change.)"""
    base_lines, ours_lines, theirs_lines = (_LINES.findall(text) for text in (base, ours, theirs))
    merged = []
    iz = io = it = 0
    merger = Merge3(base_lines, ours_lines, theirs_lines, sequence_matcher=alignment.Matcher)
    for zs, ze, os_, oe, ts, te in merger.find_sync_regions():
        z, o, t = ("".join(lines) for lines in (base_lines[iz:zs], ours_lines[io:os_], theirs_lines[it:ts]))
        merged.append(t if o == z else o)
        merged.append("".join(base_lines[zs:ze]))
        iz, io, it = ze, oe, te
    return "".join(merged)


def _shared_lines(base: str, ours: str, theirs: str) -> tuple[int, int]:
    """(characters of whole lines at the start, at the end) the three texts share."""
    head = min(graphemes.common_prefix(base, ours), graphemes.common_prefix(base, theirs))
    head = base.rfind("\n", 0, head) + 1
    rests = [text[head:][::-1] for text in (base, ours, theirs)]
    tail = min(graphemes.common_prefix(rests[0], rests[1]), graphemes.common_prefix(rests[0], rests[2]))
    shared = base[len(base) - tail :] if tail else ""
    # It must start a line in all three: from just after its first line break.
    if tail and any(text[len(text) - tail - 1 : len(text) - tail] not in ("", "\n") for text in (base, ours, theirs)):
        tail = len(shared) - (shared.find("\n") + 1) if "\n" in shared else 0
    return head, tail


def without_base(ours: str, theirs: str) -> MergeResult:
    """Two texts whose common version is unknown: one conflict spanning both,
    unless they are equal."""
    if ours == theirs:
        return MergeResult((ours,) if ours else ())
    return MergeResult((Conflict(None, ours, theirs, 0, len(theirs), 0, len(ours)),))


def merge_value(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """A one-line value (the title) merged as a whole: (merged, conflicted).
    When conflicted, `merged` is ours."""
    if ours == theirs or ours == base:
        return theirs, False
    if theirs == base:
        return ours, False
    return ours, True


# --- the walk -----------------------------------------------------------------------


def _offsets(items: list[str], start: int) -> list[int]:
    """offsets[i] = where item i starts; offsets[len(items)] = where they end."""
    return list(itertools.accumulate(map(len, items), initial=start))


def _merge_items(base, ours, theirs, ours_at: int, theirs_at: int, *, refine: bool) -> list[str | Conflict]:
    """Merge three item lists (lines or tokens); `ours_at` / `theirs_at` are
    where they start in the full texts, for the conflicts' offsets."""
    ours_offsets, theirs_offsets = _offsets(ours, ours_at), _offsets(theirs, theirs_at)
    pieces: list[str | Conflict] = []
    iz = io = it = 0
    # Sync regions are where all three agree; between two of them each side
    # either kept the base, or changed it. The last one is empty, at the ends.
    merger = Merge3(base, ours, theirs, sequence_matcher=alignment.Matcher if refine else _TokenMatcher)
    for zs, ze, os_, oe, ts, te in merger.find_sync_regions():
        if (iz, io, it) != (zs, os_, ts):
            pieces += _settle(base[iz:zs], ours[io:os_], theirs[it:ts], ours_offsets[io], theirs_offsets[it], refine=refine)
        if ze > zs:
            pieces.append("".join(base[zs:ze]))
        iz, io, it = ze, oe, te
    return pieces


def _settle(base, ours, theirs, ours_at: int, theirs_at: int, *, refine: bool) -> list[str | Conflict]:
    z, o, t = "".join(base), "".join(ours), "".join(theirs)
    if o == t:
        return [o]
    if o == z:
        return [t]
    if t == z:
        return [o]
    if refine:
        # Both sides changed these lines: look again, word by word.
        # Of a long line, only what each side changed is tokenised again.
        base_tokens, ours_tokens, theirs_tokens = graphemes.tokens_of_versions(z, o, t)
        pieces = _merge_items(base_tokens, ours_tokens, theirs_tokens, ours_at, theirs_at, refine=False)
        if not z and any(isinstance(piece, Conflict) for piece in pieces):
            # Both only added lines here, and different ones (a paragraph the
            # person typed at the end while the agent appended a section):
            # no text of the base is at stake, so both stay, ours first as
            # "Keep both" puts them, each on lines of its own (docs/adr/0116).
            return [o + ("" if o.endswith("\n") else "\n") + t]
        return pieces
    added = _edge_addition(z, o, t)
    if added is not None:
        return [added]
    return _trimmed_overlap(base, ours, theirs, ours_at, theirs_at)


def _edge_addition(z: str, o: str, t: str) -> str | None:
    """Both sides changed the same tokens `z`. Text one side only added
    before or after `z` does not overlap the other side's change of it.
    Where the addition meets the other side's text it must be between two
    characters: an accent added to "cafe" does not go on the "tea" the
    other side wrote instead (docs/adr/0128)."""
    ours_added, theirs_added = _addition(z, o), _addition(z, t)
    if ours_added and not theirs_added:
        side, added = ours_added
        return _whole(added, t) if side == "before" else _whole(t, added)
    if theirs_added and not ours_added:
        side, added = theirs_added
        return _whole(added, o) if side == "before" else _whole(o, added)
    if ours_added and theirs_added and ours_added[0] != theirs_added[0]:
        before, after = (ours_added[1], theirs_added[1]) if ours_added[0] == "before" else (theirs_added[1], ours_added[1])
        return _whole(before, z, after)
    return None


def _whole(*parts: str) -> str | None:
    """The parts joined, or None when a join falls inside a character."""
    text, at = "".join(parts), 0
    for part in parts[:-1]:
        at += len(part)
        if not graphemes.is_boundary(text, at):
            return None
    return text


def _addition(z: str, side: str) -> tuple[str, str] | None:
    """("before" | "after", the added text) when `side` is `z` with text
    added at one end only; None otherwise (and for an empty `z`, and when
    the "added" text is part of a character of `z`'s: an accent, a skin
    tone or a joiner put on its first or last character changed it)."""
    if not z or side == z:
        return None
    if side.endswith(z) and graphemes.is_boundary(side, len(side) - len(z)):
        return "before", side[: len(side) - len(z)]
    if side.startswith(z) and graphemes.is_boundary(side, len(z)):
        return "after", side[len(z) :]
    return None


def _trimmed_overlap(base, ours, theirs, ours_at: int, theirs_at: int) -> list[str | Conflict]:
    """Tokens both sides wrote alike at the start or end of an overlap are
    agreed (two additions at one place where one extends the other, the
    person typing on while their first save was on its way); if what is
    left changed on one side only, it takes that side, else it conflicts."""
    head = _shared(ours, theirs)
    tail = _shared(ours[head:][::-1], theirs[head:][::-1])
    prefix, suffix = "".join(ours[:head]), "".join(ours[len(ours) - tail :])
    # The base loses the same tokens where it has them too.
    base_head = head if base[:head] == ours[:head] else 0
    rest = base[base_head:]
    base_tail = tail if 0 < tail <= len(rest) and rest[len(rest) - tail :] == ours[len(ours) - tail :] else 0
    z = "".join(rest[: len(rest) - base_tail])
    o, t = "".join(ours[head : len(ours) - tail]), "".join(theirs[head : len(theirs) - tail])
    middle: str | Conflict
    if t == z:
        middle = o
    elif o == z:
        middle = t
    else:
        at_ours, at_theirs = ours_at + len(prefix), theirs_at + len(prefix)
        middle = Conflict(z, o, t, at_theirs, at_theirs + len(t), at_ours, at_ours + len(o))
    return [prefix, middle, suffix]


def _shared(a: list[str], b: list[str]) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def _coalesce(pieces: list[str | Conflict]) -> list[str | Conflict]:
    """Join neighbouring agreed pieces, and two conflicts separated only by
    spaces within a line (one edit of a phrase, not two)."""
    out: list[str | Conflict] = []
    for piece in pieces:
        if isinstance(piece, str):
            if not piece:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += piece
            else:
                out.append(piece)
            continue
        if len(out) >= 2 and isinstance(out[-2], Conflict) and isinstance(out[-1], str) and not out[-1].strip(" \t"):
            gap = out.pop()
            piece = _join(out.pop(), gap, piece)  # type: ignore[arg-type]  # their types are checked above
        elif out and isinstance(out[-1], Conflict):
            piece = _join(out.pop(), "", piece)  # type: ignore[arg-type]  # checked above
        out.append(piece)
    return out


def _join(first: Conflict, gap: str, second: Conflict) -> Conflict:
    return Conflict(
        first.base + gap + second.base,  # type: ignore[operator]  # merge_text's conflicts know their base
        first.ours + gap + second.ours,
        first.theirs + gap + second.theirs,
        first.start,
        second.end,
        first.ours_start,
        second.ours_end,
    )
