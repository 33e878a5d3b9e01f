"""Document revisions stored by content (docs/adr/0078): every autosave's
text as a delta against the revision before it, read back exactly, version
by version, or refused when its blob is damaged; never a wrong text."""

import json
import random

import pytest

from workspace import content_store, selectors, text_delta
from workspace.archive import workspace_section
from workspace.models import ContentBlob, DocumentRevision
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db


def _long_text(chars: int, rng: random.Random) -> str:
    words = "the of and report data survey results method sample analysis review source figure table".split()
    paragraphs, size = [], 0
    while size < chars:
        paragraph = " ".join(rng.choice(words) for _ in range(rng.randint(30, 90))).capitalize() + ".\n\n"
        paragraphs.append(paragraph)
        size += len(paragraph)
    return "".join(paragraphs)[:chars]


def _small_edit(text: str, rng: random.Random, n: int) -> str:
    at = rng.randrange(len(text))
    kind = n % 4
    if kind == 0:
        return text[:at] + rng.choice(["a", "é", "🌍", "\r\n", " typed "]) + text[at:]  # typing, any character
    if kind == 1:
        return text[:at] + text[at + rng.randint(1, 12) :]  # deleting
    if kind == 2:
        end = text.find(" ", at)
        return text[:at] + "rewritten" + (text[end:] if end != -1 else "")
    return text[:at] + "\n\nA new paragraph.\n\n" + text[at:]


@pytest.mark.heavy  # a thousand saves
def test_a_thousand_autosaves_of_a_long_document_read_back_exactly_version_by_version(thread):
    rng = random.Random(78)
    text = _long_text(30_000, rng)
    saved = []
    for n in range(1000):
        if n:
            text = _small_edit(text, rng, n)
        document = document_services.document_save(thread=thread, title="Report", content=text, base_version=n).document
        saved.append(document.content)  # as the service stored it (line breaks made plain)
    assert document.version == 1000
    for version, expected in enumerate(saved, start=1):
        assert selectors.document_version_text(thread=thread, version=version) == ("Report", expected), version
    # Stored as small deltas: far less than a whole copy per version.
    assert content_store.stored_bytes(ContentBlob) < 0.05 * sum(len(t.encode()) for t in saved)
    # The archive carries each autosave as what it changed (docs/adr/0123), and rebuilds every text exactly.
    exported = workspace_section(thread)["document"]["revisions"]
    rebuilt, text = [], None
    for row in exported:
        text = row["content"] if "content" in row else text_delta.apply_delta(text, row["delta"])
        rebuilt.append(text)
    assert rebuilt == saved
    assert len(json.dumps(exported)) < 0.05 * sum(len(t) for t in saved)


def test_each_revision_is_a_delta_against_the_one_before_it(thread):
    text = "".join(f"Paragraph {i} of a long enough document.\n\n" for i in range(200))
    document_services.document_save(thread=thread, title="Report", content=text, base_version=0)
    document_services.document_save(thread=thread, content=text.replace("Paragraph 7 ", "Paragraph seven "), base_version=1)
    first, second = DocumentRevision.objects.filter(document__thread=thread).order_by("version").select_related("body")
    assert first.body.text == text
    assert second.body.text is None and second.body.base_id == first.body_id and len(second.body.delta) < 100
    # A save that puts back an earlier text refers to that text's blob: nothing new is stored.
    document_services.document_save(thread=thread, content=text, base_version=2)
    third = DocumentRevision.objects.get(document__thread=thread, version=3)
    assert third.body_id == first.body_id and third.content == text


def test_a_save_based_on_an_older_version_merges_against_that_versions_stored_text(thread):
    text = "".join(f"Paragraph {i} of a long enough document.\n\n" for i in range(200))
    document_services.document_save(thread=thread, title="Report", content=text, base_version=0)
    document_services.document_save(thread=thread, content=text.replace("Paragraph 3 ", "Paragraph three "), base_version=1)
    saved = document_services.document_save(
        thread=thread, content=text.replace("Paragraph 9 ", "Paragraph nine "), base_version=1
    )
    assert saved.merged
    assert saved.document.content == text.replace("Paragraph 3 ", "Paragraph three ").replace("Paragraph 9 ", "Paragraph nine ")


@pytest.mark.parametrize("damage", [{"delta": "[[0,10]]"}, {"delta": "not json"}, {"delta": "[[99999999,5]]"}])
def test_a_damaged_revision_is_refused_never_read_as_a_wrong_text(thread, damage):
    text = "".join(f"Paragraph {i} of a long enough document.\n\n" for i in range(200))
    document_services.document_save(thread=thread, title="Report", content=text, base_version=0)
    document_services.document_save(thread=thread, content=text + "One more line.\n", base_version=1)
    second = DocumentRevision.objects.get(document__thread=thread, version=2)
    ContentBlob.objects.filter(pk=second.body_id).update(**damage)
    with pytest.raises(content_store.CorruptContent, match="Version 2 of document"):
        selectors.document_version_text(thread=thread, version=2)
    with pytest.raises(content_store.CorruptContent):
        workspace_section(thread)
    assert selectors.document_version_text(thread=thread, version=1) == ("Report", text)


def test_a_damaged_whole_text_is_refused_too(thread):
    document_services.document_save(thread=thread, title="Report", content="The right text.", base_version=0)
    first = DocumentRevision.objects.get(document__thread=thread, version=1)
    ContentBlob.objects.filter(pk=first.body_id).update(text="The wrong text.")
    with pytest.raises(content_store.CorruptContent):
        selectors.document_version_text(thread=thread, version=1)


@pytest.mark.django_db
@pytest.mark.parametrize("size", [30_000, 120_000, 199_000])
def test_revisions_of_text_as_people_write_it_stored_as_deltas_read_back_exactly(thread, size):
    from tests.support.unicode_text import FAMILY, big_document

    text = big_document(size)[:size]
    document_services.document_save(thread=thread, content=text)
    edits = [
        text.replace(FAMILY, "👨\u200d👩\u200d👧", 1),
        text.replace("会议纪要", "会议记录", 1) + "\r\nNew line\r\n",
        text[: size // 2] + "🇩🇪 inserted\tmid\u2028" + text[size // 2 :],
    ]
    for edit in edits:
        document_services.document_save(thread=thread, content=edit)
    bodies = [r.body for r in DocumentRevision.objects.filter(document__thread=thread).order_by("version")]
    assert any(b.delta is not None for b in bodies)
    fresh = [ContentBlob.objects.get(pk=b.pk) for b in bodies]  # from the database, no cached rebuilds
    assert [content_store.read_text(ContentBlob, b) for b in fresh] == [text] + [e.replace("\r\n", "\n") for e in edits]
