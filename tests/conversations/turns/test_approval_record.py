"""conversations.turns.approval_record: a turn row's approval reads back
from the JSON rows and archives hold, and is written in the same shape."""

from agent.approval_request import ApprovalRequest, DocumentChange
from conversations.turns.approval_record import TurnApproval

# As agent.approvals asks and turns.approval_claims stores it: the document card, answered.
DOCUMENT_ROW = {
    "interrupt_id": "i-1",
    "request": {
        "kind": "document",
        "summary": "Replace the document “Essay”: about 70% of its text would be removed.",
        "details": [],
        "document": {"old": "old text", "new": "new", "old_title": "Essay", "new_title": "Short", "version": 4},
        "call_id": "call-1",
        "reason": "Cutting it down.",
    },
    "decision": "approved",
    "outcome": "overlap",
}
# A plan card still waiting, as an imported archive's turn holds it (no version).
PLAN_ROW = {
    "interrupt_id": "",
    "request": {
        "kind": "plan",
        "summary": "Remove 1 plan step together with 2 sub-steps.",
        "reason": "",
        "details": ["“Research” and its 2 sub-steps"],
        "call_id": "",
    },
}


def test_rows_read_back_and_are_written_in_the_same_shape():
    for row in (DOCUMENT_ROW, PLAN_ROW):
        assert TurnApproval.from_json(row).to_json() == row
    approval = TurnApproval.from_json(DOCUMENT_ROW)
    assert approval.decision == "approved" and approval.outcome == "overlap"
    assert approval.request.document == DocumentChange(old="old text", new="new", old_title="Essay", new_title="Short", version=4)
    assert TurnApproval.from_json(PLAN_ROW).request.details == ("“Research” and its 2 sub-steps",)


def test_a_row_without_a_request_holds_no_approval():
    for row in (None, {}, {"interrupt_id": "i-1"}, {"interrupt_id": "i-1", "request": "text"}, ["x"]):
        assert TurnApproval.from_json(row) is None


def test_a_document_without_a_version_keeps_it_empty():
    document = {"old": "a", "new": "", "old_title": "", "new_title": "", "version": None}
    request = ApprovalRequest.from_json({"kind": "document", "summary": "s", "details": [], "document": document})
    assert request.document.version is None and request.to_json()["document"] == document
