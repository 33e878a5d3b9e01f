"""workspace.alignment: difflib's matching blocks at the cost of what differs.

Valid blocks (equal items, in order, never overlapping) for any two
sequences; the same blocks as difflib where the texts share their start and
end; and a 200 000-character one-line text with edits far apart aligned in
well under a second (difflib alone took twelve seconds, and merges and saves
of such a document waited for it)."""

import difflib
import random
import re
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from workspace import alignment, merge

TOKENS = re.compile(r"\w+|\s+|[^\w\s]")
WORDS = "the a of to and in that is for on with as results method data model analysis study value table".split()


def _valid(a, b, blocks):
    assert blocks[-1] == (len(a), len(b), 0)
    i_end = j_end = 0
    for i, j, n in blocks[:-1]:
        assert n > 0 and i >= i_end and j >= j_end
        assert list(a[i : i + n]) == list(b[j : j + n])
        i_end, j_end = i + n, j + n


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=60), st.lists(st.sampled_from("abcde"), max_size=60))
def test_blocks_are_always_equal_items_in_order(a, b):
    _valid(a, b, alignment.matching_blocks(a, b))
    _valid(a, b, alignment.matching_blocks(a, b, exact_up_to=100))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 30), st.integers(3000, 20000))
def test_long_sequences_take_the_anchored_way_and_stay_valid(seed, edits, vocabulary):
    # Over DIRECT_MAX_ITEMS items: cut at items found once on each side
    # (a stretch with none is left to difflib's heuristic, as before).
    rnd = random.Random(seed)
    a = [rnd.randrange(vocabulary) for _ in range(rnd.randint(1500, 2500))]
    b = list(a)
    for _ in range(edits):
        at = rnd.randrange(len(b) + 1)
        b[at : at + rnd.randint(0, 5)] = [rnd.randrange(vocabulary) for _ in range(rnd.randint(0, 5))]
    blocks = alignment.matching_blocks(a, b)
    _valid(a, b, blocks)
    # Nearly everything is found in common: only around the edits is not.
    assert sum(n for _, _, n in blocks) >= len(a) - edits * 5 - 40


def test_one_edit_matches_what_difflib_finds():
    rnd = random.Random(3)
    a = [rnd.choice(WORDS) for _ in range(3000)]
    b = a[:1200] + ["changed", "here"] + a[1203:]
    ours = alignment.matching_blocks(a, b)
    assert ours == difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    assert ours == [(0, 0, 1200), (1203, 1202, 1797), (3000, 2999, 0)]


def test_opcodes_read_like_difflibs():
    a, b = list("abcdefgh"), list("abXdeYYgh")
    assert alignment.opcodes(a, b) == difflib.SequenceMatcher(None, a, b).get_opcodes()


def _one_line_report(chars: int) -> str:
    rnd = random.Random(11)
    sentences = []
    while sum(len(s) for s in sentences) < chars:
        sentences.append(" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(8, 18))).capitalize() + f" {len(sentences)}.")
    return " ".join(sentences)[:chars]


def _insert_after_sentence(text: str, fraction: float, words: str) -> str:
    at = text.find(". ", int(fraction * len(text))) + 1
    return text[:at] + words + text[at:]


def test_a_merge_of_a_one_line_200_000_character_document_costs_what_changed():
    base = _one_line_report(199_000)
    ours = _insert_after_sentence(base, 0.1, " Ours.")
    theirs = _insert_after_sentence(_insert_after_sentence(base, 0.5, " Theirs one."), 0.9, " Theirs two.")
    start = time.perf_counter()
    result = merge.merge_text(base, ours, theirs)
    elapsed = time.perf_counter() - start
    assert result.text == _insert_after_sentence(theirs, 0.1, " Ours.")
    assert elapsed < 1.0, f"{elapsed:.2f} s"


def test_a_rewrite_of_many_places_in_one_long_line_is_aligned_quickly():
    a = TOKENS.findall(_one_line_report(120_000))
    b = list(a)
    rnd = random.Random(5)
    for _ in range(200):
        at = rnd.randrange(len(b))
        b[at : at + 3] = ["rewritten", " ", "words"]
    start = time.perf_counter()
    blocks = alignment.matching_blocks(a, b, exact_up_to=merge.EXACT_ALIGNMENT_MAX_TOKENS)
    elapsed = time.perf_counter() - start
    _valid(a, b, blocks)
    assert elapsed < 2.0, f"{elapsed:.2f} s"
