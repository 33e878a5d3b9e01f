"""workspace.merge: the document's three-way merge, as properties over
generated texts and as worked examples.

The generated texts are built from distinct words, so where an edit lands
is unambiguous and the expected result can be computed independently by
applying both edit lists to the base."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workspace import merge
from workspace.merge import BOTH, OURS, THEIRS, merge_text, merge_value, without_base

PROPERTY_SETTINGS = settings(max_examples=150, deadline=None)


def _words(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


# --- line edits -----------------------------------------------------------------------

LINE_OPS = ("replace", "delete", "insert_after")


@st.composite
def disjoint_line_edits(draw):
    """A base of distinct lines and two edit lists on lines at least two
    apart (an untouched line between any edit of ours and one of theirs)."""
    count = draw(st.integers(min_value=3, max_value=30))
    base = [f"line {i} " + " ".join(_words(f"b{i}x", 3)) + "\n" for i in range(count)]
    touched = draw(st.lists(st.integers(0, count - 1), min_size=2, max_size=count, unique=True))
    sides = {}
    for index in sorted(touched):
        side = draw(st.sampled_from(("ours", "theirs")))
        clash = any(abs(index - other) < 2 for other, s in sides.items() if s != side)
        if not clash:
            sides[index] = side
    ops = {index: draw(st.sampled_from(LINE_OPS)) for index in sides}
    return base, sides, ops


def _apply_lines(base: list[str], edits: dict[int, str], side: str) -> str:
    out = []
    for i, line in enumerate(base):
        op = edits.get(i)
        if op == "replace":
            out.append(f"{side} rewrote line {i}\n")
        elif op == "delete":
            continue
        else:
            out.append(line)
            if op == "insert_after":
                out.append(f"{side} added after line {i}\n")
    return "".join(out)


@PROPERTY_SETTINGS
@given(disjoint_line_edits())
def test_disjoint_line_edits_always_merge_with_both_present(case):
    base, sides, ops = case
    ours_edits = {i: ops[i] for i, s in sides.items() if s == "ours"}
    theirs_edits = {i: ops[i] for i, s in sides.items() if s == "theirs"}
    ours = _apply_lines(base, ours_edits, "ours")
    theirs = _apply_lines(base, theirs_edits, "theirs")
    both = {**ours_edits, **theirs_edits}
    expected = []  # each edit by its own side, line by line
    for i, line in enumerate(base):
        op, side = both.get(i), sides.get(i)
        if op == "replace":
            expected.append(f"{side} rewrote line {i}\n")
        elif op != "delete":
            expected.append(line)
            if op == "insert_after":
                expected.append(f"{side} added after line {i}\n")
    result = merge_text("".join(base), ours, theirs)
    assert result.conflicts == []
    assert result.text == "".join(expected)


# --- word edits inside one long line (a markdown paragraph) --------------------------


@st.composite
def disjoint_word_edits(draw):
    """One paragraph of distinct words; ours and theirs each replace
    different words, a third of them at most (a side that rewrites most of
    a paragraph is not merged word by word: see the rewrite test below)."""
    count = draw(st.integers(min_value=6, max_value=80))
    words = _words("w", count)
    picked = draw(st.lists(st.integers(0, count - 1), min_size=2, max_size=count // 3, unique=True))
    sides = {}
    for index in sorted(picked):
        side = draw(st.sampled_from(("ours", "theirs")))
        sides[index] = side
    return words, sides


def _paragraph(words, replaced: dict[int, str]) -> str:
    return " ".join(replaced.get(i, word) for i, word in enumerate(words)) + ".\n"


@PROPERTY_SETTINGS
@given(disjoint_word_edits())
def test_disjoint_word_edits_in_one_paragraph_merge_with_both_present(case):
    words, sides = case
    ours = _paragraph(words, {i: f"OURS{i}" for i, s in sides.items() if s == "ours"})
    theirs = _paragraph(words, {i: f"THEIRS{i}" for i, s in sides.items() if s == "theirs"})
    expected = _paragraph(words, {i: f"{s.upper()}{i}" for i, s in sides.items()})
    result = merge_text(_paragraph(words, {}), ours, theirs)
    assert result.conflicts == []
    assert result.text == expected


@PROPERTY_SETTINGS
@given(disjoint_line_edits(), st.booleans())
def test_identical_edits_merge_once(case, with_extra_edit):
    base, sides, ops = case
    base = base + ["untouched\n", "last line\n"]
    edited = _apply_lines(base, ops, "both")
    ours = edited
    if with_extra_edit:
        # Ours also rewrites the last line, past an untouched one.
        ours = edited.replace("last line\n", "last line, by ours\n")
    result = merge_text("".join(base), ours, edited)
    assert result.conflicts == []
    assert result.text == ours


@PROPERTY_SETTINGS
@given(st.integers(min_value=1, max_value=40), st.data())
def test_overlapping_replacements_conflict_and_every_resolution_keeps_a_side(count, data):
    words = _words("w", count)
    index = data.draw(st.integers(0, count - 1))
    base = _paragraph(words, {})
    ours = _paragraph(words, {index: "mine"})
    theirs = _paragraph(words, {index: "yours"})
    result = merge_text(base, ours, theirs)
    assert result.text is None
    [conflict] = result.conflicts
    assert (conflict.base, conflict.ours, conflict.theirs) == (words[index], "mine", "yours")
    assert theirs[conflict.start : conflict.end] == "yours"
    assert ours[conflict.ours_start : conflict.ours_end] == "mine"
    assert result.resolve(OURS) == ours
    assert result.resolve(THEIRS) == theirs
    assert result.resolve(BOTH) == _paragraph(words, {index: "mine yours"})


@PROPERTY_SETTINGS
@given(st.text(alphabet="ab \n.", max_size=60), st.text(alphabet="ab \n.", max_size=60), st.text(alphabet="ab \n.", max_size=60))
def test_any_three_texts_give_pieces_that_rebuild_each_side(base, ours, theirs):
    """Whatever the texts, conflicts sit where they say in both versions,
    resolving every conflict to one side keeps that side's conflicting text,
    and a side that did not change always yields the other."""
    result = merge_text(base, ours, theirs)
    for conflict in result.conflicts:
        assert theirs[conflict.start : conflict.end] == conflict.theirs
        assert ours[conflict.ours_start : conflict.ours_end] == conflict.ours
    assert merge_text(base, base, theirs).text == theirs
    assert merge_text(base, ours, base).text == ours
    assert merge_text(base, ours, ours).text == ours


@PROPERTY_SETTINGS
@given(
    st.text(alphabet="ab \n.", max_size=40),
    st.text(alphabet="ab \n.", max_size=40),
    st.text(alphabet="ab \n.", max_size=40),
    st.text(alphabet="xy \n.", max_size=200),
    st.text(alphabet="xy \n.", max_size=200),
)
# Both sides add a blank line to a blank base, theirs more: with one more
# shared blank line after them, the blank line both added was once a
# conflict (a run of line breaks was one token) where without it the merge
# was clean, so settling it "ours" left out the line theirs added.
@example(base="", ours="\n", theirs="\n\na", before="", after="\n")
@example(base="", ours="\n", theirs="\n\n ", before="", after="\n")
def test_lines_all_three_share_around_the_edits_change_nothing_in_the_merge(base, ours, theirs, before, after):
    """The shared lines at the start and end are set aside before merging
    (so a long document costs what changed): the merge, its conflicts and
    every way of settling them read exactly as without them."""
    head = before + "\n" if before else ""
    base, ours, theirs = base + "\n", ours + "\n", theirs + "\n"
    inner = merge_text(base, ours, theirs)
    outer = merge_text(head + base + after, head + ours + after, head + theirs + after)
    for choice in ("ours", "theirs", "both"):
        assert outer.resolve(choice) == head + inner.resolve(choice) + after
    assert [(c.ours, c.theirs) for c in outer.conflicts] == [(c.ours, c.theirs) for c in inner.conflicts]
    for conflict in outer.conflicts:
        assert (head + theirs + after)[conflict.start : conflict.end] == conflict.theirs
        assert (head + ours + after)[conflict.ours_start : conflict.ours_end] == conflict.ours


# --- worked examples ----------------------------------------------------------------------


def test_edits_on_adjacent_lines_merge():
    base = "Intro.\nMethods.\nResults.\n"
    result = merge_text(base, "Intro, revised.\nMethods.\nResults.\n", "Intro.\nMethods, expanded.\nResults.\n")
    assert result.text == "Intro, revised.\nMethods, expanded.\nResults.\n"


def test_two_sentences_of_one_paragraph_edited_by_each_side_merge():
    base = "Soil holds carbon for decades. Tilling releases some of it. Cover crops help.\n"
    ours = "Soil holds carbon for centuries. Tilling releases some of it. Cover crops help.\n"
    theirs = "Soil holds carbon for decades. Tilling releases some of it. Cover crops help a lot.\n"
    assert merge_text(base, ours, theirs).text == (
        "Soil holds carbon for centuries. Tilling releases some of it. Cover crops help a lot.\n"
    )


def test_a_line_inserted_before_a_line_the_other_side_changed_merges():
    result = merge_text("A\nB\n", "A\nnew line\nB\n", "A\nB changed\n")
    assert result.text == "A\nnew line\nB changed\n"


def test_text_added_at_the_edge_of_a_word_the_other_side_replaced_merges():
    assert merge_text("The cat sat.", "The black cat sat.", "The dog sat.").text == "The black dog sat."


def test_an_empty_base_written_differently_by_both_keeps_both_ours_first():
    # Nothing of the base is at stake: both texts stay, as "Keep both" would put them.
    assert merge_text("", "The person wrote this", "An agent drafted that").text == "The person wrote this\nAn agent drafted that"
    assert merge_text("", "Person's draft.\n", "Agent's draft.\n").text == "Person's draft.\nAgent's draft.\n"


def test_a_paragraph_typed_at_the_end_while_the_agent_appended_a_section_keeps_both():
    base = "# Report\n\nIntro paragraph.\n"
    theirs = base + "\n## Method\n\nWe sampled ten sites.\n"
    ours = base + "\nMy own paragraph about the aims.\n"
    merged = merge_text(base, ours, theirs).text
    assert merged == base + "\nMy own paragraph about the aims.\n\n## Method\n\nWe sampled ten sites.\n"


def test_paragraphs_both_inserted_between_the_same_two_keep_both_and_the_edits_around_them():
    base = "A.\n\nB.\n\nC.\n"
    ours = "A, by me.\n\nMine.\n\nB.\n\nC.\n"
    theirs = "A.\n\nTheirs.\n\nB.\n\nC, by them.\n"
    assert merge_text(base, ours, theirs).text == "A, by me.\n\nMine.\n\nTheirs.\n\nB.\n\nC, by them.\n"


def test_a_line_both_rewrote_differently_still_conflicts():
    [conflict] = merge_text("Intro.\nThe old claim.\n", "Intro.\nMy claim.\n", "Intro.\nTheir claim.\n").conflicts
    assert (conflict.ours, conflict.theirs) == ("My", "Their")


SENTENCE_LINE = "Paragraph 30.1 of the report says what was found in part 30. It goes on for a while.\n\nNext.\n"


def test_words_typed_inside_a_sentence_another_typed_over_conflict_instead_of_landing_inside_the_new_one():
    # Theirs selected "says what was found in part 30." and typed over it;
    # ours typed inside it. Matched word by word, the spaces the two
    # sentences share placed ours between "by" and "Bea." (docs/adr/0162).
    theirs = SENTENCE_LINE.replace("says what was found in part 30.", "SELREPLACED by Bea.")
    ours = SENTENCE_LINE.replace("says what", "says what Ada's words")
    for mine, other in ((ours, theirs), (theirs, ours)):
        result = merge_text(SENTENCE_LINE, mine, other)
        assert result.text is None
        [conflict] = result.conflicts
        assert {conflict.ours, conflict.theirs} == {"says what Ada's words was found in part 30", "SELREPLACED by Bea"}
    assert merge_text(SENTENCE_LINE, ours, theirs).resolve(BOTH).count("Ada's words") == 1


def test_words_typed_at_the_edge_of_a_sentence_another_typed_over_still_merge():
    theirs = SENTENCE_LINE.replace("says what was found in part 30.", "SELREPLACED by Bea.")
    before = SENTENCE_LINE.replace("of the report", "of the report Ada's words")
    assert merge_text(SENTENCE_LINE, before, theirs).text == theirs.replace("of the report", "of the report Ada's words")
    after = SENTENCE_LINE.replace("part 30.", "part 30. Ada's words")
    assert merge_text(SENTENCE_LINE, after, theirs).text == theirs.replace("Bea.", "Bea. Ada's words")


def test_two_words_reworded_around_words_typed_between_them_merge():
    # A word both sides keep between two replacements is an anchor; only a space is not.
    theirs = SENTENCE_LINE.replace("says what was found", "shows what turned up")
    ours = SENTENCE_LINE.replace("says what", "says what Ada's words")
    assert merge_text(SENTENCE_LINE, ours, theirs).text == theirs.replace("shows what", "shows what Ada's words")


def test_empty_base_with_one_side_writing_takes_it():
    assert merge_text("", "Only the person wrote.", "").text == "Only the person wrote."
    assert merge_text("", "", "Only the agent wrote.").text == "Only the agent wrote."
    assert merge_text("", "", "").pieces == ()


def test_a_blank_line_both_added_among_blank_lines_merges_with_what_one_side_added_after_it():
    # Each line break is its own token: "\n" (ours) and "\n\n" (theirs)
    # share one, so the line theirs added lands, whatever follows.
    for after in ("", "\n", "\n\nEnd.\n"):
        base, ours, theirs = "\n" + after, "\n\n" + after, "\n\na\n" + after
        assert merge_text(base, ours, theirs).text == "\n\na\n" + after
        assert merge_text(base, theirs, ours).text == "\n\na\n" + after
        base, ours, theirs = "Title\n\n" + after, "Title\n\n\n" + after, "Title\n\n\nA new paragraph.\n" + after
        assert merge_text(base, ours, theirs).text == theirs
        assert merge_text(base, theirs, ours).text == theirs


def test_typing_on_after_a_merged_save_extends_it_instead_of_conflicting():
    # Base: before the person's paragraph. Theirs: the merged save holding
    # the paragraph as first sent. Ours: the same paragraph, typed further.
    base = "Title\n\nAgent text.\n"
    theirs = "Title\n\nThe quick brown fox\nAgent text, edited.\n"
    ours = "Title\n\nThe quick brown fox jumps\nAgent text.\n"
    assert merge_text(base, ours, theirs).text == "Title\n\nThe quick brown fox jumps\nAgent text, edited.\n"


def test_a_rewritten_paragraph_does_not_receive_the_other_sides_word_edit_at_a_coincidence():
    base = "The results of the survey were mixed and need more work.\n"
    ours = "The results of the survey were mixed and need more study.\n"
    theirs = "A second survey is planned; none of the earlier findings hold.\n"
    result = merge_text(base, ours, theirs)
    assert result.text is None
    # One conflict: the whole sentence on each side (less the final ".\n" they share).
    assert [(c.ours, c.theirs) for c in result.conflicts] == [(ours[:-2], theirs[:-2])]


def test_conflict_offsets_point_into_both_versions():
    base = "one\ntwo\nthree\nfour\n"
    ours = "one\nTWO by me\nthree\nfour\n"
    theirs = "zero\none\n2 by you\nthree\nfour\n"
    [conflict] = merge_text(base, ours, theirs).conflicts
    assert theirs[conflict.start : conflict.end] == conflict.theirs == "2 by you"
    assert ours[conflict.ours_start : conflict.ours_end] == conflict.ours == "TWO by me"


def test_words_added_after_a_word_the_other_side_replaced_follow_the_replacement():
    assert merge_text("We use Python.\n", "We use Rust.\n", "We use Python and Go.\n").text == "We use Rust and Go.\n"


def test_two_conflicts_separated_by_a_space_are_one_phrase():
    result = merge_text("a red big box\n", "a blue huge box\n", "a green small box\n")
    [conflict] = result.conflicts
    assert (conflict.ours, conflict.theirs) == ("blue huge", "green small")


def test_both_keeps_whole_lines_one_after_the_other():
    result = merge_text("x\nold\ny\n", "x\nmine\ny\n", "x\ntheirs\ny\n")
    assert result.resolve(BOTH) == "x\nmine\ntheirs\ny\n"
    with pytest.raises(ValueError):
        result.resolve("neither")


def test_without_base_is_one_conflict_unless_equal():
    [conflict] = without_base("mine", "theirs").conflicts
    assert (conflict.base, conflict.ours, conflict.theirs) == (None, "mine", "theirs")
    assert without_base("same", "same").text == "same"


def test_texts_with_crlf_merge_like_plain_newlines():
    base, ours, theirs = "a\r\nb\r\nc\r\n", "A\r\nb\r\nc\r\n", "a\r\nb\r\nC\r\n"
    assert merge_text(base, ours, theirs).text == "A\r\nb\r\nC\r\n"


def test_a_long_table_edited_at_both_ends_merges():
    rows = [f"| {i} | item {i} |\n" for i in range(8_000)]
    table = "| n | item |\n|---|---|\n" + "".join(rows)
    ours = table.replace("| 0 | item 0 |", "| 0 | first item |")
    theirs = table.replace("| 7999 | item 7999 |", "| 7999 | last item |")
    expected = ours.replace("| 7999 | item 7999 |", "| 7999 | last item |")
    assert merge_text(table, ours, theirs).text == expected


def test_highly_repetitive_text_finishes_quickly_and_never_loses_a_side():
    import time

    table = "".join("| a | b |\n" for _ in range(10_000))
    ours = "| x | b |\n" + table[10:]
    theirs = table[:-10] + "| a | y |\n"
    started = time.monotonic()
    result = merge_text(table, ours, theirs)
    assert time.monotonic() - started < 5
    # Every row looks the same, so where the edits are may be ambiguous; a
    # merge must hold both, and a conflict must hold each side whole.
    if result.clean:
        assert result.text == "| x | b |\n" + table[10:-10] + "| a | y |\n"
    else:
        assert result.resolve(OURS) == ours and result.resolve(THEIRS) == theirs


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "expected"),
    [
        ("T", "T", "Agent", ("Agent", False)),
        ("T", "Mine", "T", ("Mine", False)),
        ("T", "Same", "Same", ("Same", False)),
        ("T", "Mine", "Agent", ("Mine", True)),
    ],
)
def test_merge_value_takes_the_side_that_changed(base, ours, theirs, expected):
    assert merge_value(base, ours, theirs) == expected


def test_merge_module_is_pure_python_without_django():
    import ast

    tree = ast.parse(open(merge.__file__).read())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not any(name.split(".")[0] in {"django", "workspace"} for name in imported), imported


@pytest.mark.parametrize("appended_end", ["", "\n"])
def test_a_last_line_typed_on_while_the_other_side_appends_after_it_merges_without_a_final_line_break(appended_end):
    """A document typed in the editor often ends mid-line: the person goes
    on writing that line while the agent appends a section (docs/adr/0116)."""
    base = "Intro paragraph.\n\nResults paragraph."
    merged = merge_text(base, base + " They hold", base + "\n\n## Appendix\n\nBy the agent." + appended_end)
    assert merged.text == "Intro paragraph.\n\nResults paragraph. They hold\n\n## Appendix\n\nBy the agent." + appended_end


def test_the_same_last_line_changed_both_ways_without_a_final_line_break_still_asks():
    base = "Intro paragraph.\n\nResults paragraph."
    merged = merge_text(base, base.replace("Results", "Findings"), base.replace("Results", "Outcomes"))
    assert not merged.clean and merged.conflicts[0].ours == "Findings" and merged.conflicts[0].theirs == "Outcomes"


# --- characters made of several code points (docs/adr/0128) -------------------------

FAMILY = "👩\u200d👩\u200d👧"


@pytest.mark.parametrize(
    "original,ours,theirs",
    [
        (FAMILY, "👩\u200d👩\u200d👦", "👨\u200d👩\u200d👧"),  # each changed one person of the family
        ("🇫🇷", "🇫🇮", "🇬🇷"),  # each changed one half of the flag
        ("👍🏽", "👍🏿", "👎🏽"),  # the skin tone on one side, the gesture on the other
        ("🔍", "🔎", "🤍"),  # one code point, different low and high halves in UTF-16
    ],
    ids=["zwj-family", "flag", "skin-tone", "astral"],
)
def test_both_sides_changing_one_emoji_differently_conflict_instead_of_making_a_third(original, ours, theirs):
    base = f"Family: {original} at home.\n"
    merged = merge_text(base, base.replace(original, ours), base.replace(original, theirs))
    assert not merged.clean, f"merged silently into {merged.text!r}"
    assert merged.resolve(OURS) == base.replace(original, ours)
    assert merged.resolve(THEIRS) == base.replace(original, theirs)


def test_an_accent_added_to_a_word_the_other_side_replaced_conflicts_rather_than_landing_on_the_new_word():
    base = "We drink cafe every morning.\n"
    ours = "We drink cafe\u0301 every morning.\n"  # the person: cafe -> café (e + U+0301)
    theirs = "We drink tea every morning.\n"  # the agent: cafe -> tea
    merged = merge_text(base, ours, theirs)
    assert not merged.clean and merged.text is None
    assert merged.resolve(THEIRS) == theirs and merged.resolve(OURS) == ours


@pytest.mark.parametrize(
    "z,side",
    [("cafe", "cafe\u0301"), ("👩", "👩\u200d👧"), ("🇫", "🇫🇷"), ("👍", "👍🏽"), ("e", "\u0600e")],
    ids=["combining-accent", "zwj", "regional-indicator", "skin-tone", "prepended-mark"],
)
def test_text_that_joins_a_character_at_an_edge_is_no_edge_addition(z, side):
    assert merge._addition(z, side) is None
    assert merge._edge_addition(z, side, "tea") is None


def test_an_edge_addition_whose_join_would_fall_inside_a_character_is_not_merged():
    # Ours added a regional indicator before "x"; theirs replaced "x" with
    # another one: put together, the two would make a flag neither wrote.
    assert merge._edge_addition("x", "🇫x", "🇷") is None
    assert merge._edge_addition("word", "word more", "other") == "other more"


def test_edits_next_to_emoji_and_accents_still_merge_word_by_word():
    base = "Team 🇫🇷 wins; the cafe\u0301 opens; " + FAMILY + " waves.\n"
    ours = base.replace("wins", "won")
    theirs = base.replace("opens", "closes").replace(FAMILY, FAMILY + " 🎉")
    assert merge_text(base, ours, theirs).text == "Team 🇫🇷 won; the cafe\u0301 closes; " + FAMILY + " 🎉 waves.\n"


def test_a_merge_at_size_keeps_both_sides_edits_in_text_as_people_write_it():
    from tests.support.unicode_text import big_document

    base = big_document(150_000)
    ours = base.replace("0. Le café", "0. Le café (edited by me 👍)", 1)
    at = base.rindex("会议纪要")
    theirs = base[:at] + "会议记录🇯🇵" + base[at + 4 :]
    merged = merge_text(base, ours, theirs)
    assert merged.clean
    at = ours.rindex("会议纪要")
    assert merged.text == ours[:at] + "会议记录🇯🇵" + ours[at + 4 :]


# Hangul jamo, Thai tone marks, Devanagari conjuncts, a flag, a tilde
# combining with its letter: each change below is of one character as a
# reader sees it.
ONE_CHARACTER_CHANGED_TWO_WAYS = [
    ("I 👍 it", "I 👍🏽 it", "I 👍🏿 it"),
    ("cafe ok", "cafe\u0301 ok", "cafe\u0300 ok"),
    ("\u1112\u1161 x", "\u1112\u1161\u11ab x", "\u1112\u1161\u11af x"),
    ("กิน ok", "กิ่น ok", "กิ้น ok"),
    ("क ok", "क्ष ok", "का ok"),
    ("क्ष ok", "क्षि ok", "क्त ok"),
    ("🇫🇷 ok", "🇫🇮 ok", "🇩🇷 ok"),
    ("na ok", "n\u0303a ok", "nxa ok"),
    ("\u1112\u1161\u1100 ok", "\u1112\u1161\u11ab\u1100 ok", "\u1112\u1161x\u1100 ok"),
]


@pytest.mark.parametrize(("base", "ours", "theirs"), ONE_CHARACTER_CHANGED_TWO_WAYS)
def test_one_character_changed_two_ways_in_any_script_is_a_conflict(base, ours, theirs):
    assert merge.merge_text(base, ours, theirs).conflicts
