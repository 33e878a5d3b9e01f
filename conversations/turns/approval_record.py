"""A turn row's `approval` (conversations.models.Turn, docs/adr/0017): the
interrupt the turn waits on and what the person is asked, then their
decision and, when the approved call could not be applied in full, its
outcome (fragments.APPROVAL_OUTCOMES).

The row, its copies (conversations.branching) and archives hold
`to_json()`; its shape never changes, so every row and archive written
before reads back with `from_json`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent.approval_request import ApprovalRequest

# The person's answers, as the row records them.
APPROVED, REJECTED, STOPPED = "approved", "rejected", "stopped"


@dataclass(frozen=True)
class TurnApproval:
    interrupt_id: str
    request: ApprovalRequest
    # "" while the person has not answered; else turns.approval_claims.APPROVED, REJECTED or STOPPED.
    decision: str = ""
    # "" unless an approved call could not be applied in full: "overlap", "failed" or "partial".
    outcome: str = ""
    # Who answered: their username, and the name the card shows
    # (workspace.people), both as they were then, so a card in a copy or an
    # imported archive says who even where no such user exists (docs/adr/0085).
    answered_by: str = ""
    answered_by_name: str = ""

    def portable(self) -> TurnApproval:
        """The approval as a copy or an archive of the thread holds it:
        without the ids of this thread's rows its request named the model's
        indices by (ApprovalRequest.shown), which mean nothing elsewhere and
        nothing once the call was answered; nor the ids of the rows it
        listed (ApprovalRequest.listed) and what they said."""
        return replace(self, request=replace(self.request, shown=None, listed=None, listed_as=""))

    def to_json(self) -> dict:
        data: dict = {"interrupt_id": self.interrupt_id, "request": self.request.to_json()}
        if self.decision:
            data["decision"] = self.decision
        if self.outcome:
            data["outcome"] = self.outcome
        if self.answered_by:
            data["answered_by"] = self.answered_by
            data["answered_by_name"] = self.answered_by_name or self.answered_by
        return data

    @classmethod
    def from_json(cls, data) -> TurnApproval | None:
        """The approval a row holds; None when it holds none (or no request)."""
        if not isinstance(data, dict):
            return None
        request = ApprovalRequest.from_json(data.get("request"))
        if request is None:
            return None
        return cls(
            interrupt_id=str(data.get("interrupt_id") or ""),
            request=request,
            decision=str(data.get("decision") or ""),
            outcome=str(data.get("outcome") or ""),
            answered_by=_text(data.get("answered_by")),
            answered_by_name=_text(data.get("answered_by_name")) or _text(data.get("answered_by")),
        )


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def portable_json(stored):
    """A turn row's approval as a copy or an archive of the thread holds it
    (TurnApproval.portable); a row holding none it can read goes as it is."""
    approval = TurnApproval.from_json(stored)
    return approval.portable().to_json() if approval is not None else stored
