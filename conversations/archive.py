"""A whole thread as one JSON archive, and an archive imported as a new
thread of the person importing it (docs/adr/0025).

The archive holds the workspace (workspace.archive), the transcript (the
checkpointer's messages and the turn rows the chat shows) and the thread's
branch links. Importing checks everything first (nothing is written for a
refused archive), then writes in two steps because the checkpointer is not
in the database transaction: the history into a fresh checkpointer thread,
then every row in one transaction; a failure in the second removes the
first. A branch link to a parent thread is kept when the importer owns that
thread (an archive taken and brought back on the same server); links to
threads that are not theirs are left out.
"""

from __future__ import annotations

import json
import logging
import uuid

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)

from agent.history import read_messages
from agent.seeding import (
    HistoryNotSplittable,
    delete_history,
    history_prefix,
    seed_history,
)
from workspace.archive import (
    MESSAGE_MAX_CHARS,
    ArchiveRefused,
    Fields,
    check_text,
    parse_workspace,
    workspace_section,
)
from workspace.errors import InvalidInput
from workspace.models import Thread
from workspace.services.archive import workspace_restore

from .models import BranchLink, Turn
from .services import THREAD_TITLE_MAX_CHARS, clean_title

logger = logging.getLogger("haico.conversations.archive")

ARCHIVE_FORMAT = "haico.thread"
ARCHIVE_VERSION = 1
MAX_TURNS = 5_000
MAX_MESSAGES = 50_000
MESSAGE_TYPES = {"human": HumanMessage, "ai": AIMessage, "tool": ToolMessage}
TURN_STATUSES = {choice for choice, _ in Turn.Status.choices}
IMPORT_FAILED = "The archive could not be imported; nothing was created. Try again."


# -- export --


def thread_archive(thread: Thread) -> dict:
    link = BranchLink.objects.filter(thread=thread, status=BranchLink.Status.ACTIVE).select_related("parent").first()
    children = BranchLink.objects.filter(
        parent=thread, status=BranchLink.Status.ACTIVE, thread__is_deleted=False
    ).select_related("thread").order_by("branch_point_turn", "created_at")
    return {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "exported_at": timezone.now().isoformat(),
        "thread": {"id": str(thread.pk), "title": thread.title, "turns": thread.turn_index,
                   "mode": thread.mode, "chat_model": thread.chat_model, "created_at": thread.created_at.isoformat()},
        "workspace": workspace_section(thread),
        "transcript": {
            "turns": [
                {
                    "index": t.index, "user_message": t.user_message, "model": t.model_name, "status": t.status,
                    "answer": t.answer, "cut_off": t.cut_off, "notice": t.notice, "retry_of": t.retry_of,
                    "started_at": t.started_at.isoformat(), "ended_at": t.ended_at.isoformat() if t.ended_at else None,
                }
                for t in Turn.objects.filter(thread=thread).order_by("index")
            ],
            "messages": messages_to_dict(read_messages(thread.pk)),
        },
        "branches": {
            "parent": None if link is None else {
                "thread_id": str(link.parent_id), "title": link.parent.title, "at_turn": link.branch_point_turn,
                "reason": link.reason,
            },
            "children": [
                {"thread_id": str(c.thread_id), "title": c.thread.title, "at_turn": c.branch_point_turn}
                for c in children
            ],
        },
    }


def archive_bytes(thread: Thread) -> bytes:
    return json.dumps(thread_archive(thread), ensure_ascii=False, indent=1).encode()


# -- import --


def size_text(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB" if size >= 100_000 else f"{size:,} bytes"


def check_size(size: int) -> None:
    if size > settings.HAICO_ARCHIVE_MAX_BYTES:
        raise ArchiveRefused(
            f"The archive is {size_text(size)}; the limit is {size_text(settings.HAICO_ARCHIVE_MAX_BYTES)}."
        )


def read_archive(raw: bytes) -> dict:
    """The archive's JSON object, or ArchiveRefused saying why not."""
    check_size(len(raw))
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ArchiveRefused("The file is not a HAICO thread archive (it is not UTF-8 text).")
    except (ValueError, RecursionError):
        raise ArchiveRefused("The file is not a HAICO thread archive (it is not valid JSON).")
    if not isinstance(data, dict) or data.get("format") != ARCHIVE_FORMAT:
        raise ArchiveRefused("The file is not a HAICO thread archive.")
    if data.get("version") != ARCHIVE_VERSION:
        raise ArchiveRefused(f"This archive's version ({data.get('version')!r}) cannot be imported here; version {ARCHIVE_VERSION} can.")
    return data


def _messages(items: list, *, turns: int) -> list:
    messages = []
    for n, value in enumerate(items):
        path = f"transcript.messages[{n}]"
        if not isinstance(value, dict) or value.get("type") not in MESSAGE_TYPES or not isinstance(value.get("data"), dict):
            raise ArchiveRefused(f"{path}: expected a user, assistant or tool message.")
        if len(json.dumps(value, ensure_ascii=False)) > MESSAGE_MAX_CHARS:
            raise ArchiveRefused(f"{path}: too large to import.")
        _check_strings(value, path)
        try:
            (message,) = messages_from_dict([value])
        except (ValueError, TypeError, KeyError):  # pydantic errors (ValueError) name internals; the path helps more
            raise ArchiveRefused(f"{path}: not a valid message.")
        messages.append(message)
    try:
        if len(history_prefix(messages, through_turn=turns)) != len(messages):
            raise ArchiveRefused("transcript.messages: holds more turns than the thread has.")
    except HistoryNotSplittable:
        raise ArchiveRefused("transcript.messages: a tool call has no result, so the history cannot be continued.")
    return messages


def _check_strings(value, path: str) -> None:
    if isinstance(value, str):
        check_text(value, path, max_chars=MESSAGE_MAX_CHARS)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key, path)
            _check_strings(item, path)
    elif isinstance(value, list):
        for item in value:
            _check_strings(item, path)


def _turn_rows(items: list, *, turns: int) -> list[dict]:
    rows, seen = [], set()
    for n, value in enumerate(items):
        row = Fields(value, f"transcript.turns[{n}]")
        index = row.number("index", low=1, high=turns)
        if index in seen:
            raise ArchiveRefused(f"transcript.turns[{n}].index: turn {index} appears twice.")
        seen.add(index)
        status = row.choice("status", TURN_STATUSES)
        notice = row.text("notice", max_chars=MESSAGE_MAX_CHARS, optional=True) or ""
        if status == Turn.Status.RUNNING:
            # No server is running it here.
            status, notice = Turn.Status.INTERRUPTED, notice or "Interrupted."
        rows.append({
            "index": index,
            "user_message": row.text("user_message", max_chars=MESSAGE_MAX_CHARS),
            "model_name": row.text("model", max_chars=200, optional=True) or "",
            "status": status,
            "answer": row.text("answer", max_chars=MESSAGE_MAX_CHARS, optional=True) or "",
            "cut_off": row.flag("cut_off"),
            "notice": notice,
            "retry_of": row.number("retry_of", low=1, high=turns, optional=True),
        })
    return rows


def parse_archive(data: dict) -> dict:
    """Every part of the archive checked, as plain data; ArchiveRefused at the first problem."""
    thread = Fields(data.get("thread"), "thread")
    turns = thread.number("turns", low=0, high=MAX_TURNS)
    title = thread.text("title", max_chars=THREAD_TITLE_MAX_CHARS, blank=False)
    transcript = Fields(data.get("transcript"), "transcript")
    branches = Fields(data.get("branches") or {}, "branches")
    parent = branches.obj("parent", optional=True)
    mode = thread.value.get("mode", Thread.Mode.EXECUTE)
    if mode not in Thread.Mode.values:
        raise ArchiveRefused(f"thread.mode: expected one of {', '.join(Thread.Mode.values)}.")
    return {
        "title": title,
        "turns": turns,
        "mode": mode,
        "chat_model": thread.text("chat_model", max_chars=200, optional=True) or "",
        "workspace": parse_workspace(data.get("workspace"), turns=turns),
        "turn_rows": _turn_rows(transcript.items("turns", max_items=MAX_TURNS), turns=turns),
        "messages": _messages(transcript.items("messages", max_items=MAX_MESSAGES), turns=turns),
        "parent": None if parent is None else {
            "thread_id": parent.text("thread_id", max_chars=64),
            "at_turn": parent.number("at_turn", low=0, high=turns),
            "reason": parent.text("reason", max_chars=500, optional=True) or "",
        },
    }


def import_archive(*, raw: bytes, owner: AbstractBaseUser) -> Thread:
    """A new thread of `owner` holding the archive's thread. Raises
    ArchiveRefused (nothing written) for an archive that cannot be imported."""
    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("import_archive writes the checkpointer first; call it outside a transaction")
    parsed = parse_archive(read_archive(raw))
    try:
        title = clean_title(parsed["title"])
    except InvalidInput as exc:
        raise ArchiveRefused(f"thread.title: {exc.message}")
    new_id = uuid.uuid4()
    try:
        seed_history(new_id, parsed["messages"])
        return _write_rows(new_id=new_id, owner=owner, title=title, parsed=parsed)
    except BaseException as exc:
        try:
            delete_history(new_id)
        except Exception:
            logger.exception("could not remove the checkpointer thread of failed import %s", new_id)
        if isinstance(exc, Exception):
            logger.exception("importing an archive as thread %s failed", new_id)
            raise ArchiveRefused(IMPORT_FAILED) from exc
        raise


IMPORTED_ENDING = " (imported)"


def imported_title(title: str, *, owner: AbstractBaseUser) -> str:
    """The archive's title, told apart from a live thread of the owner's with
    the same title (the one it was exported from, say) by "(imported)"."""
    if not Thread.objects.filter(owner=owner, is_deleted=False, title=title).exists():
        return title
    room = THREAD_TITLE_MAX_CHARS - len(IMPORTED_ENDING)
    return (title if len(title) <= room else title[: room - 1].rstrip() + "…") + IMPORTED_ENDING


@transaction.atomic
def _write_rows(*, new_id, owner: AbstractBaseUser, title: str, parsed: dict) -> Thread:
    now = timezone.now()
    title = imported_title(title, owner=owner)
    thread = Thread.objects.create(
        pk=new_id, owner=owner, title=title, turn_index=parsed["turns"], mode=parsed["mode"],
        chat_model=parsed["chat_model"], created_at=now, last_activity_at=now,
    )
    workspace_restore(thread=thread, workspace=parsed["workspace"])
    Turn.objects.bulk_create(Turn(thread=thread, ended_at=now, **row) for row in parsed["turn_rows"])
    parent = parsed["parent"]
    if parent is not None:
        own = Thread.objects.filter(pk=_uuid_or_none(parent["thread_id"]), owner=owner, is_deleted=False).first()
        if own is not None and parent["at_turn"] <= own.turn_index:
            BranchLink.objects.create(
                thread=thread, parent=own, branch_point_turn=parent["at_turn"], status=BranchLink.Status.ACTIVE,
                reason=parent["reason"],
            )
    return thread


def _uuid_or_none(value: str):
    try:
        return uuid.UUID(value)
    except ValueError:
        return None
