"""workspace.graphemes: the merge's and the diff's tokens never cut a
character as the person sees it (docs/adr/0128), and plain text is
tokenised exactly as before."""

import re

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from workspace import graphemes

PLAIN_TOKENS = re.compile(r"\w+|\n|[^\S\n]+|[^\w\s]")
CLUSTER = regex.compile(r"\X")
# Pieces that join into clusters, and plain ones around them.
PIECES = [
    "a",
    "b",
    "word",
    " ",
    "  ",
    "\t",
    "\n",
    ".",
    ",",
    "é",
    "会",
    "\u2028",
    "\x1c",
    "\r",
    "\u0301",
    "\u0308",
    "\u200d",
    "\ufe0f",
    "👩",
    "👧",
    "👍",
    "🏽",
    "🇫",
    "🇷",
    "🇮",
    "ᄀ",
    "ᅡ",
    "ᆨ",
    "क",
    "्",
    "ष",
    "\u0600",
]


def _cluster_ends(text: str) -> set[int]:
    return {0} | {match.end() for match in CLUSTER.finditer(text)}


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Team 🇫🇷🇫🇮 ok", ["Team", " ", "🇫🇷", "🇫🇮", " ", "ok"]),
        ("Family 👩\u200d👩\u200d👧 here", ["Family", " ", "👩\u200d👩\u200d👧", " ", "here"]),
        ("Vote 👍🏽 ok", ["Vote", " ", "👍🏽", " ", "ok"]),
        ("We drink cafe\u0301 every", ["We", " ", "drink", " ", "cafe\u0301", " ", "every"]),
        ("I ❤\ufe0f it", ["I", " ", "❤\ufe0f", " ", "it"]),
    ],
    ids=["flags", "zwj-family", "skin-tone", "combining-accent", "variation-selector"],
)
def test_a_character_made_of_several_code_points_is_one_token_or_part_of_a_word(text, expected):
    assert graphemes.tokens(text) == expected


def test_plain_text_is_tokenised_as_the_words_spaces_and_signs_it_always_was():
    text = "Le café, 会议纪要：prêt à 10 h.\n\n\tx² naïve — 🙂 🔍\n"
    assert graphemes.tokens(text) == PLAIN_TOKENS.findall(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_no_token_cuts_a_character(pieces):
    text = "".join(pieces)
    tokens = graphemes.tokens(text)
    assert "".join(tokens) == text and all(tokens)
    ends, at = _cluster_ends(text), 0
    for token in tokens:
        assert at in ends, (text, tokens)
        at += len(token)


PLAIN_PIECES = ["a", "word", "x²", " ", "\t", "\n", ".", "é", "会议", "🙂", "\u2028", "\x1c", "—"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PLAIN_PIECES), max_size=30), st.lists(st.sampled_from(PIECES), max_size=20))
def test_text_nobody_touched_is_the_same_tokens_whatever_the_rest_of_the_text_holds(plain, other):
    # A stretch of plain text is tokenised alike in the base (all plain) and
    # in a side that added an emoji or an accent elsewhere: else the merge
    # would see it changed.
    before = "".join(plain)
    assert graphemes.tokens(before) == PLAIN_TOKENS.findall(before)
    together = graphemes.tokens(before + "\n" + "".join(other))
    assert together[: len(PLAIN_TOKENS.findall(before)) + 1] == [*PLAIN_TOKENS.findall(before), "\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_a_boundary_is_where_a_character_ends(pieces):
    text = "".join(pieces)
    ends = _cluster_ends(text) | {len(text)}
    assert [graphemes.is_boundary(text, at) for at in range(len(text) + 1)] == [at in ends for at in range(len(text) + 1)]


def test_a_boundary_far_into_a_long_line_is_found():
    text = "x" * 50_000 + "会议" * 20_000 + "👍🏽" + "y" * 10
    at = text.index("👍")
    assert graphemes.is_boundary(text, at) and not graphemes.is_boundary(text, at + 1)
    assert graphemes.is_boundary(text, at + 2)


EDIT_PIECES = [*PIECES, "word ", " word", "\n\n", "🇫🇷 ", "cafe\u0301 "]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(EDIT_PIECES), max_size=30),
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 3), st.lists(st.sampled_from(EDIT_PIECES), max_size=4)), max_size=3),
)
def test_the_versions_of_a_text_get_the_tokens_each_would_get_alone(pieces, edits):
    base = "".join(pieces)
    versions = []
    for at, removed, added in edits:
        at = min(at, len(base))
        versions.append(base[:at] + "".join(added) + base[at + removed :])
    assert graphemes.tokens_of_versions(base, *versions) == [graphemes.tokens(text) for text in [base, *versions]]


def test_versions_of_a_long_line_differing_at_either_end_are_tokenised_alike():
    line = "Le café 🇫🇷 est prêt, 👩\u200d👩\u200d👧 arrive. " * 4_000
    ours, theirs = "Start " + line, line + " end👍🏽"
    assert graphemes.tokens_of_versions(line, ours, theirs, line) == [graphemes.tokens(t) for t in (line, ours, theirs, line)]
