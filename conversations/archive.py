"""A whole thread as one JSON archive, and an archive imported as a new
thread of the person importing it (docs/adr/0025, docs/adr/0049).

The archive holds the workspace (workspace.archive), the transcript (the
checkpointer's messages and the turn rows the chat shows) and the thread's
branch links. Importing checks everything first (nothing is written for a
refused archive), then writes the thread hidden, in short transactions, and
shows it only once it is whole (import_archive). Every row keeps the time
the archive gives it. A branch link to a parent thread is kept when the
importer owns that thread (an archive taken and brought back on the same
server); links to threads that are not theirs are left out.

An archive is JSON; one whose JSON is larger than the import takes is sent
xz-compressed, so every exported thread can be imported back
(docs/adr/0100).
"""

from __future__ import annotations

import json
import logging
import lzma
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from agent import catalogue
from agent.answer_cap import answer_max_chars
from agent.approval_request import DETAILS_MAX, TEXT_MAX_CHARS, ApprovalRequest, DocumentChange
from agent.approvals import DOCUMENT, PLAN, PREFERENCES
from agent.history import read_messages
from agent.models import MODEL_NAME_MAX_CHARS, PROVIDER_NAME_MAX_CHARS
from agent.seeding import delete_history, history_prefix, holds_later_turns, seed_history
from workspace import people, write_counts
from workspace.archive import (
    MESSAGE_MAX_CHARS,
    ArchiveRefused,
    Fields,
    check_text,
    check_values,
    parse_workspace,
    person_by,
    workspace_section,
)
from workspace.errors import InvalidInput
from workspace.models import DOCUMENT_TITLE_MAX_CHARS, Thread
from workspace.services import archive as workspace_archive
from workspace.services.archive import workspace_restore_parts

from .faults import IMPORT_HISTORY_WRITTEN, crash_point
from .models import ArchiveImport, BranchLink, Turn
from .services import THREAD_TITLE_MAX_CHARS, clean_title
from .sharing import lock_family, members_copy
from .turns.approval_claims import APPROVED, REJECTED, STOPPED
from .turns.approval_record import TurnApproval, portable_json
from .turns.fragments import APPROVAL_OUTCOMES
from .turns.message_checks import SELECTION_NOTES
from .turns.outcome import AWAITING_EXPORTED

logger = logging.getLogger("haico.conversations.archive")

ARCHIVE_FORMAT = "haico.thread"
# Version 2 carries a document revision as a delta against the one before
# it where it is stored so (docs/adr/0123); version 3 a turn's snapshot's
# document as the version holding its text or a delta against the snapshot
# before, with its key (docs/adr/0161). Archives of versions 1 (every text whole) and 2 are
# still imported.
ARCHIVE_VERSION = 3
ARCHIVE_VERSIONS_READ = (1, 2, 3)
SNAPSHOT_DELTAS_FROM = 3
MAX_TURNS = 5_000
MAX_MESSAGES = 50_000
MESSAGE_TYPES = {"human": HumanMessage, "ai": AIMessage, "tool": ToolMessage}
TURN_STATUSES = {choice for choice, _ in Turn.Status.choices}
APPROVAL_KINDS = {DOCUMENT, PLAN, PREFERENCES}
APPROVAL_DECISIONS = {APPROVED, REJECTED, STOPPED}
# What a card's request is bounded to where it is made (agent.approval_request.bounded).
APPROVAL_DETAILS_MAX = DETAILS_MAX
APPROVAL_TEXT_MAX_CHARS = TEXT_MAX_CHARS
# A full name (first and last, as Django keeps them) or a username.
APPROVAL_NAME_MAX_CHARS = 301
IMPORT_FAILED = "The archive could not be imported; nothing was created. Try again."
# An import writes in transactions of about this long, so nobody else's
# write waits behind it for longer (docs/adr/0049). On SQLite, where a
# writer holds the whole database, it then pauses this long, so a writer
# waiting on the lock (which SQLite retries every 100 ms at most) gets in.
IMPORT_STEP_SECONDS = 0.2
IMPORT_PAUSE_SECONDS = 0.1


def import_stalled_after() -> timedelta:
    """An import not heard from for this long died with its server: the
    same age as any other work a dead server left (HAICO_ABANDONED_AFTER_SECONDS)."""
    return timedelta(seconds=settings.HAICO_ABANDONED_AFTER_SECONDS)


# -- export --


def thread_archive(thread: Thread) -> dict:
    link = BranchLink.objects.filter(thread=thread, status=BranchLink.Status.ACTIVE).select_related("parent").first()
    children = (
        BranchLink.objects.filter(parent=thread, status=BranchLink.Status.ACTIVE, thread__is_deleted=False)
        .select_related("thread")
        .order_by("branch_point_turn", "created_at")
    )
    turns = list(Turn.objects.filter(thread=thread).order_by("index"))
    return {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "exported_at": timezone.now().isoformat(),
        "thread": {
            "id": str(thread.pk),
            "title": thread.title,
            "turns": thread.turn_index,
            "mode": thread.mode,
            "chat_model": thread.chat_model,
            # A catalogue key is this server's row id: what it names, so
            # another server maps it by name (docs/adr/0062).
            "models": catalogue.catalogue_names({thread.chat_model, *(t.model_name for t in turns)}),
            "created_at": thread.created_at.isoformat(),
        },
        "workspace": workspace_section(thread),
        "transcript": {
            "turns": [
                {
                    "index": t.index,
                    "user_message": t.user_message,
                    "model": t.model_name,
                    "status": t.status,
                    "answer": t.answer,
                    "cut_off": t.cut_off,
                    "notice": t.notice,
                    "retry_of": t.retry_of,
                    "mode": t.mode,
                    "selection": t.selection,
                    "selection_note": t.selection_note,
                    "approval": portable_json(t.approval),
                    "started_at": t.started_at.isoformat(),
                    "ended_at": t.ended_at.isoformat() if t.ended_at else None,
                    "by": t.person_username,
                }
                for t in turns
            ],
            "messages": messages_to_dict(read_messages(thread.pk)),
        },
        "branches": {
            "parent": None
            if link is None
            else {
                "thread_id": str(link.parent_id),
                "title": link.parent.title,
                "at_turn": link.branch_point_turn,
                "reason": link.reason,
            },
            "children": [
                {"thread_id": str(c.thread_id), "title": c.thread.title, "at_turn": c.branch_point_turn} for c in children
            ],
        },
    }


def archive_bytes(thread: Thread) -> bytes:
    return json.dumps(thread_archive(thread), ensure_ascii=False, indent=1).encode()


# How every xz file starts (the .xz format's stream header).
XZ_MAGIC = b"\xfd7zXZ\x00"


@dataclass(frozen=True)
class ArchiveFile:
    content: bytes
    compressed: bool  # xz: the JSON alone was over the import's size limit
    # Whether an import on this server takes the file back: its size, and
    # what it unpacks to (`check_size`, `_unpacked`).
    importable: bool = True
    # What an import here would answer to what it holds, when it would
    # refuse more than its size (more turns or rows than it takes).
    refused: str = ""

    @property
    def content_type(self) -> str:
        return "application/x-xz" if self.compressed else "application/json; charset=utf-8"

    @property
    def suffix(self) -> str:
        return ".haico.json.xz" if self.compressed else ".haico.json"


def archive_file(thread: Thread) -> ArchiveFile:
    """The thread's archive as a download: its JSON, or, when that is larger
    than an import takes (a long thread of a long document keeps every
    version whole), the JSON xz-compressed. Versions of one text differ
    little, so xz's dictionary (1 MB at preset 1, more than the longest
    document) finds each in the one before: megabytes become kilobytes.
    Still over the limit, the JSON is compressed again at xz's default
    preset (an 8 MB dictionary finds what is repeated from further back,
    for several times the time and ~94 MB of memory, spent only then). A
    file that is still over, or whose JSON unpacks past what an import
    unpacks, or that the import's own check refuses (more turns, messages
    or rows than it takes: nothing caps them while a thread lives), is not
    `importable`: the view says so before it gives it (docs/adr/0100)."""
    raw = archive_bytes(thread)
    limit = settings.HAICO_ARCHIVE_MAX_BYTES
    fits = len(raw) <= settings.HAICO_ARCHIVE_MAX_UNPACKED_BYTES
    refused = _import_refusal(raw) if fits else ""
    if len(raw) <= limit:
        return ArchiveFile(content=raw, compressed=False, importable=not refused, refused=refused)
    content = lzma.compress(raw, preset=1)
    if len(content) > limit:
        content = lzma.compress(raw, preset=6)
    importable = len(content) <= limit and fits and not refused
    return ArchiveFile(content=content, compressed=True, importable=importable, refused=refused)


def _import_refusal(raw: bytes) -> str:
    """What an import here would refuse in the archive `raw`, checked by the
    import's own reading of it (`parse_archive`, which writes nothing); ""
    when it takes it."""
    try:
        parse_archive(json.loads(raw.decode("utf-8"), parse_constant=_not_json))
    except ArchiveRefused as refusal:
        return refusal.message
    return ""


# -- import --


def size_text(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def check_size(size: int) -> None:
    if size > settings.HAICO_ARCHIVE_MAX_BYTES:
        raise ArchiveRefused(f"The archive is {size_text(size)}; the limit is {size_text(settings.HAICO_ARCHIVE_MAX_BYTES)}.")


def _unpacked(raw: bytes) -> bytes:
    """An xz-compressed archive's JSON, at most HAICO_ARCHIVE_MAX_UNPACKED_BYTES
    of it (a small file can unpack to gigabytes); other files as they are."""
    if not raw.startswith(XZ_MAGIC):
        return raw
    limit = settings.HAICO_ARCHIVE_MAX_UNPACKED_BYTES
    unpacker = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    try:
        unpacked = unpacker.decompress(raw, max_length=limit + 1)
    except lzma.LZMAError as exc:
        raise ArchiveRefused("The file is not a HAICO thread archive (it is a broken xz file).") from exc
    if len(unpacked) > limit:
        raise ArchiveRefused(f"The archive unpacks to more than {size_text(limit)}, the limit.")
    if not unpacker.eof:
        raise ArchiveRefused("The file is not a HAICO thread archive (the xz file is cut short).")
    return unpacked


def read_archive(raw: bytes) -> dict:
    """The archive's JSON object (from its JSON, or the JSON xz-compressed),
    or ArchiveRefused saying why not."""
    check_size(len(raw))
    raw = _unpacked(raw)
    try:
        # NaN and Infinity are Python's extension of JSON; no database stores them.
        data = json.loads(raw.decode("utf-8"), parse_constant=_not_json)
    except UnicodeDecodeError as exc:
        raise ArchiveRefused("The file is not a HAICO thread archive (it is not UTF-8 text).") from exc
    except (ValueError, RecursionError) as exc:
        raise ArchiveRefused("The file is not a HAICO thread archive (it is not valid JSON).") from exc
    if not isinstance(data, dict) or data.get("format") != ARCHIVE_FORMAT:
        raise ArchiveRefused("The file is not a HAICO thread archive.")
    version = data.get("version")
    if type(version) is not int or version not in ARCHIVE_VERSIONS_READ:
        shown = f" ({version})" if type(version) is int else ""
        readable = " and ".join(str(v) for v in ARCHIVE_VERSIONS_READ)
        raise ArchiveRefused(f"This archive's version{shown} cannot be imported here; versions {readable} can.")
    return data


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


# Room past HAICO_ANSWER_MAX_CHARS for the note a cut answer ends with and
# the code fence the cut may close (agent.answer_cap.capped_answer).
CUT_NOTE_ROOM = 200


def answer_max_import_chars() -> int:
    """The longest answer an import takes: MESSAGE_MAX_CHARS, or what this
    server's answer cap lets a turn store where that is more. An operator
    may raise HAICO_ANSWER_MAX_CHARS; a thread exported here then still
    imports here (docs/adr/0100)."""
    return max(MESSAGE_MAX_CHARS, answer_max_chars() + CUT_NOTE_ROOM)


def message_max_json_chars() -> int:
    """One message of the history as JSON: MESSAGE_MAX_CHARS, plus twice what
    a longer answer allowed adds (JSON's escapes, a newline's among them,
    take two characters for one)."""
    return MESSAGE_MAX_CHARS + 2 * (answer_max_import_chars() - MESSAGE_MAX_CHARS)


def _messages(items: list, *, turns: int) -> list:
    messages = []
    json_max, text_max = message_max_json_chars(), answer_max_import_chars()
    for n, value in enumerate(items):
        path = f"transcript.messages[{n}]"
        kind = value.get("type") if isinstance(value, dict) else None
        # Text first: a list or an object cannot be looked up in a dict.
        if not isinstance(kind, str) or kind not in MESSAGE_TYPES or not isinstance(value.get("data"), dict):
            raise ArchiveRefused(f"{path}: expected a user, assistant or tool message.")
        if len(json.dumps(value, ensure_ascii=False)) > json_max:
            raise ArchiveRefused(f"{path}: too large to import.")
        check_values(value, path, max_chars=text_max)
        _check_message_data(Fields(value["data"], f"{path}.data"))
        try:
            (message,) = messages_from_dict([value])
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # pydantic's errors (ValueError) name internals, and LangChain
            # reads some fields before checking them; the path helps more.
            raise ArchiveRefused(f"{path}: not a valid message.") from exc
        messages.append(message)
    if holds_later_turns(messages, through_turn=turns):
        raise ArchiveRefused("transcript.messages: holds more turns than the thread has.")
    # Every imported turn has ended (one running or waiting comes in
    # interrupted: _turn_rows), so a call without a result was cut off: it
    # is completed as the next model call would be sent it.
    return history_prefix(messages, through_turn=turns, ended=True)


def _check_message_data(data: Fields) -> None:
    """The fields LangChain reads before it validates them (messages_from_dict
    would fail on them with an AttributeError, not a message)."""
    for key in ("additional_kwargs", "response_metadata"):
        if data.value.get(key) is not None and not isinstance(data.value[key], dict):
            raise ArchiveRefused(f"{data.at(key)}: expected an object.")
    for key in ("tool_calls", "invalid_tool_calls"):
        for i, call in enumerate(data.items(key, max_items=MAX_MESSAGES)):
            if not isinstance(call, dict):
                raise ArchiveRefused(f"{data.at(key)}[{i}]: expected an object.")
            if key == "tool_calls":
                call = Fields(call, f"{data.at(key)}[{i}]")
                call.text("name", max_chars=MESSAGE_MAX_CHARS)
                call.obj("args")
                call.text("id", max_chars=MESSAGE_MAX_CHARS, optional=True)


def _selection(row: Fields) -> dict | None:
    """A turn's selection ({"start", "end", "text"}), checked; None when the turn has none."""
    value = row.obj("selection", optional=True)
    if value is None:
        return None
    max_doc = settings.HAICO_DOCUMENT_MAX_CHARS
    start = value.number("start", low=0, high=max_doc)
    end = value.number("end", low=start + 1, high=max_doc)
    text = value.text("text", max_chars=max_doc, blank=False)
    if len(text) != end - start:
        raise ArchiveRefused(f"{value.path}.text: {len(text):,} characters, but it spans {end - start:,}.")
    return {"start": start, "end": end, "text": text}


def _approval(row: Fields) -> dict | None:
    """A turn's answered approval (what the card shows, docs/adr/0017),
    rebuilt from its checked parts only; None when the turn asked nothing."""
    value = row.obj("approval", optional=True)
    if value is None:
        return None
    request = value.obj("request")
    details = request.items("details", max_items=APPROVAL_DETAILS_MAX)
    for n, item in enumerate(details):
        if not isinstance(item, str):
            raise ArchiveRefused(f"{request.path}.details[{n}]: expected text.")
        check_text(item, f"{request.path}.details[{n}]", max_chars=APPROVAL_TEXT_MAX_CHARS)
    kind = request.choice("kind", APPROVAL_KINDS)
    summary = request.text("summary", max_chars=APPROVAL_TEXT_MAX_CHARS)
    reason = request.text("reason", max_chars=APPROVAL_TEXT_MAX_CHARS, optional=True) or ""
    call_id = request.text("call_id", max_chars=200, optional=True) or ""
    document = request.obj("document", optional=True)
    change = None
    if document is not None:
        max_doc = settings.HAICO_DOCUMENT_MAX_CHARS
        change = DocumentChange(
            old=document.text("old", max_chars=max_doc),
            new=document.text("new", max_chars=max_doc),
            old_title=document.text("old_title", max_chars=DOCUMENT_TITLE_MAX_CHARS, optional=True) or "",
            new_title=document.text("new_title", max_chars=DOCUMENT_TITLE_MAX_CHARS, optional=True) or "",
            version=document.number("version", low=1, high=10**9, optional=True),
        )
    interrupt_id = value.text("interrupt_id", max_chars=200, optional=True) or ""
    decision = value.choice("decision", APPROVAL_DECISIONS) if value.value.get("decision") is not None else ""
    outcome = value.choice("outcome", set(APPROVAL_OUTCOMES)) if value.value.get("outcome") is not None else ""
    answered_by = value.text("answered_by", max_chars=people.USERNAME_MAX_CHARS, optional=True) or ""
    # The name the card showed, kept as text like the username (docs/adr/0085).
    answered_by_name = value.text("answered_by_name", max_chars=APPROVAL_NAME_MAX_CHARS, optional=True) or ""
    clean = ApprovalRequest(kind=kind, summary=summary, details=tuple(details), document=change, call_id=call_id, reason=reason)
    return TurnApproval(
        interrupt_id=interrupt_id,
        request=clean,
        decision=decision,
        outcome=outcome,
        answered_by=answered_by,
        answered_by_name=answered_by_name,
    ).to_json()


def _turn_rows(items: list, *, turns: int, mode: str) -> list[dict]:
    """`mode`: the thread's, for turns of archives made before turns recorded theirs."""
    rows, seen = [], set()
    answer_max = answer_max_import_chars()
    for n, value in enumerate(items):
        row = Fields(value, f"transcript.turns[{n}]")
        index = row.number("index", low=1, high=turns)
        if index in seen:
            raise ArchiveRefused(f"transcript.turns[{n}].index: turn {index} appears twice.")
        seen.add(index)
        status = row.choice("status", TURN_STATUSES)
        notice = row.text("notice", max_chars=MESSAGE_MAX_CHARS, optional=True) or ""
        if status == Turn.Status.AWAITING:
            # No paused graph came with it to resume: the question can no
            # longer be answered, and its card says "Not answered"
            # (turns.fragments.approval_view).
            status, notice = Turn.Status.INTERRUPTED, notice or AWAITING_EXPORTED
        elif status == Turn.Status.RUNNING:
            # No server is running it here.
            status, notice = Turn.Status.INTERRUPTED, notice or "Interrupted."
        rows.append(
            {
                "index": index,
                "user_message": row.text("user_message", max_chars=MESSAGE_MAX_CHARS),
                "model_name": row.text("model", max_chars=200, optional=True) or "",
                "status": status,
                "answer": row.text("answer", max_chars=answer_max, optional=True) or "",
                "cut_off": row.flag("cut_off"),
                "notice": notice,
                "retry_of": row.number("retry_of", low=1, high=turns, optional=True),
                "mode": row.choice("mode", set(Thread.Mode.values)) if row.value.get("mode") is not None else mode,
                "selection": _selection(row),
                # An older archive has none: its turns went with their selections or said nothing.
                "selection_note": row.choice("selection_note", {"", *SELECTION_NOTES})
                if row.value.get("selection_note") is not None
                else "",
                "approval": _approval(row),
                "started_at": row.time("started_at"),
                "ended_at": row.time("ended_at"),
                "person_username": person_by(row),
            }
        )
    return rows


def _models_named(items: list) -> list[dict]:
    named = []
    for i, item in enumerate(items):
        row = Fields(item, f"thread.models[{i}]")
        named.append(
            {
                "key": row.text("key", max_chars=200, blank=False),
                "provider": row.text("provider", max_chars=PROVIDER_NAME_MAX_CHARS, blank=False),
                "model": row.text("model", max_chars=MODEL_NAME_MAX_CHARS, blank=False),
            }
        )
    return named


def _mapped_models(parsed: dict) -> None:
    """The archive's catalogue keys as this server's: the model of the same
    name at the provider of the same name, else none, so the default
    applies and the Model selector shows it (docs/adr/0062). An older
    archive, naming none, keeps its keys."""
    if not parsed["models"]:
        return
    mapped = catalogue.catalogue_keys_named(parsed["models"])
    parsed["chat_model"] = mapped.get(parsed["chat_model"], parsed["chat_model"])
    for row in parsed["turn_rows"]:
        row["model_name"] = mapped.get(row["model_name"], row["model_name"])


def parse_archive(data: dict) -> dict:
    """Every part of the archive checked, as plain data; ArchiveRefused at the first problem."""
    thread = Fields(data.get("thread"), "thread")
    turns = thread.number("turns", low=0, high=MAX_TURNS)
    title = thread.text("title", max_chars=THREAD_TITLE_MAX_CHARS, blank=False)
    transcript = Fields(data.get("transcript"), "transcript")
    branches = Fields(data.get("branches") or {}, "branches")
    parent = branches.obj("parent", optional=True)
    mode = thread.value.get("mode", Thread.Mode.EXECUTE)
    version = data.get("version")  # read_archive has checked it is one read here
    if mode not in Thread.Mode.values:
        raise ArchiveRefused(f"thread.mode: expected one of {', '.join(Thread.Mode.values)}.")
    return {
        "title": title,
        "turns": turns,
        "mode": mode,
        "chat_model": thread.text("chat_model", max_chars=200, optional=True) or "",
        "models": _models_named(
            thread.items("models", max_items=MAX_TURNS + 1) if thread.value.get("models") is not None else []
        ),
        "created_at": thread.time("created_at"),
        "workspace": parse_workspace(
            data.get("workspace"), turns=turns, snapshot_deltas=type(version) is int and version >= SNAPSHOT_DELTAS_FROM
        ),
        "turn_rows": _turn_rows(transcript.items("turns", max_items=MAX_TURNS), turns=turns, mode=mode),
        "messages": _messages(transcript.items("messages", max_items=MAX_MESSAGES), turns=turns),
        "parent": None
        if parent is None
        else {
            "thread_id": parent.text("thread_id", max_chars=64),
            "at_turn": parent.number("at_turn", low=0, high=turns),
            "reason": parent.text("reason", max_chars=500, optional=True) or "",
        },
    }


def import_archive(*, raw: bytes, owner: AbstractBaseUser) -> Thread:
    """A new thread of `owner` holding the archive's thread. Raises
    ArchiveRefused (nothing written, or what was written removed) for an
    archive that cannot be imported.

    Checked whole first; then written in phases, because the checkpointer
    is not in the database transaction and because one transaction for a
    large archive would hold up everyone else's writes (docs/adr/0049):
    1. the thread, hidden, with an ArchiveImport row saying it is being made;
    2. the checkpointer history;
    3. the rows, in short transactions (IMPORT_STEP_SECONDS each);
    4. the thread shown and the ArchiveImport row removed, in one transaction.
    A failure removes what was written; an import whose server died is
    removed by the turn recovery (discard_abandoned_imports)."""
    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("import_archive writes in phases; call it outside a transaction")
    started = time.monotonic()
    parsed = parse_archive(read_archive(raw))
    _mapped_models(parsed)
    try:
        title = clean_title(parsed["title"])
    except InvalidInput as exc:
        raise ArchiveRefused(f"thread.title: {exc.message}") from exc
    new_id = uuid.uuid4()
    try:
        checked = time.monotonic()
        thread = _begin(new_id=new_id, owner=owner, title=title, parsed=parsed)
        seed_history(new_id, parsed["messages"])
        crash_point(IMPORT_HISTORY_WRITTEN)  # a hidden thread and its history: the recovery removes both
        seeded = time.monotonic()
        parts = workspace_restore_parts(thread=thread, workspace=parsed["workspace"])
        parts += [partial(_turns_restore, thread=thread, rows=rows) for rows in _turn_chunks(parsed["turn_rows"])]
        steps = _write_in_steps(thread_id=new_id, parts=parts)
        _finish(thread_id=new_id, owner=owner, parent=parsed["parent"])
        logger.info(
            "imported a %s archive as thread %s in %.1f s: checked in %.1f s, history in %.1f s, "
            "%d parts in %d transactions in %.1f s",
            size_text(len(raw)),
            new_id,
            time.monotonic() - started,
            checked - started,
            seeded - checked,
            len(parts),
            steps,
            time.monotonic() - seeded,
        )
    except BaseException as exc:
        discard_import(new_id)
        if isinstance(exc, ArchiveRefused):
            # Found where a text was stored (a snapshot's version whose key
            # is not its text's, docs/adr/0161): refused, nothing kept.
            raise
        if isinstance(exc, Exception):
            logger.exception("importing an archive as thread %s failed", new_id)
            raise ArchiveRefused(IMPORT_FAILED) from exc
        raise
    return Thread.objects.get(pk=new_id)


IMPORTED_ENDING = " (imported)"


def imported_title(title: str, *, owner: AbstractBaseUser) -> str:
    """The archive's title, told apart from a live thread of the owner's with
    the same title (the one it was exported from, say) by "(imported)"."""
    if not Thread.objects.filter(owner=owner, is_deleted=False, title=title).exists():
        return title
    room = THREAD_TITLE_MAX_CHARS - len(IMPORTED_ENDING)
    return (title if len(title) <= room else title[: room - 1].rstrip() + "…") + IMPORTED_ENDING


@transaction.atomic
def _begin(*, new_id, owner: AbstractBaseUser, title: str, parsed: dict) -> Thread:
    now = timezone.now()
    title = imported_title(title, owner=owner)
    thread = Thread.objects.create(
        pk=new_id,
        owner=owner,
        title=title,
        turn_index=parsed["turns"],
        mode=parsed["mode"],
        chat_model=parsed["chat_model"],
        created_at=parsed["created_at"] or now,
        last_activity_at=now,
        # Hidden until phase 4: owner-scoped lookups skip deleted threads.
        is_deleted=True,
    )
    ArchiveImport.objects.create(thread=thread, touched_at=now)
    return thread


def _turn_chunks(rows: list[dict], size: int = 200) -> list[list[dict]]:
    return [rows[i : i + size] for i in range(0, len(rows), size)]


@transaction.atomic
def _turns_restore(*, thread: Thread, rows: list[dict]) -> None:
    now = timezone.now()
    Turn.objects.bulk_create(_turn(thread, row, now) for row in rows)


def _turn(thread: Thread, row: dict, now) -> Turn:
    fields = {**row, "started_at": row["started_at"] or now, "ended_at": row["ended_at"] or now}
    fields.update(people.imported(fields.pop("person_username"), importer=thread.owner))
    return Turn(thread=thread, **fields)


def _write_in_steps(*, thread_id, parts: list[Callable[[], None]]) -> int:
    """Run `parts` in order, as many in one transaction as fit in
    IMPORT_STEP_SECONDS, each transaction also saying the import is alive.
    Returns how many transactions it took."""
    position = steps = 0
    while position < len(parts):
        steps += 1
        with transaction.atomic():
            started = time.monotonic()
            while position < len(parts) and time.monotonic() - started < IMPORT_STEP_SECONDS:
                parts[position]()
                position += 1
            if not ArchiveImport.objects.filter(thread_id=thread_id).update(touched_at=timezone.now()):
                raise RuntimeError("the import was given up for dead and removed meanwhile")
        if position < len(parts) and connection.vendor == "sqlite":
            time.sleep(IMPORT_PAUSE_SECONDS)
    return steps


@transaction.atomic
def _finish(*, thread_id, owner: AbstractBaseUser, parent: dict | None) -> None:
    marker = ArchiveImport.objects.select_for_update().filter(thread_id=thread_id).first()
    if marker is None:
        raise RuntimeError("the import was given up for dead and removed meanwhile")
    thread = Thread.objects.get(pk=thread_id)
    if parent is not None:
        # Joining a family joins its people: its map and turn versions link
        # every thread of it for all of them (docs/adr/0084), so the import
        # has the same people as its parent, copied with the family locked
        # as a branch copies them (docs/adr/0120).
        lock_family(owner.pk)
        own = Thread.objects.filter(pk=_uuid_or_none(parent["thread_id"]), owner=owner, is_deleted=False).first()
        if own is not None and parent["at_turn"] <= own.turn_index:
            BranchLink.objects.create(
                thread=thread,
                parent=own,
                branch_point_turn=parent["at_turn"],
                status=BranchLink.Status.ACTIVE,
                reason=parent["reason"],
            )
            members_copy(source=own, to=thread)
    Thread.objects.filter(pk=thread_id).update(is_deleted=False, last_activity_at=timezone.now())
    marker.delete()


def discard_import(thread_id) -> None:
    """Remove an import that did not finish: the thread (its rows go with it)
    and its checkpointer history. A finished import (no ArchiveImport row
    left) is the person's thread and is never touched. Best effort: a
    failure is logged, and the id is never reused."""
    try:
        with transaction.atomic():
            # Its row first, as a plan write locks it (docs/adr/0140).
            write_counts.lock_threads([thread_id])
            blobs = workspace_archive.thread_content_blob_ids(thread_id=thread_id)
            if Thread.objects.filter(pk=thread_id, archive_import__isnull=False).delete()[0]:
                # The texts it stored that no other thread shares (docs/adr/0078).
                workspace_archive.content_blobs_release(blobs)
    except Exception:
        logger.exception("could not remove the rows of failed import %s", thread_id)
    try:
        delete_history(thread_id)
    except Exception:
        logger.exception("could not remove the checkpointer thread of failed import %s", thread_id)


def discard_abandoned_imports(now=None) -> int:
    """Remove every import not heard from for import_stalled_after(); how many."""
    cutoff = (now or timezone.now()) - import_stalled_after()
    abandoned = list(ArchiveImport.objects.filter(touched_at__lt=cutoff).values_list("thread_id", flat=True))
    for thread_id in abandoned:
        discard_import(thread_id)
    return len(abandoned)


def _uuid_or_none(value: str):
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
