"""Every change reaches every open tab, and nothing the person is typing is
destroyed by it (docs/adr/0007), in Chromium against the real server.

- The owner's own edits in one tab arrive in their second tab without a reload.
- An agent turn that adds and ticks plan steps and appends to the document
  leaves an open step edit, half-typed "Add step" text, and the document's
  caret and focus where they were.
"""

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, open_add_form, step_action, wait_for_socket
from .test_workspace_flow import AUTOSAVE_WAIT_MS, add_preference, expect_plan


def add_step(page: Page, text: str) -> None:
    form = open_add_form(page, "Planning", "Add step")
    form.get_by_role("textbox", name="New step").fill(text)
    form.get_by_role("button", name="Add step").click()


def test_the_owners_edits_in_one_tab_appear_in_their_other_tab(owner_workspace, second_tab):
    first, _url = owner_workspace
    second = second_tab

    add_step(first, "Gather sources")
    add_step(first, "Write the draft")
    expect_plan(second, [("1", "Gather sources", False), ("2", "Write the draft", False)])

    second.get_by_role("region", name="Planning").get_by_role("checkbox", name="Done: step 2").check()
    expect(first.get_by_role("region", name="Planning").get_by_role("checkbox", name="Done: step 2")).to_be_checked()
    expect(first.get_by_text("1/2 done")).to_be_visible()

    # A keyboard user on the row's menu in the second tab stays on it while the row changes under it.
    second.get_by_role("region", name="Planning").get_by_role("button", name="Actions for step 2").focus()
    step_action(first, "2", "Indent")
    expect_plan(second, [("1", "Gather sources", False), ("1.1", "Write the draft", True)])
    expect(second.get_by_role("region", name="Planning").get_by_role("button", name="Actions for step 1.1")).to_be_focused()
    # The checklist view follows the tree it is written from.
    second.get_by_role("button", name="Checklist").click()
    expect(second.get_by_label("Plan as a markdown checklist")).to_have_text(
        "- [ ] 1 Gather sources\n  - [x] 1.1 Write the draft"
    )
    second.get_by_role("button", name="Tree").click()

    add_preference(first, "Peer-reviewed sources", "No blogs", "hard")
    prefs = second.get_by_role("region", name="Preferences")
    expect(prefs.get_by_role("list", name="Hard preferences")).to_contain_text("Peer-reviewed sources")
    expect(prefs.locator("#pref-count")).to_have_text("1")
    # Edited in the second tab into a soft one: it moves lists in both.
    prefs.get_by_role("toolbar", name="Actions for preference Peer-reviewed sources").get_by_role("button", name="Edit").click()
    edit = prefs.locator("form.pref-edit")
    expect(edit.get_by_role("textbox", name="Title")).to_have_value("Peer-reviewed sources")
    expect(edit.get_by_role("textbox", name="Detail")).to_have_value("No blogs")
    edit.get_by_role("textbox", name="Title").fill("Peer-reviewed sources only")
    edit.get_by_role("combobox", name="Kind").select_option("soft")
    edit.get_by_role("button", name="Save").click()
    expect(edit).to_have_count(0)
    for page in (first, second):
        soft = page.get_by_role("region", name="Preferences").get_by_role("list", name="Soft preferences")
        expect(soft).to_contain_text("Peer-reviewed sources only")
        expect(page.get_by_role("region", name="Preferences").get_by_role("list", name="Hard preferences")).to_be_hidden()
    first.once("dialog", lambda dialog: dialog.accept())
    first.get_by_role("toolbar", name="Actions for preference Peer-reviewed sources only").get_by_role(
        "button", name="Delete"
    ).click()
    expect(prefs.get_by_text("No preferences yet.")).to_be_visible()
    expect(prefs.locator("#pref-count")).to_have_text("0")

    planning = first.get_by_role("region", name="Planning")
    planning.get_by_role("button", name="Edit objective").click()
    planning.get_by_role("textbox", name="Objective").fill("A review of soil carbon")
    planning.locator("#panel-objective").get_by_role("button", name="Save").click()
    expect(second.locator("#panel-objective .objective-text")).to_have_text("A review of soil carbon")
    expect(second.get_by_text("No objective yet")).to_have_count(0)

    body = first.get_by_role("region", name="Document").get_by_role("textbox", name="Document text")
    body.fill("Typed in the first tab.")
    expect(first.locator("[data-doc-status]")).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
    expect(second.get_by_role("textbox", name="Document text")).to_have_value("Typed in the first tab.")
    # The second tab can save on top of it: it took the new version too.
    second.get_by_role("textbox", name="Document text").fill("Then the second tab.")
    expect(second.locator("[data-doc-status]")).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
    expect(body).to_have_value("Then the second tab.")


AGENT_STEPS = [{"text": "Find three studies", "depth": 0}, {"text": "Compare their methods", "depth": 0}]


@pytest.fixture
def model_server(model_server):
    model_server.script(
        [
            Reply(
                tool_calls=[
                    tool_call("add_todos", "Adding the next steps to the plan.", steps=AGENT_STEPS),
                    tool_call("toggle_todos", "Ticking off the first step.", indices=[1]),
                    tool_call("append_to_document", "Adding a closing line.", text="Added by the agent."),
                ]
            ),
            Reply(text="I extended the plan and the document."),
        ]
    )
    return model_server


def test_an_agent_turn_keeps_an_open_edit_half_typed_text_and_the_caret(new_page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "grace")
    wait_for_socket(page)
    add_step(page, "Gather sources")
    add_step(page, "Write the draft")
    expect_plan(page, [("1", "Gather sources", False), ("2", "Write the draft", False)])
    editor = page.get_by_role("region", name="Document").get_by_role("textbox", name="Document text")
    editor.fill("Intro line.\n")
    expect(page.locator("[data-doc-status]")).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)

    # Mid-work: an open edit of step 2, half a new step, the caret in the document.
    step_action(page, "2", "Edit")
    planning = page.get_by_role("region", name="Planning")
    planning.get_by_role("textbox", name="Text of step 2").fill("Write the final draft")
    open_add_form(page, "Planning", "Add step").get_by_role("textbox", name="New step").fill("Half-typ")
    editor.focus()
    editor.evaluate("el => el.setSelectionRange(5, 5)")

    # The person asks from another tab, so this one keeps its focus.
    other = page.context.new_page()
    other.goto(url)
    wait_for_socket(other)
    other.get_by_role("region", name="Chat").get_by_role("textbox", name="Message").fill("Extend the plan")
    other.get_by_role("region", name="Chat").get_by_role("button", name="Send").click()
    expect(page.locator("#chat-messages .answer").first).to_have_text(
        "I extended the plan and the document.", timeout=TURN_WAIT_MS
    )

    # The agent's changes are there...
    tree = page.get_by_role("list", name="Plan steps")
    expect(tree.locator(":scope > li .edit-view .step-text")).to_have_text(
        ["Gather sources", "Write the draft", "Find three studies", "Compare their methods"]
    )
    expect(planning.get_by_role("checkbox", name="Done: step 1")).to_be_checked()
    # Appended as a paragraph of its own (docs/adr/0116).
    expect(editor).to_have_value("Intro line.\n\nAdded by the agent.")
    # ...and nothing the person had open or typed was touched.
    expect(planning.get_by_role("textbox", name="Text of step 2")).to_have_value("Write the final draft")
    expect(planning.get_by_role("form", name="Add step").get_by_role("textbox", name="New step")).to_have_value("Half-typ")
    assert editor.evaluate("el => document.activeElement === el")
    assert editor.evaluate("el => [el.selectionStart, el.selectionEnd]") == [5, 5]

    # The open edit still saves, onto the step it was opened for.
    planning.get_by_role("textbox", name="Text of step 2").press("Enter")
    expect(tree.locator(":scope > li .edit-view .step-text")).to_have_text(
        ["Gather sources", "Write the final draft", "Find three studies", "Compare their methods"]
    )
