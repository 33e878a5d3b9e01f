"""workspace.text_delta: a delta rebuilds the new text exactly, and a small
edit costs about its own size."""

import random
import time

import pytest

from workspace.text_delta import apply_delta, decode, delta_between, encode

CASES = [
    ("", ""),
    ("", "new"),
    ("old", ""),
    ("same", "same"),
    ("line one\nline two\nline three\n", "line one\nline 2\nline three\n"),
    ("a\r\nb\r\nc", "a\r\nB\r\nc\r\n"),  # CRLF kept as it is
    ("a\rb\rc", "a\rb\rd"),
    ("naïve café 🌍 日本語\n", "naïve cafés 🌍🌍 日本語です\n"),
    ("no line breaks at all " * 50, ("no line breaks at all " * 50).replace("all", "ALL", 3)),
    ("x\n" * 100, "x\n" * 50 + "y\n" + "x\n" * 49),  # repeated lines
    ("abcabcabc", "abcXabcabc"),
    ("\n\n\n", "\n\n"),
]


@pytest.mark.parametrize(("base", "new"), CASES)
def test_the_delta_rebuilds_the_new_text_exactly(base, new):
    ops = decode(encode(delta_between(base, new)))
    assert apply_delta(base, ops) == new


def test_random_edits_rebuild_exactly():
    rng = random.Random(8)
    alphabet = "ab \n\r🌍é"
    for _ in range(300):
        base = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        new = list(base)
        for _ in range(rng.randint(0, 4)):
            at = rng.randint(0, len(new))
            new[at : at + rng.randint(0, 3)] = rng.choice(["", "x", "\n", "🌍\r\n", "long insert"])
        new = "".join(new)
        assert apply_delta(base, delta_between(base, new)) == new, (base, new)


def test_a_small_edit_in_a_long_text_costs_about_its_size():
    paragraphs = [f"Paragraph {i}: " + "words and more words " * 10 + "\n" for i in range(150)]
    base = "".join(paragraphs)
    edited = paragraphs.copy()
    edited[10] = edited[10].replace("more", "fewer", 1)
    edited[120] = edited[120] + "An added sentence.\n"
    new = "".join(edited)
    encoded = encode(delta_between(base, new))
    assert apply_delta(base, decode(encoded)) == new
    assert len(base) > 30_000 and len(encoded) < 120


def test_a_long_document_with_many_blank_lines_is_aligned_quickly_and_each_edit_costs_its_size():
    base = "".join(f"Paragraph {i} has some words in it.\n\n" for i in range(5000))[:200_000]
    every_tenth = "".join(("changed\n" if i % 10 == 0 else line) for i, line in enumerate(base.splitlines(True)))
    edges = "X" + base[1:100_000] + "Y" + base[100_001:-1] + "Z"
    start = time.perf_counter()
    for new in (every_tenth, edges):
        ops = delta_between(base, new)
        assert apply_delta(base, ops) == new
    # Generous for a loaded machine; aligning on the repeated blank lines took seconds.
    assert time.perf_counter() - start < 5
    assert len(encode(delta_between(base, edges))) < 60


def _text_as_people_write_it(chars: int) -> str:
    from tests.support.unicode_text import big_document

    return big_document(chars)


@pytest.mark.parametrize(
    "base,new",
    [
        ("a\u2028b\x0bc\x85d\n" * 2000, "a\u2028b\x0bc\x85d\n" * 999 + "X\u2029\n" + "a\u2028b\x0bc\x85d\n" * 1000),
        (
            _text_as_people_write_it(60_000),
            _text_as_people_write_it(60_000).replace("\u2028", "\n").replace("🇫🇷", "🇫🇮"),
        ),
    ],
    ids=["odd-breaks", "emoji-cjk-rtl-accents"],
)
def test_a_delta_rebuilds_text_with_unusual_line_breaks_and_emoji_exactly(base, new):
    assert apply_delta(base, decode(encode(delta_between(base, new)))) == new
