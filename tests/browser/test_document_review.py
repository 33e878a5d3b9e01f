"""Reviewing what an agent turn changed in the document, and asking about a
selection (docs/adr/0019), in Chromium against the real server.

- After a scripted turn rewrites two paragraphs, the Document region lists
  the two changes; Undo on one puts its old text back in the editor, the
  other stays listed, and a reload shows the same review.
- Text selected in the document and sent with "Ask about selection" reaches
  the model as a <selection> in its workspace block.
"""

from playwright.sync_api import expect

from tests.support.fake_model import Reply, tool_call

from .helpers import TURN_WAIT_MS, document_text, model_env, new_thread_for, save_document_now, wait_for_socket

REPORT = "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"
REWRITTEN = REPORT.replace("Intro paragraph.", "An introduction the agent wrote.").replace(
    "Results paragraph.", "Results the agent wrote."
)


def _start(new_page, start_haico_server, model_server, username):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    new_thread_for(page, server.url, username)
    wait_for_socket(page)
    save_document_now(page, REPORT)
    return server, page


def _chat(page):
    return page.get_by_role("region", name="Chat")


def _ask(page, text):
    _chat(page).get_by_role("textbox", name="Message").fill(text)
    _chat(page).get_by_role("button", name="Send").click()


def _changes(page):
    return page.get_by_role("region", name="Document").get_by_role("list", name="Changes").locator(":scope > li")


def test_undo_of_one_of_two_changes_reverts_it_in_the_editor_and_the_review_survives_a_reload(
    new_page, start_haico_server, model_server
):
    model_server.script(
        [
            Reply(tool_calls=[tool_call("update_document", "Rewriting the intro and the results.", content=REWRITTEN)]),
            Reply(text="I rewrote the intro and the results."),
        ]
    )
    server, page = _start(new_page, start_haico_server, model_server, "ida")

    _ask(page, "Rewrite the intro and the results")
    expect(_chat(page).locator(".answer").first).to_have_text("I rewrote the intro and the results.", timeout=TURN_WAIT_MS)
    expect(document_text(page)).to_have_value(REWRITTEN)

    changes = _changes(page)
    expect(changes).to_have_count(2)
    expect(changes.nth(0)).to_contain_text("An introduction the agent wrote.")
    expect(changes.nth(0)).to_contain_text("Intro paragraph.")
    # Marked word by word: "paragraph" removed, "the agent wrote" added.
    expect(changes.nth(1).locator("del")).to_have_text("paragraph")
    expect(changes.nth(1).locator("ins")).to_have_text("the agent wrote")
    review = page.get_by_role("region", name="Document")
    expect(review.get_by_role("button", name="Keep all")).to_be_visible()
    expect(review.get_by_role("button", name="Undo all")).to_be_visible()

    changes.nth(1).get_by_role("button", name="Undo").click()

    reverted = REWRITTEN.replace("Results the agent wrote.", "Results paragraph.")
    expect(document_text(page)).to_have_value(reverted)
    expect(changes).to_have_count(1)
    expect(changes.nth(0)).to_contain_text("An introduction the agent wrote.")
    expect(page.locator("[data-review-message]")).to_have_text("Change undone.")
    # Focus stays in the review, on the change that is left.
    expect(changes.nth(0).get_by_role("button", name="Keep")).to_be_focused()

    page.reload()
    wait_for_socket(page)
    expect(document_text(page)).to_have_value(reverted)
    expect(_changes(page)).to_have_count(1)
    expect(_changes(page).nth(0)).to_contain_text("An introduction the agent wrote.")

    _changes(page).nth(0).get_by_role("button", name="Keep").click()
    expect(page.locator("#doc-review .doc-review-hunks")).to_have_count(0)
    expect(document_text(page)).to_have_value(reverted)
    # The undo is the person's version; the agent's stays in the history.
    authors = [a for (a,) in server.query("SELECT author FROM workspace_documentrevision ORDER BY id")]
    assert authors[-2:] == ["agent", "person"]


def test_asking_about_a_selection_sends_it_to_the_model(new_page, start_haico_server, model_server):
    model_server.script([Reply(text="That paragraph is about the methods.")])
    _server, page = _start(new_page, start_haico_server, model_server, "joan")

    start = REPORT.index("Methods paragraph.")
    document_text(page).evaluate(
        "(el, range) => { el.focus(); el.setSelectionRange(range[0], range[1]); }", [start, start + len("Methods paragraph.")]
    )
    _chat(page).get_by_role("button", name="Ask about selection").click()
    chip = _chat(page).get_by_role("group", name="Selected text")
    expect(chip).to_contain_text("Methods paragraph.")
    _ask(page, "What is this about?")

    expect(_chat(page).locator(".answer").first).to_have_text("That paragraph is about the methods.", timeout=TURN_WAIT_MS)
    expect(chip).to_be_hidden()  # the message is stored: the chip goes with it
    assert (
        f'<selection start="{start}" end="{start + len("Methods paragraph.")}">Methods paragraph.</selection>'
        in model_server.system_prompt(0)
    )


def test_a_selection_can_be_removed_before_sending(new_page, start_haico_server, model_server):
    model_server.script([Reply(text="Hello.")])
    _server, page = _start(new_page, start_haico_server, model_server, "kate")

    document_text(page).evaluate("(el) => { el.focus(); el.setSelectionRange(2, 8); }")
    _chat(page).get_by_role("button", name="Ask about selection").click()
    chip = _chat(page).get_by_role("group", name="Selected text")
    expect(chip).to_contain_text("Report")
    chip.get_by_role("button", name="Remove the selection").click()
    expect(chip).to_be_hidden()
    _ask(page, "Hi")

    expect(_chat(page).locator(".answer").first).to_have_text("Hello.", timeout=TURN_WAIT_MS)
    assert "</selection>" not in model_server.system_prompt(0)


def test_after_an_undo_the_tab_shows_the_next_turns_review_and_another_tabs_answers(new_page, start_haico_server, model_server):
    """The answer to this tab's Undo replaces the button that asked; the tab
    must still take the reviews pushed after it: another tab's Keep, and the
    next turn's changes."""
    model_server.script(
        [
            Reply(tool_calls=[tool_call("update_document", "Rewriting the intro and the results.", content=REWRITTEN)]),
            Reply(text="Rewritten."),
            Reply(
                tool_calls=[
                    tool_call(
                        "replace_in_document",
                        "Tightening the methods.",
                        old_text="Methods paragraph.",
                        new_text="Methods, tightened.",
                    )
                ]
            ),
            Reply(text="Tightened."),
        ]
    )
    _server, page = _start(new_page, start_haico_server, model_server, "ada")
    other = page.context.new_page()
    other.goto(page.url)
    wait_for_socket(other)
    _ask(page, "Rewrite the intro and the results")
    expect(_chat(page).locator(".answer").first).to_have_text("Rewritten.", timeout=TURN_WAIT_MS)
    expect(_changes(page)).to_have_count(2)
    expect(_changes(other)).to_have_count(2)

    _changes(page).nth(0).get_by_role("button", name="Undo").click()
    expect(_changes(page)).to_have_count(1)
    _changes(other).nth(0).get_by_role("button", name="Keep").click()
    expect(page.locator("#doc-review .doc-review-hunks")).to_have_count(0)

    _ask(page, "Tighten the methods")
    expect(_chat(page).locator(".answer").nth(1)).to_have_text("Tightened.", timeout=TURN_WAIT_MS)
    expect(page.locator("#doc-review")).to_have_attribute("data-review-turn", "2")
    expect(_changes(page)).to_have_count(1)
    expect(_changes(page).nth(0)).to_contain_text("tightened")
