"""A closing page's last save sent as the part it changed (a beacon carries
at most 64 KB; docs/adr/0040): rebuilt on the version it was typed on,
checked, merged like any save; anything that does not fit is refused with
nothing written."""

import zlib

import pytest
from django.conf import settings

from tests.support.web import ws_url
from workspace.models import Document
from workspace.services import document as document_services
from workspace.text_splice import TextSplice

pytestmark = pytest.mark.django_db

# Astral characters (one code point, two UTF-16 units), a ZWJ family, a flag,
# CJK, a combining accent and right-to-left text, over 100 000 characters.
PARAGRAPH = "Paragraph {n}: the team 👩‍👩‍👧 met in 🇫🇷 to review 报告 {n}; café́ notes, שלום, done.\n\n"
LONG = "".join(PARAGRAPH.format(n=n) for n in range(1, 1400))


def _splice_fields(base: str, now: str) -> dict:
    """What static/js/document_editor.js `asChangedPart` sends, computed on code points."""
    head = 0
    while head < min(len(base), len(now)) and base[head] == now[head]:
        head += 1
    tail = 0
    while tail < min(len(base), len(now)) - head and base[-1 - tail] == now[-1 - tail]:
        tail += 1
    return {
        "content_kept_head": head,
        "content_kept_tail": tail,
        "content_middle": now[head : len(now) - tail],
        "content_crc32": zlib.crc32(now.encode("utf-8")),
    }


def _save(client, thread, **fields):
    return client.post(ws_url(thread, "document/save/"), fields)


def _stored(thread):
    document = Document.objects.get(thread=thread)
    return document.content, document.version


@pytest.fixture
def long_document(thread):
    document_services.document_save(thread=thread, title="Report", content=LONG)
    return LONG


def test_words_typed_after_an_emoji_in_a_long_document_are_saved_from_their_part(owner_client, thread, long_document):
    now = long_document.replace("met in 🇫🇷 to review 报告 700;", "met in 🇫🇷 👍 at last to review 报告 700;")
    fields = _splice_fields(long_document, now)
    assert len(fields["content_middle"]) < 20  # the body is a few bytes, not the document
    response = _save(owner_client, thread, title="Report", base_version=1, **fields)
    assert response.status_code == 200
    assert _stored(thread) == (now, 2)


def test_a_deleted_passage_is_saved_from_an_empty_part(owner_client, thread, long_document):
    now = long_document.replace(PARAGRAPH.format(n=3), "")
    response = _save(owner_client, thread, title="Report", base_version=1, **_splice_fields(long_document, now))
    assert response.status_code == 200
    assert _stored(thread) == (now, 2)


def test_a_part_typed_on_an_older_version_is_merged_with_what_was_saved_since(owner_client, thread, long_document):
    theirs = long_document.replace("review 报告 10;", "review 报告 10 (agent);")
    document_services.document_save(thread=thread, content=theirs, base_version=1)
    mine = long_document.replace("review 报告 900;", "review 报告 900 (mine);")
    response = _save(owner_client, thread, title="Report", base_version=1, **_splice_fields(long_document, mine))
    assert response.status_code == 200
    assert _stored(thread) == (theirs.replace("review 报告 900;", "review 报告 900 (mine);"), 3)


def test_a_part_overlapping_a_change_saved_since_keeps_both_when_the_page_asks_for_both(owner_client, thread, long_document):
    """The closing page asks for both: nobody is left to choose in a conflict view."""
    document_services.document_save(
        thread=thread, content=long_document.replace("review 报告 5;", "review 报告 5 checked;"), base_version=1
    )
    mine = long_document.replace("review 报告 5;", "review 报告 5 signed;")
    response = _save(owner_client, thread, title="Report", base_version=1, resolve="both", **_splice_fields(long_document, mine))
    assert response.status_code == 200
    content, version = _stored(thread)
    assert version == 3
    assert "review 报告 5 signed checked;" in content


def test_a_part_typed_on_a_base_with_windows_line_breaks_is_placed_as_the_page_read_it(owner_client, thread):
    # Stored before line breaks were made plain: the page reads "\r\n" as "\n".
    document_services.document_save(thread=thread, title="Report", content="one\n\ntwo\n")
    Document.objects.filter(thread=thread).update(content="one\r\n\r\ntwo\r\n")
    response = _save(owner_client, thread, title="Report", base_version=1, **_splice_fields("one\n\ntwo\n", "one\n\ntwo 2\n"))
    assert response.status_code == 200
    assert _stored(thread) == ("one\n\ntwo 2\n", 2)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"content_crc32": 12345}, "does not fit the version it was typed on"),
        ({"content_kept_head": len(LONG), "content_kept_tail": 5}, "does not fit the version it was typed on"),
        ({"content_kept_head": "ten"}, "whole numbers of characters"),
        ({"content_kept_tail": -1}, "whole numbers of characters"),
        ({"content_crc32": 2**32}, "whole numbers of characters"),
        ({"content_kept_head": None}, "needs all four of its fields"),
        ({"content_middle": None}, "needs all four of its fields"),
        ({"content_middle": "a\x00b"}, "cannot contain NUL characters"),
        ({"content": "whole text too"}, "whole or as a changed part, not both"),
        ({"base_version": 7}, "Version 7 of the document"),
    ],
)
def test_a_part_that_does_not_fit_is_refused_and_nothing_saved(owner_client, thread, long_document, change, message):
    fields = {
        "title": "Report",
        "base_version": 1,
        **_splice_fields(long_document, long_document.replace("报告 3;", "报告 3 more;")),
        **change,
    }
    response = _save(owner_client, thread, **{name: value for name, value in fields.items() if value is not None})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert _stored(thread) == (long_document, 1)


def test_a_part_that_makes_the_document_too_long_is_refused_and_nothing_saved(owner_client, thread, long_document):
    extra = "x" * (settings.HAICO_DOCUMENT_MAX_CHARS - len(long_document) + 1)
    response = _save(owner_client, thread, title="Report", base_version=1, **_splice_fields(long_document, long_document + extra))
    assert response.status_code == 400
    assert "too long" in response.content.decode()
    assert _stored(thread) == (long_document, 1)


def test_another_persons_part_is_refused_as_not_found(other_client, thread, long_document):
    fields = _splice_fields(long_document, long_document.replace("报告 3;", "报告 3 not mine;"))
    response = _save(other_client, thread, title="Report", base_version=1, **fields)
    assert response.status_code == 404
    assert _stored(thread) == (long_document, 1)


@pytest.mark.parametrize(
    ("base", "splice"),
    [
        ("abc", TextSplice(kept_head=2, kept_tail=2, middle="", crc32=0)),
        ("a😀b", TextSplice(kept_head=1, kept_tail=1, middle="", crc32=zlib.crc32(b"ab") + 1)),
    ],
)
def test_a_splice_that_does_not_fit_its_base_says_so(base, splice):
    from workspace.errors import InvalidInput

    with pytest.raises(InvalidInput, match="does not fit"):
        splice.applied_to(base)


def test_a_splice_counts_code_points_not_utf16_units():
    assert TextSplice(kept_head=2, kept_tail=1, middle="🇫", crc32=zlib.crc32("a😀🇫b".encode())).applied_to("a😀xb") == "a😀🇫b"
