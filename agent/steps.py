"""One step of a turn's reasoning trace: the sentence of a tool call
(`action_and_reasoning`) and how the call went, as the person sees it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# The most a tool call's sentence may hold. It is shown to the person (the
# turn's reasoning trace, the activity log entry of an MCP client's call),
# so it is bounded as every other text a person reads is: the tools' schema
# refuses a longer one, saying so to the caller (docs/adr/0052), and the
# trace shows at most this much of one a model sent anyway. The objective's
# limit; one plain sentence is far shorter.
REASON_MAX_CHARS = 1_000


class StepStatus(StrEnum):
    RUNNING = ""  # no result yet
    DONE = "done"
    SKIPPED = "skipped"  # done in part: some targets were left alone
    FAILED = "failed"
    REJECTED = "rejected"  # the person did not approve it (agent.approvals)


STATUSES = frozenset(status.value for status in StepStatus)


@dataclass
class Step:
    text: str
    status: StepStatus = StepStatus.RUNNING
    # Why a failed step failed, in plain words (envelope.step_note), or "".
    note: str = ""

    def to_json(self) -> dict:
        """{"text", "status"} and "note" when there is one."""
        data = {"text": self.text, "status": str(self.status)}
        if self.note:
            data["note"] = self.note
        return data

    @classmethod
    def from_json(cls, data: dict) -> Step:
        status = data.get("status")
        return cls(
            text=str(data.get("text") or ""),
            status=StepStatus(status) if status in STATUSES else StepStatus.RUNNING,
            note=str(data.get("note") or ""),
        )
