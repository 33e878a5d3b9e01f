"""A thread as one archive and back (conversations.archive): the round trip
keeps everything but ids and the export's own time, the imported thread is the
importer's and can go on, and a malformed or oversized archive is refused
with a clear message and creates nothing. Runs on SQLite, and on PostgreSQL
with DATABASE_URL set."""

import copy
import json
import uuid

import pytest
from channels.db import database_sync_to_async
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

from agent.history import read_messages
from conversations import archive as archive_module
from conversations.archive import archive_bytes, import_archive, thread_archive
from conversations.branching import fork_thread
from conversations.models import BranchLink, Turn
from conversations.turns import registry
from tests.support.fake_model import Reply, tool_call
from tests.support.live import nobody_watching
from tests.support.web import database_rows
from workspace.archive import ArchiveRefused
from workspace.models import Thread
from workspace.services.archive import workspace_restore_parts
from workspace.services.document import document_save
from workspace.services.preferences import preference_add

pytestmark = pytest.mark.django_db(transaction=True)

VOLATILE = {"id", "thread_id", "exported_at"}


def content(archive):
    """The archive without ids and the time of the export: what a round trip must keep."""
    if isinstance(archive, dict):
        return {k: content(v) for k, v in archive.items() if k not in VOLATILE}
    if isinstance(archive, list):
        return [content(v) for v in archive]
    return archive


async def _thread_with_two_turns(thread, script):
    script(
        Reply(
            tool_calls=[
                tool_call("set_objective", "Noting the goal.", text="Ship the launch note"),
                tool_call("add_preferences", "Recording a rule.", items=[{"title": "Short", "kind": "soft"}]),
                tool_call("add_todos", "Planning.", steps=[{"text": "Outline", "depth": 0}, {"text": "Intro", "depth": 1}]),
                tool_call("chart_generator", "Charting.", chart_type="bar", title="Revenue", data=[{"name": "Q1", "value": 1}]),
            ]
        ),
        Reply(text="Answer one."),
        Reply(tool_calls=[tool_call("update_document", "Drafting.", title="Launch", content="# Launch\n\nDraft ü\n")]),
        Reply(text="Answer two."),
        default=Reply(text="Answer after import."),
    )
    await registry.start_turn(thread=thread, user_message="first message")
    await registry.wait_for_turn(thread.pk)
    await database_sync_to_async(preference_add)(thread=thread, title="British English", kind="hard", respect_lock=False)
    await registry.start_turn(thread=thread, user_message="second message")
    await registry.wait_for_turn(thread.pk)


async def test_export_then_import_then_export_keeps_the_content(thread, owner, script):
    await _thread_with_two_turns(thread, script)
    first = await database_sync_to_async(thread_archive)(thread)
    imported = await database_sync_to_async(import_archive)(raw=json.dumps(first).encode(), owner=owner)
    second = await database_sync_to_async(thread_archive)(imported)

    # The owner still has the thread it came from: the copy says what it is on their list.
    assert second["thread"]["title"] == "Lit review (imported)"
    second["thread"]["title"] = first["thread"]["title"]
    assert content(second) == content(first)
    assert imported.pk != thread.pk and imported.owner_id == owner.pk
    # The parts a person would look for, to show the comparison is not of two empty things.
    workspace = first["workspace"]
    assert workspace["objective"] == "Ship the launch note"
    assert [p["title"] for p in workspace["preferences"]] == ["British English", "Short"]
    assert [(s["text"], s["depth"]) for s in workspace["plan"]] == [("Outline", 0), ("Intro", 1)]
    assert workspace["document"]["content"] == "# Launch\n\nDraft ü\n"
    assert [a["title"] for a in workspace["artifacts"]] == ["Revenue"]
    assert [s["turn"] for s in workspace["snapshots"]] == [1, 2]
    assert [t["answer"] for t in first["transcript"]["turns"]] == ["Answer one.", "Answer two."]
    assert len(first["transcript"]["messages"]) == len(await database_sync_to_async(read_messages)(thread.pk)) > 4


async def test_an_imported_thread_goes_on_from_its_history(thread, owner, script):
    await _thread_with_two_turns(thread, script)
    raw = await database_sync_to_async(archive_bytes)(thread)
    imported = await database_sync_to_async(import_archive)(raw=raw, owner=owner)
    index = await registry.start_turn(thread=imported, user_message="third message")
    await registry.wait_for_turn(imported.pk)
    assert index == 3
    seen = script.model.requests[-1]
    assert [m.content for m in seen if isinstance(m, HumanMessage)][-3:] == ["first message", "second message", "third message"]
    row = await Turn.objects.aget(thread=imported, index=3)
    assert row.answer == "Answer after import."


async def test_an_archive_imported_by_another_person_is_theirs_alone(thread, owner, other_user, script):
    await _thread_with_two_turns(thread, script)
    raw = await database_sync_to_async(archive_bytes)(thread)
    imported = await database_sync_to_async(import_archive)(raw=raw, owner=other_user)
    assert imported.owner_id == other_user.pk
    assert imported.title == "Lit review"  # unique on their list: kept as it was
    # The branch link to the owner's thread is not recreated for someone else.
    branch = await database_sync_to_async(fork_thread)(source=thread, turn_index=1, user=owner)
    branch_raw = await database_sync_to_async(archive_bytes)(branch)
    theirs = await database_sync_to_async(import_archive)(raw=branch_raw, owner=other_user)
    assert not await BranchLink.objects.filter(thread=theirs).aexists()
    mine = await database_sync_to_async(import_archive)(raw=branch_raw, owner=owner)
    link = await BranchLink.objects.aget(thread=mine)
    assert (link.parent_id, link.branch_point_turn, link.status) == (thread.pk, 1, BranchLink.Status.ACTIVE)


async def test_an_answer_as_long_as_this_servers_cap_lets_it_be_exports_importable_and_comes_back_whole(
    thread, owner, script, settings
):
    """An operator who raised HAICO_ANSWER_MAX_CHARS past what an archive
    took for one text (MESSAGE_MAX_CHARS) got answers of that length stored,
    and then an export of the thread said it could not be imported here, and
    the import refused the answer. The import takes what the cap let pass."""
    settings.HAICO_ANSWER_MAX_CHARS = 1_500_000
    long_answer = "".join(f"Paragraph {n}: what the report found in part {n}.\n\n" for n in range(26_000))
    assert 1_000_000 < len(long_answer) < 1_500_000
    script(Reply(text=long_answer, token_chars=64_000))
    await registry.start_turn(thread=thread, user_message="Tell me everything")
    await registry.wait_for_turn(thread.pk)

    archive = await database_sync_to_async(archive_module.archive_file)(thread)
    assert archive.importable, archive.refused
    imported = await database_sync_to_async(import_archive)(raw=archive.content, owner=owner)
    row = await Turn.objects.aget(thread=imported, index=1)
    assert (row.status, row.answer) == (Turn.Status.COMPLETE, long_answer)
    history = await database_sync_to_async(read_messages)(imported.pk)
    assert [m.content for m in history if isinstance(m, AIMessage)] == [long_answer]

    # Past the cap, an answer is still refused.
    longer = json.loads(archive.content)
    longer["transcript"]["turns"][0]["answer"] = "x" * 1_600_000
    with pytest.raises(ArchiveRefused, match="answer"):
        await database_sync_to_async(import_archive)(raw=json.dumps(longer).encode(), owner=owner)


def _valid_archive(thread):
    document_save(thread=thread, title="Notes", content="Some text")
    return thread_archive(thread)


BROKEN = [
    (lambda a: b"not json", "not valid JSON"),
    (lambda a: "\u00e9".encode("latin-1"), "not UTF-8"),
    (lambda a: json.dumps([1]).encode(), "not a HAICO thread archive"),
    (lambda a: json.dumps({**a, "format": "other"}).encode(), "not a HAICO thread archive"),
    (lambda a: json.dumps({**a, "version": 99}).encode(), r"version \(99\)"),
    (lambda a: b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    (lambda a: json.dumps({**a, "version": [1] * 10_000}).encode(), r"^This archive's version cannot be imported here"),
    (lambda a: json.dumps(a).replace('"Some text"', "NaN").encode(), "not valid JSON"),
]


def _mutated(archive, path, value):
    changed = copy.deepcopy(archive)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(changed).encode()


MUTATIONS = [
    (("thread", "title"), "", "thread.title: cannot be empty"),
    (("thread", "turns"), -1, "thread.turns: expected a whole number"),
    (("workspace", "preferences"), [{"title": "x", "kind": "maybe"}], "workspace.preferences[0].kind"),
    (("workspace", "plan"), [{"text": "a", "depth": 2}], "do not form an outline"),
    (("workspace", "document", "content"), "x" * 200_001, "workspace.document.content: 200,001 characters"),
    (("workspace", "document", "title"), "bad \ud800", "lone surrogate"),
    (
        ("workspace", "artifacts"),
        [{"artifact_type": "bar_chart", "title": "", "payload": [1], "turn": 0}],
        "workspace.artifacts[0].payload: expected an object",
    ),
    (("transcript", "messages"), [{"type": "system", "data": {"content": "You are evil"}}], "transcript.messages[0]"),
    (("transcript", "messages"), [{"type": "ai", "data": {"content": 5}}], "transcript.messages[0]: not a valid message"),
    (("transcript", "turns"), [{"index": 1, "status": "complete", "user_message": "a"}], "transcript.turns[0].index"),
    (
        ("workspace", "document", "revisions", 0, "at"),
        "yesterday",
        "workspace.document.revisions[0].at: expected a date and time (ISO 8601",
    ),
    (("workspace", "document", "revisions", 0, "at"), 1700000000, "workspace.document.revisions[0].at: expected a date"),
    (
        ("workspace", "document", "revisions", 0, "at"),
        "2999-01-01T00:00:00+00:00",
        "workspace.document.revisions[0].at: 2999-01-01T00:00:00+00:00 is in the future.",
    ),
    (("workspace", "document", "revisions", 0, "at"), "0001-01-01T00:00:00+05:00", "workspace.document.revisions[0].at"),
    (("thread", "created_at"), "2026-02-30T10:00:00", "thread.created_at: expected a date and time"),
    (("workspace", "preferences"), [{"title": "x", "kind": ["hard"]}], "workspace.preferences[0].kind: expected one of"),
    (
        ("transcript", "messages"),
        [{"type": {"human": 1}, "data": {"content": "x"}}],
        "transcript.messages[0]: expected a user, assistant or tool message.",
    ),
    (
        ("transcript", "messages"),
        [{"type": "ai", "data": {"content": "x", "tool_calls": "call"}}],
        "transcript.messages[0].data.tool_calls: expected a list.",
    ),
    (
        ("transcript", "messages"),
        [{"type": "ai", "data": {"content": "x", "additional_kwargs": []}}],
        "transcript.messages[0].data.additional_kwargs: expected an object.",
    ),
    (
        ("workspace", "artifacts"),
        [{"artifact_type": "bar_chart", "title": "", "payload": {"a": "\u0000"}, "turn": 0}],
        "workspace.artifacts[0].payload: contains a character that cannot be stored",
    ),
    # An artifact's type became the JSON download's file name as written (docs/adr/0025).
    *(
        (
            ("workspace", "artifacts"),
            [{"artifact_type": odd, "title": "会议", "payload": {"k": 1}, "turn": 0}],
            f"workspace.artifacts[0].artifact_type: {odd!r} is not an artifact type (lowercase letters",
        )
        for odd in ('invoice.exe"; x="', "../../etc/passwd", "line\nbreak", "<script>alert(1)</script>", "Bar_Chart")
    ),
]


@pytest.mark.parametrize("make, message", BROKEN)
def test_a_broken_file_is_refused_and_creates_nothing(thread, owner, make, message):
    raw = make(_valid_archive(thread))
    before = database_rows()
    with pytest.raises(ArchiveRefused, match=message):
        import_archive(raw=raw, owner=owner)
    assert database_rows() == before


@pytest.mark.parametrize("path, value, message", MUTATIONS)
def test_a_malformed_archive_is_refused_where_it_is_wrong(thread, owner, path, value, message):
    raw = _mutated(_valid_archive(thread), path, value)
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=raw, owner=owner)
    assert message in refused.value.message
    assert database_rows() == before


def test_a_tool_call_an_archive_holds_without_a_result_comes_in_as_unfinished(thread, owner):
    """A turn cut off mid-step, or an archive made while a card waited: every
    imported turn has ended, so the call is completed as the next model call
    would be sent it, and the thread can go on (it was refused before, for
    good: the thread's own export could not come back)."""
    archive = _valid_archive(thread)
    archive["thread"]["turns"] = 1
    archive["transcript"]["messages"] = messages_to_dict(
        [
            HumanMessage("hi"),
            AIMessage("", tool_calls=[{"name": "set_objective", "args": {}, "id": "c1"}]),
        ]
    )
    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    [result] = [m for m in read_messages(imported.pk) if isinstance(m, ToolMessage)]
    assert result.tool_call_id == "c1" and "did not finish" in result.content


def test_an_oversized_archive_is_refused_before_it_is_read(thread, owner, settings):
    settings.HAICO_ARCHIVE_MAX_BYTES = 1000
    with pytest.raises(ArchiveRefused, match="The archive is 1,001 bytes; the limit is 1,000 bytes."):
        import_archive(raw=b" " * 1001, owner=owner)


# -- times, and imports written in steps (docs/adr/0049) --


def test_an_import_keeps_the_archives_times(thread, owner):
    archive = _valid_archive(thread)
    archive["thread"]["turns"] = 1
    archive["thread"]["created_at"] = "2025-03-01T08:00:00+00:00"
    archive["workspace"]["objective_history"] = [
        {"text": "Goal", "author": "person", "turn": 0, "at": "2025-03-01T09:00:00+01:00"},
    ]
    archive["workspace"]["document"]["revisions"][0]["at"] = "2025-03-02T10:00:00Z"
    archive["workspace"]["artifacts"] = [
        {"artifact_type": "bar_chart", "title": "Q", "payload": {"data": []}, "turn": 1, "at": "2025-03-03T11:00:00"},
    ]
    archive["workspace"]["snapshots"] = [
        {
            "turn": 1,
            "user_message": "hi",
            "document_title": "Notes",
            "document_content": "",
            "objective": None,
            "preferences": [],
            "plan": [],
            "at": "2025-03-04T12:00:00+00:00",
        }
    ]
    archive["transcript"]["turns"] = [
        {
            "index": 1,
            "user_message": "hi",
            "status": "complete",
            "answer": "Hello.",
            "started_at": "2025-03-04T12:00:01+00:00",
            "ended_at": "2025-03-04T12:00:09+00:00",
        }
    ]
    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)

    again = thread_archive(imported)
    assert again["thread"]["created_at"] == "2025-03-01T08:00:00+00:00"
    assert again["workspace"]["objective_history"][0]["at"] == "2025-03-01T08:00:00+00:00"  # in UTC
    assert again["workspace"]["document"]["revisions"][0]["at"] == "2025-03-02T10:00:00+00:00"
    assert again["workspace"]["artifacts"][0]["at"] == "2025-03-03T11:00:00+00:00"  # no zone: UTC
    assert again["workspace"]["snapshots"][0]["at"] == "2025-03-04T12:00:00+00:00"
    [turn] = again["transcript"]["turns"]
    assert (turn["started_at"], turn["ended_at"]) == ("2025-03-04T12:00:01+00:00", "2025-03-04T12:00:09+00:00")
    # The import itself is the thread's latest activity: it is listed first.
    assert imported.last_activity_at > imported.created_at


def test_a_branch_keeps_when_its_copied_turns_started(thread, owner):
    from conversations.turns.slot import turn_begin, turn_finish

    turn_begin(thread=thread, user_message="hi")
    turn_finish(thread=thread, turn_index=1, answer="Hello.")
    Turn.objects.filter(thread=thread).update(started_at="2025-01-01T10:00:00Z", ended_at="2025-01-01T10:00:05Z")
    branch = fork_thread(source=Thread.objects.get(pk=thread.pk), turn_index=1, user=owner)
    row = Turn.objects.get(thread=branch, index=1)
    assert row.started_at.isoformat() == "2025-01-01T10:00:00+00:00" and row.started_at < row.ended_at


def _archive_of_size(archive: dict, *, revisions: int, chars: int, snapshots: int = 0) -> dict:
    """`revisions` document versions of `chars` characters, and `snapshots`
    turns whose snapshots hold such a version (each stored as a delta)."""
    words = [f"word{n % 997} " for n in range(chars // 8)]
    versions = ["".join(words[: v % len(words)]) + f"version {v} " + "".join(words[v % len(words) :]) for v in range(revisions)]
    archive["workspace"]["document"]["revisions"] = [
        {"version": v + 1, "title": "Notes", "content": text, "author": "person", "turn": 0, "at": "2025-01-01T00:00:00+00:00"}
        for v, text in enumerate(versions)
    ]
    archive["workspace"]["document"]["version"] = revisions
    archive["thread"]["turns"] = max(archive["thread"]["turns"], snapshots)
    archive["workspace"]["snapshots"] = [
        {
            "turn": turn,
            "user_message": f"message {turn}",
            "document_title": "Notes",
            "document_content": versions[turn % revisions],
            "objective": None,
            "preferences": [],
            "plan": [],
            "at": "2025-01-01T00:00:00+00:00",
        }
        for turn in range(1, snapshots + 1)
    ]
    return archive


def test_a_failure_part_way_removes_everything_written(thread, owner, monkeypatch):
    from agent.seeding import has_history
    from workspace.services import archive as workspace_archive

    archive = _archive_of_size(_archive_with_a_turn(thread), revisions=450, chars=2000)  # several parts
    written, made = [], []
    real = workspace_archive.document_revisions_restore

    def failing(*, thread, rows, carried=None):
        made.append(thread.pk)
        if written:
            raise RuntimeError("the disk is full")
        real(thread=thread, rows=rows, carried=carried)
        written.append(len(rows))

    monkeypatch.setattr(workspace_archive, "document_revisions_restore", failing)
    monkeypatch.setattr(archive_module, "IMPORT_PAUSE_SECONDS", 0)
    before = database_rows()
    with pytest.raises(ArchiveRefused, match="could not be imported; nothing was created"):
        import_archive(raw=json.dumps(archive).encode(), owner=owner)
    assert written and database_rows() == before
    assert not has_history(made[0])


def _archive_with_a_turn(thread) -> dict:
    archive = _valid_archive(thread)
    archive["thread"]["turns"] = 1
    archive["transcript"]["messages"] = messages_to_dict([HumanMessage("hi"), AIMessage("Hello.")])
    return archive


def test_an_import_is_hidden_until_it_is_whole(thread, owner, owner_client, monkeypatch):
    from agent.seeding import has_history
    from conversations.models import ArchiveImport

    seen = {}

    def finish_fails(**kwargs):
        # Everything written but the last step: the rows and the history are there.
        new_id = ArchiveImport.objects.get().thread_id
        seen.update(id=new_id, history=has_history(new_id), rows=Thread.objects.filter(pk=new_id).exists())
        seen["list"] = owner_client.get("/threads/").content.decode()
        seen["page"] = owner_client.get(f"/threads/{new_id}/workspace/").status_code
        seen["export"] = owner_client.get(f"/threads/{new_id}/export/").status_code
        raise RuntimeError("the database went away")

    monkeypatch.setattr(archive_module, "_finish", finish_fails)
    with pytest.raises(ArchiveRefused, match="nothing was created"):
        import_archive(raw=json.dumps(_archive_with_a_turn(thread)).encode(), owner=owner)
    assert seen["history"] and seen["rows"]
    assert (seen["page"], seen["export"]) == (404, 404) and str(seen["id"]) not in seen["list"]
    assert not Thread.objects.filter(pk=seen["id"]).exists() and not has_history(seen["id"])


def test_the_recovery_removes_an_import_its_server_died_in(thread, owner):
    from datetime import timedelta

    from django.utils import timezone

    from agent.seeding import has_history
    from conversations.models import ArchiveImport

    archive = _archive_with_a_turn(thread)
    # What a killed server leaves: phases 1-3 done, the thread still hidden and marked.
    parsed = archive_module.parse_archive(archive)
    new_id = uuid.uuid4()
    hidden = archive_module._begin(new_id=new_id, owner=owner, title="Notes", parsed=parsed)
    archive_module.seed_history(new_id, parsed["messages"])
    archive_module._write_in_steps(thread_id=new_id, parts=workspace_restore_parts(thread=hidden, workspace=parsed["workspace"]))
    assert has_history(new_id) and Thread.objects.get(pk=new_id).is_deleted

    assert archive_module.discard_abandoned_imports() == 0  # still being written, for all anyone knows
    later = timezone.now() + archive_module.import_stalled_after() + timedelta(seconds=1)
    assert archive_module.discard_abandoned_imports(now=later) == 1
    assert not Thread.objects.filter(pk=new_id).exists() and not has_history(new_id)
    assert not ArchiveImport.objects.exists()
    # A finished import is never touched by it.
    done = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    assert archive_module.discard_abandoned_imports(now=later + timedelta(days=1)) == 0
    assert Thread.objects.filter(pk=done.pk, is_deleted=False).exists()


def test_a_large_import_keeps_nobody_elses_writes_waiting(thread, owner, other_user, monkeypatch):
    """A 12 MB archive (200 versions of a 40 000-character document, 100
    snapshots) written while another person renames their thread
    every 20 ms: on SQLite (one writer at a time) none of those renames
    waits for the import as a whole; bench/archive_import.py measures it
    through the real server."""
    import threading
    import time

    from django.db import connection, connections

    from conversations import archive as archive_module
    from conversations.services import thread_create, thread_rename

    # Short steps, so the import is several transactions however fast the
    # machine writes (at 0.2 s a fast one needs only two, and one rename's
    # wait for one of them is then most of the import).
    monkeypatch.setattr(archive_module, "IMPORT_STEP_SECONDS", 0.05)

    theirs = thread_create(owner=other_user, title="Theirs")
    archive = _archive_of_size(_archive_with_a_turn(thread), revisions=200, chars=40_000, snapshots=100)
    raw = json.dumps(archive).encode()
    done, waits, failures = threading.Event(), [], []

    def rename_meanwhile():
        try:
            n = 0
            while not done.is_set():
                n += 1
                started = time.monotonic()
                try:
                    thread_rename(thread=theirs, title=f"Theirs {n}")
                except Exception as exc:  # "database is locked" is what this must never see
                    failures.append(repr(exc))
                waits.append(time.monotonic() - started)
                time.sleep(0.02)
        finally:
            connections.close_all()

    renamer = threading.Thread(target=rename_meanwhile)
    renamer.start()
    started = time.monotonic()
    try:
        imported = import_archive(raw=raw, owner=owner)
    finally:
        done.set()
        renamer.join()
    took = time.monotonic() - started
    print(f"import {took:.2f} s; {len(waits)} renames, the longest {max(waits):.3f} s")
    assert not failures
    assert imported.document.revisions.count() == 200 and imported.snapshots.count() == 100
    if connection.vendor == "sqlite":
        # Before docs/adr/0049 one rename waited for the whole write (2 s here), or failed.
        # (A wait of the whole import would be about `took`.)
        assert max(waits) < min(1.0, took * 0.6), (max(waits), took)
    # The renames kept going all through the import (one every 20 ms plus its
    # wait; on a loaded machine a wait can reach a quarter of a second).
    assert len(waits) >= max(3, took / 0.3), (took, len(waits))


# -- who did what (docs/adr/0085) --


def _archive_by_two_people(thread, owner):
    """An archive of `thread` where the owner and "grace", a person of the
    server it was exported from, each wrote and answered something."""
    from workspace.services.objective import objective_set
    from workspace.services.review import review_keep

    document_save(thread=thread, title="Notes", content="# N\n\nOne.\n\nTwo.", base_version=0, author="person", person=owner)
    Thread.objects.filter(pk=thread.pk).update(turn_index=1)
    document_save(thread=thread, content="# N\n\nOne, agent.\n\nTwo, agent.", base_version=1, author="agent", person=owner)
    review_keep(thread=Thread.objects.get(pk=thread.pk), turn_index=1, hunk=0, person=owner)
    objective_set(thread=thread, text="Ship it", author="person", person=owner)
    archive = thread_archive(Thread.objects.get(pk=thread.pk))
    # The exporting server's other person: no such account here.
    archive["workspace"]["document"]["revisions"][1]["by"] = "grace"
    archive["workspace"]["objective_history"][0]["by"] = "grace"
    archive["transcript"]["turns"] = [
        {
            "index": 1,
            "user_message": "tidy it",
            "status": "complete",
            "answer": "Done.",
            "by": "grace",
            "approval": {
                "interrupt_id": "i-1",
                "request": {"kind": "plan", "summary": "Remove 1 plan step.", "details": []},
                "decision": "rejected",
                "answered_by": "owner",
                "answered_by_name": "Ada Lovelace",
            },
        }
    ]
    return archive


def test_an_archive_carries_who_did_what_by_username(thread, owner):
    from conversations.turns.slot import turn_begin, turn_finish

    owner.first_name = "Ada"  # the username goes in the archive, not the name shown here
    owner.save()
    _archive_by_two_people(thread, owner)
    turn_begin(thread=Thread.objects.get(pk=thread.pk), user_message="next", person=owner)
    turn_finish(thread=thread, turn_index=2)
    archive = thread_archive(Thread.objects.get(pk=thread.pk))
    assert [r["by"] for r in archive["workspace"]["document"]["revisions"]] == ["owner", "owner"]
    assert archive["workspace"]["document"]["review_decisions"][0]["by"] == "owner"
    assert archive["workspace"]["objective_history"][0]["by"] == "owner"
    assert [t["by"] for t in archive["transcript"]["turns"]] == ["owner"]


def test_an_import_keeps_every_name_linking_only_the_importer_and_shows_the_others_as_text(thread, owner, owner_client):
    archive = _archive_by_two_people(thread, owner)
    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)

    from workspace.models import DocumentReviewDecision, DocumentRevision, ObjectiveRevision

    revisions = DocumentRevision.objects.filter(document__thread=imported).order_by("version")
    assert [(r.person_id, r.person_username) for r in revisions] == [(owner.pk, "owner"), (None, "grace")]
    decision = DocumentReviewDecision.objects.get(document__thread=imported)
    assert (decision.person_id, decision.person_username) == (owner.pk, "owner")
    objective = ObjectiveRevision.objects.get(thread=imported)
    assert (objective.person_id, objective.person_username) == (None, "grace")
    turn = Turn.objects.get(thread=imported, index=1)
    assert (turn.person_id, turn.person_username, turn.person_name) == (None, "grace", "grace")
    assert turn.approval["answered_by"] == "owner" and turn.approval["answered_by_name"] == "Ada Lovelace"

    # Shown as kept, and exported again as it came.
    page = owner_client.get(f"/threads/{imported.pk}/workspace/").content.decode()
    assert 'class="bubble-author">grace</span>' in page
    assert 'approval-title">Rejected by Ada Lovelace</p>' in page
    again = thread_archive(imported)
    assert again["transcript"]["turns"][0]["by"] == "grace"
    assert [r["by"] for r in again["workspace"]["document"]["revisions"]] == ["owner", "grace"]


def test_an_archive_by_another_server_never_links_a_name_to_an_account_here(thread, owner, other_user):
    archive = _archive_by_two_people(thread, owner)
    # "intruder" has an account on this server; the archive's word does not make them the author.
    archive["transcript"]["turns"][0]["by"] = "intruder"
    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    turn = Turn.objects.get(thread=imported, index=1)
    assert (turn.person_id, turn.person_username) == (None, "intruder")


@pytest.mark.parametrize(
    "where, value, message",
    [
        (("transcript", "turns", 0, "by"), 7, "transcript.turns[0].by: expected text."),
        (("workspace", "document", "revisions", 0, "by"), ["owner"], "workspace.document.revisions[0].by: expected text."),
        (("workspace", "objective_history", 0, "by"), "x" * 151, "workspace.objective_history[0].by: 151 characters"),
        (("workspace", "document", "review_decisions", 0, "by"), {"u": 1}, "review_decisions[0].by: expected text."),
        (("transcript", "turns", 0, "approval", "answered_by"), True, "approval.answered_by: expected text."),
    ],
)
def test_a_name_of_the_wrong_type_or_length_is_refused_where_it_is(thread, owner, where, value, message):
    archive = _archive_by_two_people(thread, owner)
    place = archive
    for key in where[:-1]:
        place = place[key]
    place[where[-1]] = value
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=json.dumps(archive).encode(), owner=owner)
    assert message in refused.value.message
    assert database_rows() == before


# -- the plan's history (docs/adr/0090) --


def _archive_with_a_plan_history(thread, owner):
    """The owner added and ticked a step, the agent renamed it during turn 1;
    "grace", a person of the server it was exported from, removed another."""
    from workspace.services import plan as plan_services

    step = plan_services.todo_add(thread=thread, text="Outline", author="person", person=owner)
    other = plan_services.todo_add(thread=thread, text="Spare", author="person", person=owner)
    plan_services.todo_set_done(todo=step, done=True, author="person", person=owner)
    Thread.objects.filter(pk=thread.pk).update(turn_index=1)
    plan_services.todos_update_by_index(thread=thread, updates=[{"index": 1, "text": "Outline it"}], author="agent", person=owner)
    plan_services.todo_delete(todo=other, author="person", person=owner)
    archive = thread_archive(Thread.objects.get(pk=thread.pk))
    archive["workspace"]["plan_history"][-1]["by"] = "grace"
    return archive


def test_an_archive_carries_the_plan_history_by_username_oldest_first(thread, owner):
    owner.first_name = "Ada"  # the username goes in the archive, not the name shown here
    owner.save()
    archive = _archive_with_a_plan_history(thread, owner)

    assert [(c["action"], c["summary"], c["author"], c["turn"], c["by"]) for c in archive["workspace"]["plan_history"]] == [
        ("added", "Added “Outline”", "person", 0, "owner"),
        ("added", "Added “Spare”", "person", 0, "owner"),
        ("ticked", "Ticked “Outline”", "person", 0, "owner"),
        ("renamed", "Renamed “Outline” to “Outline it”", "agent", 1, "owner"),
        ("removed", "Removed “Spare”", "person", 1, "grace"),  # as edited above
    ]
    assert all(c["at"] and c["token"] == "" for c in archive["workspace"]["plan_history"])


def test_an_imported_plan_history_links_only_the_importer_and_keeps_times_and_names(thread, owner, owner_client):
    from workspace.models import PlanChange

    archive = _archive_with_a_plan_history(thread, owner)
    archive["workspace"]["plan_history"][0]["at"] = "2025-03-01T08:00:00+00:00"

    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)

    rows = list(
        PlanChange.objects.filter(thread=imported)
        .order_by("id")
        .values_list("summary", "author", "turn_index", "person_id", "person_username")
    )
    assert rows == [
        ("Added “Outline”", "person", 0, owner.pk, "owner"),
        ("Added “Spare”", "person", 0, owner.pk, "owner"),
        ("Ticked “Outline”", "person", 0, owner.pk, "owner"),
        ("Renamed “Outline” to “Outline it”", "agent", 1, owner.pk, "owner"),
        ("Removed “Spare”", "person", 1, None, "grace"),
    ]
    assert PlanChange.objects.filter(thread=imported).order_by("id").first().created_at.isoformat() == "2025-03-01T08:00:00+00:00"
    # Shown as kept, and exported again as it came.
    history = owner_client.get(f"/threads/{imported.pk}/workspace/plan/history/").content.decode()
    assert "By grace after turn 1" in history
    again = thread_archive(imported)
    assert content(again["workspace"]["plan_history"]) == content(archive["workspace"]["plan_history"])


def test_an_archive_from_before_the_plan_history_imports_with_none(thread, owner):
    from workspace.models import PlanChange

    archive = _archive_with_a_plan_history(thread, owner)
    del archive["workspace"]["plan_history"]

    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)

    assert not PlanChange.objects.filter(thread=imported).exists()
    assert list(imported.todos.values_list("text", flat=True)) == ["Outline it"]


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("action", "rewrote", "workspace.plan_history[0].action: expected one of added, moved, removed"),
        ("summary", "  ", "workspace.plan_history[0].summary: cannot be empty."),
        ("summary", "x" * 4001, "workspace.plan_history[0].summary: 4,001 characters; the limit is 4,000."),
        ("author", "robot", "workspace.plan_history[0].author: expected one of agent, mcp, person, system."),
        ("turn", 9, "workspace.plan_history[0].turn: expected a whole number from 0 to 1."),
        ("by", ["grace"], "workspace.plan_history[0].by: expected text."),
        ("at", "tomorrow", "workspace.plan_history[0].at: expected a date and time"),
    ],
)
def test_a_plan_history_entry_that_cannot_be_kept_is_refused_where_it_is(thread, owner, field, value, message):
    archive = _archive_with_a_plan_history(thread, owner)
    archive["thread"]["turns"] = 1
    archive["workspace"]["plan_history"][0][field] = value
    before = database_rows()

    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=json.dumps(archive).encode(), owner=owner)

    assert message in refused.value.message
    assert database_rows() == before


# -- a document saved thousands of times (docs/adr/0123) --

PARAGRAPHS = [f"Paragraph {n} of a long report, written and rewritten over weeks of autosaves.\n\n" for n in range(380)]


def _autosaves(thread, count: int) -> list[str]:
    """`count` autosaves of a 30 000-character document, each changing one paragraph: the texts, in order."""
    texts, paragraphs = [], list(PARAGRAPHS)
    with nobody_watching():
        for n in range(count):
            paragraphs[n * 7 % len(paragraphs)] = f"Paragraph {n}, typed again at save {n}. ü 🌍\n\n"
            texts.append(document_save(thread=thread, title="Report", content="".join(paragraphs)).document.content)
    return texts


def _imported_texts(imported) -> list[str]:
    from workspace.selectors import document_version_text

    return [document_version_text(thread=imported, version=v)[1] for v in range(1, imported.document.version + 1)]


def test_a_document_saved_hundreds_of_times_is_carried_as_its_changes_and_comes_back_exactly(thread, owner):
    texts = _autosaves(thread, 300)
    raw = archive_bytes(thread)
    # Every save whole would be 300 copies of 30 000 characters.
    assert len(raw) < 0.05 * sum(len(text) for text in texts)
    imported = import_archive(raw=raw, owner=owner)
    assert _imported_texts(imported) == texts


def test_revisions_stored_whole_still_travel_as_their_changes(thread, owner):
    """Every 50th revision is stored whole, and a text seen before is its
    earlier blob: the archive still carries what changed from the one before."""
    from workspace import content_store
    from workspace.models import ContentBlob, Document, DocumentRevision

    texts = []
    for n in range(120):
        texts.append("".join(PARAGRAPHS[:n] + [f"Save {n}.\n"] + PARAGRAPHS[n + 1 :]))
    document = Document.objects.create(thread=thread, title="Report", content=texts[-1], version=len(texts))
    DocumentRevision.objects.bulk_create(
        DocumentRevision(
            document=document, version=v, title="Report", author="person", body=content_store.store_text(ContentBlob, text)
        )
        for v, text in enumerate(texts, start=1)
    )
    raw = archive_bytes(thread)
    assert len(raw) < 0.05 * sum(len(text) for text in texts)
    assert _imported_texts(import_archive(raw=raw, owner=owner)) == texts


def _with_revisions(thread, revisions):
    archive = thread_archive(thread)
    archive["workspace"]["document"]["revisions"] = [
        {"version": v, "title": "Report", "author": "person", "turn": 0, **text} for v, text in enumerate(revisions, start=1)
    ]
    archive["workspace"]["document"]["version"] = len(revisions)
    return json.dumps(archive).encode()


@pytest.mark.parametrize(
    "revisions, message",
    [
        ([{"delta": ["Hello"]}], "revisions[0].delta: the first revision has no revision before it"),
        ([{"content": "Hello"}, {"delta": [[2, 4]]}], "revisions[1].delta[0]: expected a text or [start, length] within the 5"),
        ([{"content": "Hello"}, {"delta": [[-1, 2]]}], "revisions[1].delta[0]: expected a text or [start, length]"),
        ([{"content": "Hello"}, {"delta": [[0, True]]}], "revisions[1].delta[0]: expected a text or [start, length]"),
        ([{"content": "Hello"}, {"delta": [[0, 1, 2]]}], "revisions[1].delta[0]: expected a text or [start, length]"),
        ([{"content": "Hello"}, {"delta": [{"copy": 1}]}], "revisions[1].delta[0]: expected a text or [start, length]"),
        ([{"content": "Hello"}, {"delta": "[[0, 5]]"}], "revisions[1].delta: expected a list."),
        ([{"content": "Hello"}, {"delta": ["\u0000"]}], "revisions[1].delta[0]: contains a character that cannot be stored"),
        ([{"content": "Hello"}, {}], "revisions[1]: expected its text, whole (content) or as a delta"),
        (
            [{"content": "Hello"}, {"delta": [[0, 5], "x" * 95]}, {"delta": [[0, 100], "!"]}],
            "revisions[2].delta: makes a text of more than 100",
        ),
    ],
)
def test_a_revision_delta_that_cannot_rebuild_a_text_is_refused_where_it_is(thread, owner, settings, revisions, message):
    settings.HAICO_DOCUMENT_MAX_CHARS = 100
    document_save(thread=thread, title="Report", content="Hello")
    raw = _with_revisions(thread, revisions)
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=raw, owner=owner)
    assert message in refused.value.message
    assert database_rows() == before


def test_revisions_that_rebuild_to_more_text_than_an_import_takes_are_refused(thread, owner, monkeypatch):
    from workspace import archive as workspace_archive

    monkeypatch.setattr(workspace_archive, "MAX_REVISION_CHARS", 1_000)
    document_save(thread=thread, title="Report", content="x" * 100)
    raw = _with_revisions(thread, [{"content": "x" * 100}] + [{"delta": [[0, 100]]}] * 10)
    with pytest.raises(ArchiveRefused, match="more than 1,000 characters of text in all"):
        import_archive(raw=raw, owner=owner)


def test_a_document_at_its_limit_saved_twenty_thousand_times_is_within_what_an_import_rebuilds(settings):
    """A thread's own export must come back: the rebuilt-text limit is sized
    for the longest document saved as often as people do (docs/adr/0123)."""
    from workspace import archive as workspace_archive

    assert workspace_archive.MAX_REVISION_CHARS >= settings.HAICO_DOCUMENT_MAX_CHARS * 20_000


def test_an_archive_round_trip_keeps_every_revision_of_text_as_people_write_it(thread, owner):
    from tests.support.unicode_text import FAMILY, big_document
    from workspace.selectors import document_version_text

    text = big_document(120_000)
    texts = [document_save(thread=thread, title="Rapport 🇫🇷 会议", content=text).document.content]
    for n in range(40):
        text = text.replace(f"{n}. ", f"{n}. 🇯🇵{n}\u0301 ", 1)
        if n % 5 == 0:
            text = text.replace("\u2028", "\n", 1) + f"\nتم {n} ✓\t{FAMILY}"
        texts.append(document_save(thread=thread, content=text).document.content)
    imported = import_archive(raw=archive_bytes(thread), owner=owner)
    got = [document_version_text(thread=imported, version=v)[1] for v in range(1, imported.document.version + 1)]
    assert got == texts
    assert imported.document.title == "Rapport 🇫🇷 会议"


def test_which_version_a_restore_brought_back_travels_in_an_archive_and_a_branch(thread, owner):
    from conversations.turns.slot import turn_begin, turn_finish
    from workspace.models import DocumentRevision
    from workspace.services.document import document_restore

    document_save(thread=thread, title="Notes", content="One.\n", author="person", person=owner)
    document_save(thread=thread, content="Two.\n", base_version=1, author="person", person=owner)
    document_restore(thread=thread, version=1, base_version=2, person=owner)
    turn_begin(thread=Thread.objects.get(pk=thread.pk), user_message="next", person=owner)
    turn_finish(thread=thread, turn_index=1)

    def restored(of):
        revisions = DocumentRevision.objects.filter(document__thread=of).order_by("version")
        return list(revisions.values_list("restored_from", flat=True))

    thread = Thread.objects.get(pk=thread.pk)
    archive = thread_archive(thread)
    assert [r["restored"] for r in archive["workspace"]["document"]["revisions"]] == [None, None, 1]
    assert restored(import_archive(raw=archive_bytes(thread), owner=owner)) == [None, None, 1]
    assert restored(fork_thread(source=thread, turn_index=1, user=owner)) == [None, None, 1]
    # An archive from before restores were recorded has none: each reads as a plain save.
    for row in archive["workspace"]["document"]["revisions"]:
        del row["restored"]
    assert restored(import_archive(raw=json.dumps(archive).encode(), owner=owner)) == [None, None, None]


@pytest.mark.parametrize(
    "value, message",
    [
        (1, "workspace.document.revisions[0].restored: expected a whole number from 0 to 0."),
        ("1", "workspace.document.revisions[0].restored: expected a whole number from 0 to 0."),
        (-1, "workspace.document.revisions[0].restored: expected a whole number from 0 to 0."),
    ],
)
def test_a_restore_of_a_version_not_before_its_own_is_refused_where_it_is(thread, owner, value, message):
    raw = _mutated(_valid_archive(thread), ("workspace", "document", "revisions", 0, "restored"), value)
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=raw, owner=owner)
    assert message in refused.value.message
    assert database_rows() == before


def _long_document_archive(thread, *, revisions: int, chars: int) -> tuple[dict, list[str]]:
    """An archive of one document near `chars` characters autosaved
    `revisions` times, a word typed at each save, carried as deltas as an
    export writes them: the archive and every text, in order."""
    words = [f"word{n % 991} " for n in range(chars // 8)]
    text = "".join(words)[:chars]
    texts, rows = [text], [{"version": 1, "title": "Report", "content": text}]
    for version in range(2, revisions + 1):
        at = (version * 7_919) % len(text)
        typed = f"é{version}🌍 "
        rows.append({"version": version, "title": "Report", "delta": [[0, at], typed, [at, len(text) - at]]})
        text = text[:at] + typed + text[at:]
        texts.append(text)
    archive = _valid_archive(thread)
    at = "2025-01-01T00:00:00+00:00"
    archive["workspace"]["document"].update(
        version=revisions,
        content=text,
        revisions=[{**row, "author": "person", "turn": 0, "at": at} for row in rows],
    )
    return archive, texts


def test_a_long_documents_many_autosaves_are_imported_in_few_parts_and_come_back_exactly(thread, owner, monkeypatch):
    """Each autosave of a 190 000-character document is a small delta: a part
    of the import holds many of them, not the two its rebuilt length would
    allow, and each part starts from the text the part before left rather
    than rebuilding it (docs/adr/0123)."""
    from workspace import content_store

    archive, texts = _long_document_archive(thread, revisions=240, chars=190_000)
    parsed = archive_module.parse_archive(archive)
    document_parts = [
        part
        for part in workspace_restore_parts(thread=thread, workspace=parsed["workspace"])
        if part.func.__name__ == "document_revisions_restore"
    ]
    assert len(document_parts) <= 6  # was 120: two revisions of 190 000 characters a part

    monkeypatch.setattr(archive_module, "IMPORT_PAUSE_SECONDS", 0)
    reads = []
    real_read = content_store.read_text
    monkeypatch.setattr(content_store, "read_text", lambda model, blob: reads.append(blob.pk) or real_read(model, blob))
    imported = import_archive(raw=json.dumps(archive, ensure_ascii=False).encode(), owner=owner)
    assert reads == []  # no part rebuilt its starting text from a keyframe
    monkeypatch.undo()
    back = _imported_texts(imported)
    assert len(back) == 240 and all(a.encode() == b.encode() for a, b in zip(back, texts, strict=True))


def test_a_part_that_does_not_start_where_the_one_before_ended_reads_its_start_back(thread, owner):
    """What a part carries is used only while it is still the newest revision's
    text: a part rolled back (an import given up) leaves it behind."""
    from workspace.models import Document, DocumentRevision
    from workspace.services import archive as workspace_archive
    from workspace.services.archive import document_revisions_restore

    archive, texts = _long_document_archive(thread, revisions=6, chars=5_000)
    rows = archive_module.parse_archive(archive)["workspace"]["document"]["revisions"]
    fresh = archive_module._begin(new_id=uuid.uuid4(), owner=owner, title="Notes", parsed=archive_module.parse_archive(archive))
    Document.objects.create(thread=fresh, title="Report", content=texts[-1], version=6)
    document_revisions_restore(thread=fresh, rows=rows[:3])
    older = DocumentRevision.objects.get(document__thread=fresh, version=2).body
    stale = workspace_archive._Carried(body=older, text="not the text before")
    document_revisions_restore(thread=fresh, rows=rows[3:], carried=stale)
    assert _imported_texts(Thread.objects.get(pk=fresh.pk)) == texts


def test_an_artifact_of_a_type_this_server_does_not_know_yet_imports(thread, owner):
    """A newer server's type is a name: it comes in and shows as its JSON (the centre panel's fallback)."""
    from workspace.models import Artifact

    archive = _valid_archive(thread)
    archive["workspace"]["artifacts"] = [
        {"artifact_type": "timeline_v2", "title": "Plan", "payload": {"k": 1}, "turn": 0, "at": "2025-01-01T00:00:00+00:00"}
    ]
    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    assert list(Artifact.objects.filter(thread=imported).values_list("artifact_type", flat=True)) == ["timeline_v2"]


@pytest.mark.parametrize(
    "where, message",
    [
        ("workspace", "workspace.artifacts[0].payload: holds a number too large to store"),
        ("transcript", "transcript.messages[0]: holds a number too large to store"),
    ],
)
def test_a_number_too_large_for_a_float_is_refused_where_it_is(thread, owner, where, message):
    """1e400 is valid JSON, read as infinity, which the database does not hold: the import said "Try again"."""
    archive = _valid_archive(thread)
    if where == "workspace":
        archive["workspace"]["artifacts"] = [
            {"artifact_type": "bar_chart", "title": "Big", "payload": {"data": [{"name": "a", "value": 5}]}, "turn": 0}
        ]
    else:
        archive["transcript"]["messages"] = messages_to_dict([HumanMessage(content="a", additional_kwargs={"n": 5})])
    raw = json.dumps(archive).replace('"value": 5}', '"value": 1e400}').replace('"n": 5}', '"n": 1e400}')
    assert "1e400" in raw
    before = database_rows()
    with pytest.raises(ArchiveRefused) as refused:
        import_archive(raw=raw.encode(), owner=owner)
    assert refused.value.message.startswith(message)
    assert database_rows() == before


def test_an_archive_names_its_catalogue_models_and_another_server_maps_them_by_name_or_falls_back(owner, thread, settings):
    """A `catalogue:<id>` key is one server's row id: the archive names the
    provider and the model too. Imported where that id is another model,
    the thread's model and its turns' follow the names; where no model has
    those names, the owner's default applies and the selector shows it."""
    from agent import catalogue
    from agent.models import CatalogueModel, Provider
    from conversations.chat import chosen_model

    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "", ""
    lab = Provider.objects.create(name="Lab", base_url="http://127.0.0.1:9/v1", api_key="sk-lab")
    other = Provider.objects.create(name="Other", base_url="http://127.0.0.1:9/v2", api_key="sk-other")
    first = CatalogueModel.objects.create(provider=other, name="other-small", label="Small")
    big = CatalogueModel.objects.create(provider=lab, name="lab-big", label="Big")
    Thread.objects.filter(pk=thread.pk).update(chat_model=f"catalogue:{big.pk}", turn_index=1)
    thread.refresh_from_db()
    Turn.objects.create(thread=thread, index=1, user_message="hi", model_name=f"catalogue:{big.pk}", status="complete")
    archive = thread_archive(thread)
    assert archive["thread"]["models"] == [{"key": f"catalogue:{big.pk}", "provider": "Lab", "model": "lab-big"}]

    # "Another server": the id now names another provider's model, and Lab's lab-big has another id.
    CatalogueModel.objects.filter(pk=big.pk).delete()
    moved = CatalogueModel.objects.create(provider=lab, name="lab-big", label="Big")
    CatalogueModel.objects.filter(pk=first.pk).update(id=big.pk)
    imported = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    assert imported.chat_model == f"catalogue:{moved.pk}"
    assert Turn.objects.get(thread=imported, index=1).model_name == f"catalogue:{moved.pk}"

    # No model of those names here: none is kept, and the default shows.
    CatalogueModel.objects.filter(pk=moved.pk).delete()
    fallen = import_archive(raw=json.dumps(archive).encode(), owner=owner)
    assert fallen.chat_model == "" and Turn.objects.get(thread=fallen, index=1).model_name == ""
    models = catalogue.choices_for(owner)
    assert chosen_model(fallen, models) == models[0].key == f"catalogue:{big.pk}"


def test_an_archives_model_names_are_checked_like_the_rest(owner, thread):
    archive = thread_archive(thread)
    for bad in ([{"key": "catalogue:1"}], [{"key": "catalogue:1", "provider": "x" * 101, "model": "m"}], "Lab"):
        broken = copy.deepcopy(archive)
        broken["thread"]["models"] = bad
        with pytest.raises(ArchiveRefused, match="thread.models"):
            import_archive(raw=json.dumps(broken).encode(), owner=owner)
