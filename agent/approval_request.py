"""What the person is asked before a hard-to-undo tool call runs
(agent.approvals, docs/adr/0017), as the process passes it around.

Its JSON (`to_json`) is the interrupt's value in the checkpointer and the
"request" of a turn row's approval (conversations.turns.approval_record),
and travels in archives: its shape only grows, so every paused graph,
row and archive written before reads back with `from_json`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from workspace.text import cut_to

from .steps import REASON_MAX_CHARS

# What a request's words may hold. The card shows them, and a thread's
# archive carries them and takes no more back (conversations.archive): a
# request is bounded where it is made (`bounded`), so a thread's own export
# always imports (docs/adr/0017). The agent's reason is one plain sentence,
# at most REASON_MAX_CHARS (a tool refuses a longer one: agent.tools.decorator).
TEXT_MAX_CHARS = 10_000
DETAILS_MAX = 1_000


@dataclass(frozen=True)
class DocumentChange:
    """A replacement of the document, for the card's preview: the text and
    title before and after, and the version the agent wrote from."""

    old: str
    new: str
    old_title: str = ""
    new_title: str = ""
    version: int | None = None

    def to_json(self) -> dict:
        return {
            "old": self.old,
            "new": self.new,
            "old_title": self.old_title,
            "new_title": self.new_title,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, data) -> DocumentChange | None:
        if not isinstance(data, dict):
            return None
        version = data.get("version")
        return cls(
            old=str(data.get("old") or ""),
            new=str(data.get("new") or ""),
            old_title=str(data.get("old_title") or ""),
            new_title=str(data.get("new_title") or ""),
            version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        )


@dataclass(frozen=True)
class ApprovalRequest:
    """`kind` is agent.approvals.DOCUMENT, PLAN or PREFERENCES; `summary`
    and `details` are the card's plain words, `reason` the agent's sentence
    for the call, `call_id` the tool call it asks about."""

    kind: str
    summary: str
    details: tuple[str, ...] = ()
    document: DocumentChange | None = None
    call_id: str = ""
    reason: str = ""
    # A plan or preferences request: the ids of the steps or preferences in
    # the order the model was shown them, which the call's indices name, so
    # the call approved removes what the card listed (docs/adr/0113).
    shown: tuple[int, ...] | None = None
    # The ids of the rows the card lists as removed (a step with its
    # sub-steps): the approved call runs only while it would still remove
    # exactly those (agent.approvals).
    listed: tuple[int, ...] | None = None
    # What those rows said when the card was made (`listed_fingerprint`):
    # the approved call runs only while they still say it.
    listed_as: str = ""

    def to_json(self) -> dict:
        data: dict = {"kind": self.kind, "summary": self.summary, "details": list(self.details)}
        if self.document is not None:
            data["document"] = self.document.to_json()
        if self.shown is not None:
            data["shown"] = list(self.shown)
        if self.listed is not None:
            data["listed"] = list(self.listed)
        if self.listed_as:
            data["listed_as"] = self.listed_as
        data["call_id"] = self.call_id
        data["reason"] = self.reason
        return data

    @classmethod
    def from_json(cls, data) -> ApprovalRequest | None:
        """The request a checkpoint, row or checked archive holds; None when
        it holds none. Only reads what it knows, and never fails."""
        if not isinstance(data, dict):
            return None
        details = data.get("details")
        return cls(
            kind=str(data.get("kind") or ""),
            summary=str(data.get("summary") or ""),
            details=tuple(str(item) for item in details) if isinstance(details, list | tuple) else (),
            document=DocumentChange.from_json(data.get("document")),
            call_id=str(data.get("call_id") or ""),
            reason=str(data.get("reason") or ""),
            shown=_ids(data.get("shown")),
            listed=_ids(data.get("listed")),
            listed_as=str(data.get("listed_as") or ""),
        )


def _ids(value) -> tuple[int, ...] | None:
    """A list of row ids as stored, or None for anything else."""
    if isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        return tuple(value)
    return None


def listed_fingerprint(rows: list[tuple]) -> str:
    """A short digest of what the rows a card lists say (each row a tuple
    of plain values: its id and the fields the card's person judged it by),
    so the card keeps a fixed size however long the rows are."""
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()[:32]


def cut_text(text: str, max_chars: int) -> str:
    """`text`, or its start and a visible mark when it is longer than `max_chars` (mark included)."""
    count = f"{max_chars:,}".replace(",", " ")
    return cut_to(text, max_chars, mark=f"… (cut here: longer than {count} characters)")


def bounded(request: ApprovalRequest) -> ApprovalRequest:
    """`request` with its words within what a card keeps: the summary and each
    detail at most TEXT_MAX_CHARS, the reason REASON_MAX_CHARS, at most
    DETAILS_MAX details (the last saying how many more). Only the words: what
    the approved call does is the call's, and the ids it checks are kept whole."""
    details = tuple(cut_text(item, TEXT_MAX_CHARS) for item in request.details)
    if len(details) > DETAILS_MAX:
        details = (*details[: DETAILS_MAX - 1], f"and {len(details) - DETAILS_MAX + 1} more")
    return replace(
        request,
        summary=cut_text(request.summary, TEXT_MAX_CHARS),
        details=details,
        reason=cut_text(request.reason, REASON_MAX_CHARS),
    )
