"""Two editors in Chromium (two browser contexts) on one shared thread: Bea
has a step's Edit form open while Ada renames that step. Ada's name arrives
on Bea's page without touching what Bea typed; Bea's Save is refused with
what the step says now, her text stays in the form, and Save again replaces
Ada's name knowingly (docs/adr/0125)."""

from playwright.sync_api import Page, expect

from .helpers import open_add_form, step_action
from .test_sharing import _person_on, _share

ADAS = "Draft – methods section only, agreed with the supervisor"


def _steps(page: Page):
    return page.get_by_role("list", name="Plan steps").locator(".step-text")


def _edit_field(page: Page, number: str):
    return page.get_by_role("region", name="Planning").get_by_role("textbox", name=f"Text of step {number}")


def test_a_step_edit_form_open_while_another_editor_renames_the_step_does_not_save_over_it(
    owner_workspace, haico_server, new_page
):
    ada, url = owner_workspace
    haico_server.create_user("bea")
    _share(ada, "bea", "Editor")
    ada.keyboard.press("Escape")
    form = open_add_form(ada, "Planning", "Add step")
    for text in ("Collect figures", "Draft", "Cite sources"):
        form.get_by_role("textbox", name="New step").fill(text)
        form.get_by_role("button", name="Add step").click()
        expect(_steps(ada).last).to_have_text(text)

    bea = _person_on(new_page, haico_server, url, "bea")
    expect(_steps(bea)).to_have_text(["Collect figures", "Draft", "Cite sources"])
    step_action(bea, "2", "Edit")
    bea_field = _edit_field(bea, "2")
    expect(bea_field).to_have_value("Draft")
    bea_field.fill("Draft v2")

    # Ada renames the same step; it reaches Bea's page, her typing untouched.
    step_action(ada, "2", "Edit")
    _edit_field(ada, "2").fill(ADAS)
    _edit_field(ada, "2").press("Enter")
    expect(_steps(ada).nth(1)).to_have_text(ADAS)
    expect(_steps(bea).nth(1)).to_have_text(ADAS, use_inner_text=True)
    expect(bea_field).to_have_value("Draft v2")

    # Bea saves the form she had open: refused, with what it says now; her text stays.
    bea_field.press("Enter")
    alert = bea.get_by_role("region", name="Planning").locator("form.step-edit").get_by_role("alert")
    expect(alert).to_contain_text("Someone else changed this step meanwhile")
    expect(alert).to_contain_text(ADAS)
    expect(bea_field).to_be_visible()
    expect(bea_field).to_have_value("Draft v2")
    expect(_steps(ada).nth(1)).to_have_text(ADAS)

    # Saving again, having seen Ada's name, replaces it on both pages.
    bea_field.press("Enter")
    expect(bea_field).to_be_hidden()
    expect(_steps(bea).nth(1)).to_have_text("Draft v2")
    expect(_steps(ada).nth(1)).to_have_text("Draft v2")
