"""An agent's rewrite of a long document, at the size people write, in
Chromium: several features at once, as they meet in real use.

The person has a 50 000-character report open in two tabs. The agent reads
the part the prompt does not show (docs/adr/0109), then rewrites the report
40 % shorter, which it asks about first (docs/adr/0017). While the question
waits, the person types in the first paragraph. Approved, the rewrite is
merged with what they typed (docs/adr/0013) and shown in both tabs, the
review lists its changes (docs/adr/0019, 0110), and Undo all puts the cut
text back while keeping the person's words."""

import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import OpenAICompatibleServer

from .helpers import (
    AUTOSAVE_WAIT_MS,
    MODEL,
    TURN_WAIT_MS,
    approval_card,
    document_in_two_tabs,
    document_status,
    document_text,
    long_document,
    model_env,
    send_message,
    type_after,
)

pytestmark = pytest.mark.browser

REPORT = long_document(50_000)
# The last 40 % of the report cut, from a section's heading on, and one sentence reworded.
CUT_AT = REPORT.index("## Section", int(len(REPORT) * 0.6))
SHORTER = REPORT[:CUT_AT].replace("Paragraph 3.2 weighs it.", "Paragraph 3.2 weighs it carefully.")
TYPED_AT = "Paragraph 1.1 of the report says"
TYPED = " (typed while the agent asked)"


def _with_typing(text: str) -> str:
    return text.replace(TYPED_AT, TYPED_AT + TYPED)


def test_a_long_reports_rewrite_asked_about_while_the_person_types_merges_and_is_undone_whole(new_page, start_haico_server):
    with OpenAICompatibleServer(models=[MODEL]) as model_server:
        model_server.script(
            [
                Reply(tool_calls=[tool_call("read_document", "Reading the rest of the report.", start=30_000)]),
                Reply(tool_calls=[tool_call("update_document", "Cutting the report down.", content=SHORTER)]),
                Reply(text="Cut it down."),
            ]
        )
        server = start_haico_server(model_env(model_server))
        page = new_page()
        other = document_in_two_tabs(page, server.url, REPORT)

        send_message(page, "cut it down")
        card = approval_card(page, 1)
        expect(card).to_contain_text("about 40% of its text would be removed")
        expect(card).to_contain_text("Paragraph 3.2 weighs it carefully.")

        type_after(page, TYPED_AT, TYPED)
        expect(document_status(page)).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
        card.get_by_role("button", name="Approve", exact=True).click()
        expect(page.locator("#chat-messages .answer").first).to_have_text("Cut it down.", timeout=TURN_WAIT_MS)
        for tab in (page, other):
            expect(document_text(tab)).to_have_value(_with_typing(SHORTER))

        review = page.get_by_role("region", name="Document").locator("#doc-review")
        expect(review).to_contain_text("2 of 2 changes to review")
        review.get_by_role("button", name="Undo all").click()
        for tab in (page, other):
            expect(document_text(tab)).to_have_value(_with_typing(REPORT), timeout=10_000)
        page.reload()
        expect(document_text(page)).to_have_value(_with_typing(REPORT))
        assert server.query("SELECT content FROM workspace_document") == [(_with_typing(REPORT),)]
