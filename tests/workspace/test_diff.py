"""What the document's history shows changed between two versions:
lines added and removed, words changed inside a line, unchanged stretches
shortened, identical and empty texts."""

import pytest

from workspace.diff import ADDED, CHANGED, REMOVED, SAME, Cut, Gap, change_hunks, diff_text, revert_hunks, word_segments


def _shown(diff):
    """Each row as (kind, text with [-removed-] and {+added+} marked), gaps as ("gap", count)."""
    rows = []
    for row in diff.rows:
        if isinstance(row, Gap):
            rows.append(("gap", row.count))
            continue
        marked = "".join(
            s.text if s.change == SAME or row.kind != CHANGED else (f"[-{s.text}-]" if s.change == REMOVED else f"{{+{s.text}+}}")
            for s in row.segments
        )
        rows.append((row.kind, marked))
    return rows


def test_an_added_line_and_a_removed_line_are_shown_with_the_lines_around_them():
    old = "# Report\nIntro.\nMethods.\nResults."
    new = "# Report\nIntro.\nA new paragraph.\nMethods."
    diff = diff_text(old, new)
    assert _shown(diff) == [
        (SAME, "# Report"),
        (SAME, "Intro."),
        (ADDED, "A new paragraph."),
        (SAME, "Methods."),
        (REMOVED, "Results."),
    ]
    assert (diff.lines_added, diff.lines_removed, diff.lines_changed) == (1, 1, 0)
    assert not diff.identical


def test_a_changed_word_inside_a_line_is_marked_word_by_word():
    diff = diff_text("The results were good.\n", "The results were excellent.\n")
    assert _shown(diff) == [(CHANGED, "The results were [-good-]{+excellent+}."), (SAME, "")]
    assert (diff.lines_added, diff.lines_removed, diff.lines_changed) == (0, 0, 1)
    [line, _] = diff.rows
    assert (line.old_number, line.new_number) == (1, 1)


def test_a_rewritten_line_reads_as_one_removed_and_one_added():
    diff = diff_text("alpha beta gamma", "completely different words here")
    assert _shown(diff) == [(REMOVED, "alpha beta gamma"), (ADDED, "completely different words here")]


def test_long_unchanged_stretches_are_shortened_to_the_lines_around_a_change():
    lines = [f"line {n}" for n in range(1, 21)]
    changed = list(lines)
    changed[9] = "line ten"
    diff = diff_text("\n".join(lines), "\n".join(changed))
    shown = _shown(diff)
    assert shown[0] == ("gap", 6)  # lines 1-6 left out, 7-9 kept before the change
    assert shown[1:4] == [(SAME, "line 7"), (SAME, "line 8"), (SAME, "line 9")]
    assert shown[4] == (CHANGED, "line [-10-]{+ten+}")
    assert shown[5:8] == [(SAME, "line 11"), (SAME, "line 12"), (SAME, "line 13")]
    assert shown[8] == ("gap", 7)
    assert len(shown) == 9


def test_identical_versions_have_no_rows():
    diff = diff_text("same\ntext\n", "same\ntext\n")
    assert diff.identical and diff.rows == ()
    assert diff_text("", "").identical


def test_from_and_to_an_empty_document():
    added = diff_text("", "First line\nSecond")
    assert _shown(added) == [(ADDED, "First line"), (ADDED, "Second")]
    removed = diff_text("First line\nSecond", "")
    assert _shown(removed) == [(REMOVED, "First line"), (REMOVED, "Second")]
    assert (removed.lines_added, removed.lines_removed) == (0, 2)


def test_a_trailing_line_break_added_is_a_change():
    diff = diff_text("text", "text\n")
    assert not diff.identical
    assert _shown(diff) == [(SAME, "text"), (ADDED, "")]


def test_the_segments_spell_out_both_versions_exactly():
    old = "# Plan\n\n<b>Keep</b> this line.\nChange *this* one, please.\nDrop me.\n"
    new = "# Plan\n\n<b>Keep</b> this line.\nChange <i>that</i> one, please!\nNew line.\n"
    diff = diff_text(old, new, context=100)
    lines = [row for row in diff.rows if not isinstance(row, Gap)]
    old_lines = ["".join(s.text for s in r.segments if s.change != ADDED) for r in lines if r.old_number]
    new_lines = ["".join(s.text for s in r.segments if s.change != REMOVED) for r in lines if r.new_number]
    assert "\n".join(old_lines) == old and "\n".join(new_lines) == new


def test_the_blank_lines_between_rewritten_paragraphs_of_a_long_rewrite_read_as_unchanged():
    # Long enough (2 400 lines in all) that the blank lines are too common to
    # anchor the alignment: every paragraph and blank line is one changed block.
    old = "\n\n".join(f"Paragraph {n} says word{n}." for n in range(600))
    new = "\n\n".join(f"Paragraph {n} says term{n}." for n in range(600))
    diff = diff_text(old, new)
    shown = _shown(diff)
    assert shown[:3] == [
        (CHANGED, "Paragraph 0 says [-word0-]{+term0+}."),
        (SAME, ""),
        (CHANGED, "Paragraph 1 says [-word1-]{+term1+}."),
    ]
    assert (diff.lines_added, diff.lines_removed, diff.lines_changed) == (0, 0, 600)


# --- characters made of several code points (docs/adr/0128) -------------------------

FAMILY = "👩\u200d👩\u200d👧"


@pytest.mark.parametrize(
    "old,new,removed,added",
    [
        ("Team 🇫🇷 ok", "Team 🇫🇮 ok", "🇫🇷", "🇫🇮"),
        ("Family " + FAMILY + " here", "Family 👨\u200d👩\u200d👧 here", FAMILY, "👨\u200d👩\u200d👧"),
        ("Vote 👍🏽 ok", "Vote 👍🏿 ok", "👍🏽", "👍🏿"),
        ("Un cafe noir", "Un cafe\u0301 noir", "cafe", "cafe\u0301"),
    ],
    ids=["flag", "zwj-family", "skin-tone", "combining-accent"],
)
def test_a_changed_emoji_or_accented_letter_shows_whole_removed_and_added(old, new, removed, added):
    segments, _ = word_segments(old, new)
    assert [s.text for s in segments if s.change == REMOVED] == [removed], segments
    assert [s.text for s in segments if s.change == ADDED] == [added], segments
    assert _shown(diff_text(old, new)) == [(CHANGED, old.replace(removed, f"[-{removed}-]{{+{added}+}}"))]


def test_a_review_of_long_text_as_people_write_it_undoes_each_change_and_keeps_the_persons():
    from tests.support.unicode_text import big_document

    old = big_document(40_000)
    new = old.replace("2. مرحبا", "2. أهلا", 1).replace("1. 会议纪要", "1. 会议记录", 1)
    diff = diff_text(old, new)
    assert diff.lines_changed == 2
    hunks = change_hunks(old, new)
    current = new.replace("4. Col1", "4. Column1", 1)  # the person edited elsewhere since
    text, reverted, refused = revert_hunks(new, current, hunks)
    assert sorted(reverted) == [0, 1] and not refused
    assert text == old.replace("4. Col1", "4. Column1", 1)


def _paragraphs(count, changed_every, *, changed):
    return "\n\n".join(
        f"Paragraph {n}: the {'term' if changed and n % changed_every == 0 else 'word'} {n}." for n in range(1, count + 1)
    )


def test_a_bounded_comparison_shows_its_first_changes_and_counts_the_rest():
    old, new = _paragraphs(1000, 10, changed=False), _paragraphs(1000, 10, changed=True)
    diff = diff_text(old, new, max_changes=30, max_lines=200, max_chars=40_000)
    changed = [row for row in diff.rows if getattr(row, "kind", "") == CHANGED]
    assert len(changed) == 30 and changed[-1].new_number == 599  # paragraph 300
    assert (diff.changes, diff.changes_shown, diff.changes_left_out, diff.lines_left_out) == (100, 30, 70, 70)
    # The counts are of every change, those not shown counted by their lines.
    assert diff.lines_changed == 100 and diff.bounded and not diff.identical
    # The context after the last change shown, then nothing: no gap counting towards a change not shown.
    after_last = diff.rows[diff.rows.index(changed[-1]) + 1 :]
    assert [row.text for row in after_last] == ["", "Paragraph 301: the word 301.", ""]
    # Unbounded, the same texts show every change.
    whole = diff_text(old, new)
    assert (whole.lines_changed, whole.changes_left_out, whole.bounded) == (100, 0, False)


def test_a_bounded_comparison_cuts_a_long_change_after_its_first_lines():
    old = "\n".join(f"Line {n} as it was." for n in range(1000))
    new = "\n".join(f"Line {n} as it is now, reworded." for n in range(1000))
    diff = diff_text(old, new, max_changes=30, max_lines=200, max_chars=40_000)
    assert [row.kind for row in diff.rows[:-1]] == [CHANGED] * 200 and diff.lines_changed == 1000
    assert diff.changes == 1 and diff.changes_left_out == 0
    assert diff.rows[-1] == Cut(800) and diff.bounded
    # A single line longer than the character budget is cut, and so is the line that replaced it:
    # the characters left are shared between the two, each marked with what it leaves out.
    huge = diff_text("a\n" + "x" * 50_000, "a\n" + "y" * 50_000, max_changes=30, max_lines=200, max_chars=40_000)
    assert [(row.kind, row.text, row.chars_left_out) for row in huge.rows[1:]] == [
        (REMOVED, "x" * 19_999, 30_001),
        (ADDED, "y" * 20_000, 30_000),
    ]
    assert (huge.lines_added, huge.lines_removed, huge.bounded) == (1, 1, True)


def test_a_bounded_comparison_compares_word_by_word_only_the_lines_its_characters_can_show(monkeypatch):
    """A change of many long lines in a row (list items, paragraphs one line
    apart): every line up to the line bound (200) was compared word by word,
    about 50 ms each for 600 characters under load, though the character
    bound shows about 60 of them (the approval card's preview, the History)."""
    from workspace import diff as diff_module

    compared = []
    real = diff_module.word_segments
    monkeypatch.setattr(diff_module, "word_segments", lambda old, new: compared.append(old) or real(old, new))
    old = "\n".join(f"Item {n} says " + "what was found, " * 40 for n in range(300))
    new = old.replace(" says ", " claims ")

    diff = diff_text(old, new, max_changes=30, max_lines=200, max_chars=40_000)

    shown = [row for row in diff.rows if getattr(row, "kind", "") == CHANGED]
    assert 60 <= len(shown) < 70 and diff.rows[-1] == Cut(300 - len(shown))
    assert len(compared) <= len(shown) + 2


def test_a_bounded_comparison_shows_each_rewritten_long_line_just_before_the_line_that_replaced_it():
    """Lines too long to compare word by word: every removed line came first
    and filled the characters before the first added one was shown."""
    old = "\n".join(f"Paragraph {n} as it was: " + "what the study found. " * 400 for n in range(10))
    new = "\n".join(f"Paragraph {n} as rewritten: " + "what the study claims. " * 400 for n in range(10))
    diff = diff_text(old, new, max_changes=30, max_lines=200, max_chars=40_000)
    assert [(row.kind, row.old_number or row.new_number, row.chars_left_out > 0) for row in diff.rows[:-1]] == [
        (REMOVED, 1, False),
        (ADDED, 1, False),
        (REMOVED, 2, False),
        (ADDED, 2, False),
        # The characters left, shared between the third line and its replacement, each cut.
        (REMOVED, 3, True),
        (ADDED, 3, True),
    ]
    assert diff.rows[4].text.startswith("Paragraph 2 as it was: ") and diff.rows[5].text.startswith("Paragraph 2 as rewritten: ")
    assert diff.rows[-1] == Cut(7) and sum(len(row.text) for row in diff.rows[:-1]) <= 40_000
    # The counts are of the whole change: the lines not shown are replaced lines.
    assert (diff.lines_added, diff.lines_removed, diff.lines_changed) == (3, 3, 7)


def test_a_bounded_comparison_cuts_a_long_line_between_characters():
    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467"  # one character of five code points
    diff = diff_text("a\n" + family * 10_000, "a\n" + "é" * 50_001, max_changes=30, max_lines=200, max_chars=40_000)
    removed, added = diff.rows[1:]
    assert removed.kind == REMOVED and len(removed.text) % 5 == 0 and set(removed.text.split(family)) == {""}
    assert removed.chars_left_out == 50_000 - len(removed.text) and added.kind == ADDED
    assert len(removed.text) + len(added.text) <= 40_000
