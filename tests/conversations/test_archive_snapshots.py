"""A thread's per-turn snapshots in its archive (docs/adr/0161): from
archive version 3 a snapshot's document travels as the document's version
holding the same text, or as a delta against the snapshot before, either
with the key of its text, so a long thread of a long document carries no
copies of the document, and comes back byte for byte. A version or delta
that is not the text its key names is refused, nothing imported; archives
of versions 1 and 2 (every snapshot whole) still import."""

from __future__ import annotations

import copy
import json
import time

import pytest

from conversations import archive as archive_module
from conversations.archive import archive_bytes, import_archive
from conversations.branching import fork_thread
from conversations.sharing import thread_member_add
from conversations.turns import slot
from tests.support.live import nobody_watching
from tests.support.web import database_rows
from workspace.archive import ArchiveRefused
from workspace.models import Thread, WorkspaceSnapshot
from workspace.services.document import document_save

pytestmark = pytest.mark.django_db(transaction=True)

# A 30 000-character report of 60 paragraphs, in several scripts.
PARAGRAPHS = [
    f"§{n} Paragraph {n} of the report: findings, caveats and the next steps, "
    + ("naïve café 🌍 résumé, " if n % 3 == 0 else "plain words for the reader, ") * 18
    + "\n\n"
    for n in range(60)
]


def _turns(thread: Thread, *, count: int, person, saves: int = 2, start: int = 0) -> Thread:
    """`count` turns by `person`, each changing the document `saves` times
    (a few words typed into one paragraph) after its snapshot is taken."""
    paragraphs = list(PARAGRAPHS)
    document = getattr(Thread.objects.get(pk=thread.pk), "document", None)
    if document is not None:
        paragraphs = [p + "\n\n" for p in document.content.split("\n\n") if p]
    with nobody_watching():
        for n in range(start, start + count):
            thread = Thread.objects.get(pk=thread.pk)
            index, _ = slot.turn_begin(thread=thread, user_message=f"Turn {n}: tighten paragraph {n % 60}", person=person)
            for s in range(saves):
                at = (n * 7 + s) % len(paragraphs)
                paragraphs[at] = paragraphs[at].rstrip("\n") + f" edit {n}.{s} ü\u0301 🇫🇷\n\n"
                document_save(thread=thread, title="Report", content="".join(paragraphs), person=person)
            slot.turn_finish(thread=thread, turn_index=index, answer=f"Paragraph {n % 60} is tighter now.")
    return Thread.objects.get(pk=thread.pk)


def _snapshot_documents(thread: Thread) -> list[tuple[int, bytes]]:
    return [
        (s.turn_index, s.document_content.encode("utf-8"))
        for s in WorkspaceSnapshot.objects.filter(thread=thread).select_related("document_body").order_by("turn_index")
    ]


def _as_version_2(archive: dict, documents: list[tuple[int, bytes]]) -> dict:
    """The same archive as version 2 carried it: every snapshot's document whole."""
    whole = dict(documents)
    for snapshot in archive["workspace"]["snapshots"]:
        for key in ("document_revision", "document_delta", "document_sha256"):
            snapshot.pop(key, None)
        snapshot["document_content"] = whole[snapshot["turn"]].decode("utf-8")
    return {**archive, "version": 2}


def _encoded(archive: dict) -> bytes:
    return json.dumps(archive, ensure_ascii=False, indent=1).encode()


@pytest.mark.heavy  # a long thread's snapshots exported and imported
def test_a_long_threads_snapshots_travel_as_their_changes_and_come_back_byte_for_byte(thread, owner, monkeypatch):
    monkeypatch.setattr(archive_module, "IMPORT_PAUSE_SECONDS", 0)
    thread = _turns(thread, count=220, person=owner)
    documents = _snapshot_documents(thread)
    assert len(documents) == 220 and len(documents[-1][1]) > 30_000

    started = time.monotonic()
    raw = archive_bytes(thread)
    exported = time.monotonic() - started
    archive = json.loads(raw)
    snapshots = archive["workspace"]["snapshots"]
    assert archive["version"] == 3
    # Turn 1 saw no document yet; every turn after it the version saved last before it.
    assert snapshots[0]["document_content"] == ""
    assert [s["document_revision"] for s in snapshots[1:]] == [2 * turn for turn in range(1, 220)]
    version_2 = _encoded(_as_version_2(json.loads(raw), documents))
    print(f"\n220 turns: version 3 {len(raw):,} bytes (exported in {exported:.1f} s), version 2 {len(version_2):,} bytes")
    # Measured: 0.40 MB against 9.1 MB (4.3 %).
    assert len(raw) <= 0.10 * len(version_2)

    started = time.monotonic()
    imported = import_archive(raw=raw, owner=owner)
    print(f"imported in {time.monotonic() - started:.1f} s")
    assert _snapshot_documents(imported) == documents


def _small_archive(thread, owner) -> dict:
    """Four turns' archive, its snapshots' documents carried as versions."""
    thread = _turns(thread, count=4, person=owner)
    archive = json.loads(archive_bytes(thread))
    assert [s.get("document_revision") for s in archive["workspace"]["snapshots"]] == [None, 2, 4, 6]
    return archive


def _with_deltas(archive: dict) -> dict:
    """The same archive, its snapshots' documents after the second as deltas
    against the one before (as an export writes a text no version holds)."""
    from workspace import content_store, text_delta

    documents = dict(_snapshot_documents(Thread.objects.get(pk=archive["thread"]["id"])))
    snapshots = archive["workspace"]["snapshots"]
    for n, snapshot in enumerate(snapshots[1:], start=1):
        text = documents[snapshot["turn"]].decode("utf-8")
        snapshot.pop("document_revision")
        if n == 1:
            snapshot.pop("document_sha256")
            snapshot["document_content"] = text
        else:
            before = documents[snapshots[n - 1]["turn"]].decode("utf-8")
            snapshot.update(document_delta=text_delta.delta_between(before, text), document_sha256=content_store.digest(text))
    return archive


def test_snapshots_carried_as_deltas_come_back_byte_for_byte(thread, owner):
    archive = _with_deltas(_small_archive(thread, owner))
    assert [("document_delta" in s) for s in archive["workspace"]["snapshots"]] == [False, False, True, True]
    imported = import_archive(raw=_encoded(archive), owner=owner)
    assert _snapshot_documents(imported) == _snapshot_documents(thread)


def _changed_insert(archive: dict) -> dict:
    """An edit typed into the third snapshot's delta: a valid delta of another text."""
    delta = archive["workspace"]["snapshots"][2]["document_delta"]
    at = next(i for i, op in enumerate(delta) if isinstance(op, str))
    delta[at] = delta[at].replace("edit", "EDIT", 1)
    return archive


def _other_version(archive: dict) -> dict:
    """The third snapshot said to hold version 5, not 4: a version the archive has, of another text."""
    archive["workspace"]["snapshots"][2]["document_revision"] = 5
    return archive


def _missing_version(archive: dict) -> dict:
    archive["workspace"]["snapshots"][2]["document_revision"] = 99
    return archive


def _changed_revision(archive: dict) -> dict:
    """Version 4's text changed (a revision carries no key of its own): the snapshot holding it finds it."""
    revision = archive["workspace"]["document"]["revisions"][3]
    at = next(i for i, op in enumerate(revision["delta"]) if isinstance(op, str))
    revision["delta"][at] = revision["delta"][at].replace("edit", "EDIT", 1)
    return archive


def _delta_after_version(archive: dict) -> dict:
    snapshot = _with_deltas(copy.deepcopy(archive))["workspace"]["snapshots"][3]
    archive["workspace"]["snapshots"][3] = snapshot
    return archive


def _changed_key(archive: dict) -> dict:
    snapshot = archive["workspace"]["snapshots"][3]
    snapshot["document_sha256"] = "0" * 64
    return archive


def _first_as_delta(archive: dict) -> dict:
    archive["workspace"]["snapshots"][0].pop("document_content")
    archive["workspace"]["snapshots"][0].update(document_delta=["Report"], document_sha256="0" * 64)
    return archive


def _copy_past_the_end(archive: dict) -> dict:
    archive["workspace"]["snapshots"][2]["document_delta"] = [[0, 10**6]]
    return archive


def _out_of_order(archive: dict) -> dict:
    snapshots = archive["workspace"]["snapshots"]
    snapshots[0], snapshots[1] = snapshots[1], snapshots[0]
    return archive


def _earlier_text_changed(archive: dict) -> dict:
    """The second snapshot's whole document changed: the third's delta, read against it, no longer rebuilds its text."""
    snapshot = archive["workspace"]["snapshots"][1]
    snapshot["document_content"] = snapshot["document_content"].replace("Paragraph", "PARAGRAPH", 1)
    return archive


@pytest.mark.parametrize(
    "tamper, message",
    [
        (_other_version, "workspace.snapshots[2]: the document's version 5 is not the text its document_sha256 names"),
        (_changed_revision, "workspace.snapshots[2]: the document's version 4 is not the text its document_sha256 names"),
        (_missing_version, "workspace.snapshots[2].document_revision: the document has no version 99 in this archive."),
        (_delta_after_version, "workspace.snapshots[3].document_delta: the snapshot before it carries a version, not a text"),
    ],
)
def test_a_snapshot_carried_as_another_version_is_refused_and_nothing_is_imported(thread, owner, tamper, message):
    raw = _encoded(tamper(_small_archive(thread, owner)))
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=raw, owner=owner)
    assert message in refused.value.message
    assert database_rows() == before


@pytest.mark.parametrize(
    "tamper, message",
    [
        (_changed_insert, "workspace.snapshots[2]: its document_delta does not rebuild the document its document_sha256 names"),
        (_changed_key, "workspace.snapshots[3]: its document_delta does not rebuild the document its document_sha256 names"),
        (_earlier_text_changed, "workspace.snapshots[2]: its document_delta does not rebuild"),
        (_first_as_delta, "workspace.snapshots[0].document_delta: the first snapshot has no snapshot before it"),
        (_copy_past_the_end, "workspace.snapshots[2].document_delta[0]: expected a text or [start, length] within the"),
        (_out_of_order, "workspace.snapshots[1].turn: snapshots come in turn order; turn 1 comes after turn 2"),
    ],
)
def test_a_damaged_or_changed_snapshot_delta_is_refused_and_nothing_is_imported(thread, owner, tamper, message):
    raw = _encoded(tamper(_with_deltas(_small_archive(thread, owner))))
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=raw, owner=owner)
    assert message in refused.value.message
    assert database_rows() == before


def test_the_upload_view_says_why_a_changed_snapshot_delta_is_refused(thread, owner, owner_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    raw = _encoded(_changed_insert(_with_deltas(_small_archive(thread, owner))))
    threads = Thread.objects.count()
    response = owner_client.post("/threads/import/", {"archive": SimpleUploadedFile("a.haico.json", raw, "application/json")})
    assert response.status_code == 400
    assert "workspace.snapshots[2]: its document_delta does not rebuild" in response.content.decode()
    assert Thread.objects.count() == threads


def test_a_version_2_archive_with_every_snapshot_whole_imports_as_before(thread, owner):
    archive = _small_archive(thread, owner)
    documents = _snapshot_documents(thread)
    imported = import_archive(raw=_encoded(_as_version_2(archive, documents)), owner=owner)
    assert _snapshot_documents(imported) == documents


def test_a_version_2_archive_cannot_carry_a_snapshot_as_a_delta(thread, owner):
    """Version 2 carried every snapshot whole: a version or delta there is not read, and the whole text is missing."""
    archive = {**_small_archive(thread, owner), "version": 2}
    before = database_rows()
    with pytest.raises(ArchiveRefused, match=r"workspace\.snapshots\[1\]\.document_content: expected text"):
        import_archive(raw=_encoded(archive), owner=owner)
    assert database_rows() == before


def test_a_branchs_archive_imports_with_its_snapshots(thread, owner):
    thread = _turns(thread, count=30, person=owner)
    branch = fork_thread(source=thread, turn_index=20, user=owner)
    branch = _turns(branch, count=5, person=owner, start=100)
    documents = _snapshot_documents(branch)
    # A branch's own turns' snapshots (those before the fork are its parent's).
    assert [turn for turn, _ in documents] == [21, 22, 23, 24, 25]
    imported = import_archive(raw=archive_bytes(branch), owner=owner)
    assert _snapshot_documents(imported) == documents


def test_a_thread_shared_with_an_editor_exports_and_imports_with_their_turns(thread, owner, other_user):
    thread_member_add(thread=thread, who=other_user.username, role="editor", by=owner)
    thread = _turns(thread, count=10, person=owner)
    thread = _turns(thread, count=10, person=other_user, start=10)
    documents = _snapshot_documents(thread)
    raw = archive_bytes(thread)
    for importer in (owner, other_user):
        imported = import_archive(raw=raw, owner=importer)
        assert _snapshot_documents(imported) == documents
