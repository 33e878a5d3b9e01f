"""A plan step's edit and add-sub-step forms in Chromium: opened from the
step's menu (built in the browser from the panel's one form template),
saved, cancelled, and kept open with the person's text after a refusal."""

from playwright.sync_api import Page, expect

from .helpers import open_add_form, step_action


def step_texts(page: Page):
    return page.get_by_role("list", name="Plan steps").locator(".step-text")


def test_person_edits_a_step_adds_a_sub_step_and_sees_a_refused_edit(owner_workspace):
    page, _url = owner_workspace
    planning = page.get_by_role("region", name="Planning")
    add_step = open_add_form(page, "Planning", "Add step")
    for text in ("Gather sources", "Write the draft"):
        add_step.get_by_role("textbox", name="New step").fill(text)
        add_step.get_by_role("button", name="Add step").click()
        expect(step_texts(page).last).to_have_text(text)

    # Edit starts from the step's own text; Save changes it.
    step_action(page, "2", "Edit")
    field = planning.get_by_role("textbox", name="Text of step 2")
    expect(field).to_be_focused()
    expect(field).to_have_value("Write the draft")
    field.fill("Write the first draft")
    field.press("Enter")
    expect(step_texts(page)).to_have_text(["Gather sources", "Write the first draft"])

    # Cancel puts the step back as it was.
    step_action(page, "1", "Edit")
    planning.get_by_role("textbox", name="Text of step 1").fill("Something else")
    planning.locator("#panel-plan").get_by_role("button", name="Cancel").click()
    expect(planning.get_by_role("textbox", name="Text of step 1")).to_be_hidden()
    expect(step_texts(page)).to_have_text(["Gather sources", "Write the first draft"])

    # A sub-step goes under its step.
    step_action(page, "2", "Add sub-step")
    child = planning.get_by_role("textbox", name="New sub-step of step 2")
    expect(child).to_have_attribute("placeholder", "Sub-step of 2…")
    child.fill("Introduction")
    child.press("Enter")
    expect(planning.locator(".edit-view .step-number")).to_have_text(["1", "2", "2.1"])
    expect(step_texts(page)).to_have_text(["Gather sources", "Write the first draft", "Introduction"])

    # A refused edit (blank text) stays open, with the message, the
    # person's text kept, and the step unchanged.
    step_action(page, "2.1", "Edit")
    planning.get_by_role("textbox", name="Text of step 2.1").fill("   ")
    planning.get_by_role("textbox", name="Text of step 2.1").press("Enter")
    expect(planning.get_by_role("alert")).to_have_text("Step text cannot be empty.")
    expect(planning.get_by_role("textbox", name="Text of step 2.1")).to_be_visible()
    expect(planning.get_by_role("textbox", name="Text of step 2.1")).to_have_value("   ")
    expect(step_texts(page).last).to_have_text("Introduction")
