"""workspace.content_store: one blob per distinct text, whole or as a delta,
read back exactly as stored (SQLite and PostgreSQL alike)."""

import pytest

from workspace import content_store
from workspace.models import ContentBlob

pytestmark = pytest.mark.django_db

TEXTS = [
    "",
    "plain",
    "windows\r\nline\r\nbreaks\r\n",
    "old mac\rbreaks\r",
    "mixed\r\n\n\r end",
    "naïve café 🌍 日本語 — ‘quotes’ \u200b zero width",
    "trailing spaces   \n\n\n",
    "  leading and tabs\t\t",
]


def _fresh(blob: ContentBlob) -> ContentBlob:
    return ContentBlob.objects.get(pk=blob.pk)  # as read back from the database, nothing cached


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_reads_back_exactly_whole(text):
    blob = content_store.store_text(ContentBlob, text)
    assert content_store.read_text(ContentBlob, _fresh(blob)) == text
    assert _fresh(blob).length == len(text)


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_reads_back_exactly_as_a_delta(text):
    base = content_store.store_text(ContentBlob, "A long shared start.\n" * 40 + "the end")
    near = "A long shared start.\n" * 40 + text
    blob = content_store.store_text(ContentBlob, near, base=base)
    assert blob.text is None and blob.base_id == base.pk and blob.depth == 1
    assert content_store.read_text(ContentBlob, _fresh(blob)) == near


def test_the_same_text_is_stored_once():
    first = content_store.store_text(ContentBlob, "same text")
    again = content_store.store_text(ContentBlob, "same text", base=first)
    assert again.pk == first.pk
    assert ContentBlob.objects.count() == 1


def test_a_chain_of_deltas_reads_back_every_version_and_starts_again_whole_at_its_limit():
    text = "".join(f"Line {i} of a long document.\n" for i in range(400))
    versions, blobs, base = [], [], None
    for turn in range(content_store.MAX_CHAIN + 3):
        text = text.replace(f"Line {turn} ", f"Line {turn} (edited) ", 1)
        base = content_store.store_text(ContentBlob, text, base=base)
        versions.append(text)
        blobs.append(base)
    assert [b.depth for b in blobs[:3]] == [0, 1, 2]
    assert blobs[content_store.MAX_CHAIN].depth == content_store.MAX_CHAIN
    assert blobs[content_store.MAX_CHAIN + 1].text is not None  # whole again: reads stay bounded
    assert blobs[content_store.MAX_CHAIN + 2].depth == 1
    for version, blob in zip(versions, blobs):
        assert content_store.read_text(ContentBlob, _fresh(blob)) == version


def test_a_rewrite_is_stored_whole_not_as_a_delta():
    base = content_store.store_text(ContentBlob, "one text entirely " * 20)
    blob = content_store.store_text(ContentBlob, "a different one altogether " * 20, base=base)
    assert blob.text is not None and blob.base_id is None


def test_a_blob_that_does_not_rebuild_to_its_key_is_refused():
    base = content_store.store_text(ContentBlob, "shared start of the text\n" * 20 + "one")
    blob = content_store.store_text(ContentBlob, "shared start of the text\n" * 20 + "two", base=base)
    ContentBlob.objects.filter(pk=blob.pk).update(delta="[[0,10]]")
    with pytest.raises(content_store.CorruptContent):
        content_store.read_text(ContentBlob, _fresh(blob))


def test_a_whole_text_that_does_not_match_its_key_is_refused():
    blob = content_store.store_text(ContentBlob, "the text as stored")
    ContentBlob.objects.filter(pk=blob.pk).update(text="another text")
    with pytest.raises(content_store.CorruptContent):
        content_store.read_text(ContentBlob, _fresh(blob))


def test_texts_read_in_order_rebuild_each_delta_from_the_one_before():
    text = "".join(f"Line {i} of a long document.\n" for i in range(400))
    versions, blobs, base = [], [], None
    for n in range(content_store.MAX_CHAIN + 5):
        text = text.replace(f"Line {n} ", f"Line {n} (edited) ", 1)
        base = content_store.store_text(ContentBlob, text, base=base, base_text=versions[-1] if versions else None)
        versions.append(text)
        blobs.append(base)
    assert list(content_store.read_texts(ContentBlob, [_fresh(b) for b in blobs])) == versions
    ContentBlob.objects.filter(pk=blobs[3].pk).update(delta="[[0,10]]")
    with pytest.raises(content_store.CorruptContent):
        list(content_store.read_texts(ContentBlob, [_fresh(b) for b in blobs]))


def test_a_base_text_that_is_not_the_bases_is_not_used():
    base = content_store.store_text(ContentBlob, "A long shared start.\n" * 40 + "one")
    text = "A long shared start.\n" * 40 + "two"
    blob = content_store.store_text(ContentBlob, text, base=base, base_text="something else entirely")
    assert content_store.read_text(ContentBlob, _fresh(blob)) == text


def test_a_delta_the_caller_made_the_text_with_is_stored_as_it_is():
    start = "A long shared start.\n" * 40
    base = content_store.store_text(ContentBlob, start + "one")
    ops = [[0, len(start)], "two, typed"]
    blob = content_store.store_text(ContentBlob, start + "two, typed", base=base, base_text=start + "one", ops=ops)
    assert blob.delta == '[[0,840],"two, typed"]' and blob.text is None
    assert content_store.read_text(ContentBlob, _fresh(blob)) == start + "two, typed"
    # With a base text that is not the base's, the base is read back and the operations found again.
    other = content_store.store_text(ContentBlob, start + "three", base=base, base_text="elsewhere", ops=["three"])
    assert content_store.read_text(ContentBlob, _fresh(other)) == start + "three" and other.delta != '["three"]'
