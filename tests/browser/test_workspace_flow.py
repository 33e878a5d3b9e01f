"""Issue 2 end to end in Chromium: a person works on every shared surface of
a thread, reloads, and finds everything as they left it."""

import re

from playwright.sync_api import Page, expect

from .helpers import new_thread_for, open_add_form, sign_up_quickly, step_action, step_menu_item, thread_id_from

AUTOSAVE_WAIT_MS = 8_000  # 1.5 s debounce plus the request, with headroom for a busy CI box


def plan_rows(page: Page) -> list[tuple[str, str, bool]]:
    """(number, text, checked) for every visible plan row, in order."""
    tree = page.get_by_role("list", name="Plan steps")
    rows = []
    for step in tree.locator(":scope > li").all():
        number = step.locator(".edit-view .step-number").inner_text().strip()
        text = step.locator(".step-text").inner_text().strip()
        checked = step.get_by_role("checkbox").is_checked()
        rows.append((number, text, checked))
    return rows


def expect_plan(page: Page, expected: list[tuple[str, str, bool]]) -> None:
    # The plan panel is swapped by htmx: wait for the numbers to settle, then compare everything.
    tree = page.get_by_role("list", name="Plan steps")
    expect(tree.locator(".edit-view .step-number")).to_have_text([n for n, _, _ in expected])
    expect(tree.locator(".step-text")).to_have_text([t for _, t, _ in expected])
    assert plan_rows(page) == expected


def add_preference(page: Page, title: str, detail: str, kind: str) -> None:
    prefs = page.get_by_role("region", name="Preferences")
    form = open_add_form(page, "Preferences", "Add preference")
    form.get_by_label("Preference title").fill(title)
    form.get_by_label("Preference detail").fill(detail)
    form.get_by_label("Kind").select_option(kind)
    form.get_by_role("button", name="Add").click()
    expect(prefs.get_by_role("list", name=f"{kind.capitalize()} preferences")).to_contain_text(title)


def preference_item(page: Page, kind: str, title: str):
    return (
        page.get_by_role("region", name="Preferences")
        .get_by_role("list", name=f"{kind} preferences")
        .get_by_role("listitem")
        .filter(has_text=title)
    )


def test_person_builds_a_workspace_and_finds_it_intact_after_reload(owner_workspace, haico_server):
    page, url = owner_workspace
    thread_id = thread_id_from(url).replace("-", "")

    # --- Preferences: one hard, one soft; lock the hard one. Hard is listed first.
    add_preference(page, "Cite every figure", "Peer-reviewed sources only", "soft")
    add_preference(page, "Peer-reviewed sources", "No blogs", "hard")
    prefs = page.get_by_role("region", name="Preferences")
    expect(prefs.locator(".pref-title")).to_have_text(["Peer-reviewed sources", "Cite every figure"])

    hard = preference_item(page, "Hard", "Peer-reviewed sources")
    hard.get_by_role("toolbar", name="Actions for preference Peer-reviewed sources").get_by_role("button", name="Lock").click()
    # Locked, the button says what the next click does, to the eye and by its name.
    expect(
        hard.get_by_role("toolbar", name="Actions for preference Peer-reviewed sources").get_by_role("button", name="Unlock")
    ).to_have_text("Unlock")
    hard = preference_item(page, "Hard", "Peer-reviewed sources")
    expect(
        hard.get_by_role("toolbar", name="Actions for preference Peer-reviewed sources").get_by_role(
            "button", name="Lock", exact=True
        )
    ).to_have_count(0)
    expect(hard.get_by_text("Locked", exact=True)).to_be_visible()
    expect(preference_item(page, "Soft", "Cite every figure").get_by_text("Locked", exact=True)).to_have_count(0)

    # --- Objective: edit inline, replacing the standing objective.
    planning = page.get_by_role("region", name="Planning")
    expect(planning.get_by_text("No objective yet")).to_be_visible()
    planning.get_by_role("button", name="Edit objective").click()
    planning.get_by_role("textbox", name="Objective").fill("A literature review of soil carbon studies")
    planning.locator("#panel-objective").get_by_role("button", name="Save").click()
    expect(planning.locator(".objective-text")).to_have_text("A literature review of soil carbon studies")
    expect(planning.get_by_text("No objective yet")).to_have_count(0)

    # --- Plan: two steps, a sub-step, indent and outdent, check one.
    add_step = open_add_form(page, "Planning", "Add step")
    add_step.get_by_role("textbox", name="New step").fill("Gather sources")
    add_step.get_by_role("button", name="Add step").click()
    expect_plan(page, [("1", "Gather sources", False)])
    add_step.get_by_role("textbox", name="New step").fill("Write the draft")
    add_step.get_by_role("button", name="Add step").click()
    expect_plan(page, [("1", "Gather sources", False), ("2", "Write the draft", False)])

    step_action(page, "1", "Add sub-step")
    planning.get_by_role("textbox", name="New sub-step of step 1").fill("Search the library")
    planning.get_by_role("textbox", name="New sub-step of step 1").press("Enter")
    expect_plan(page, [("1", "Gather sources", False), ("1.1", "Search the library", False), ("2", "Write the draft", False)])

    # Indent moves "Write the draft" under step 1; outdent brings it back.
    step_action(page, "2", "Indent")
    expect_plan(page, [("1", "Gather sources", False), ("1.1", "Search the library", False), ("1.2", "Write the draft", False)])
    step_action(page, "1.2", "Outdent")
    expect_plan(page, [("1", "Gather sources", False), ("1.1", "Search the library", False), ("2", "Write the draft", False)])
    # The first step cannot be indented (it has no previous sibling).
    expect(step_menu_item(page, "1", "Indent")).to_be_disabled()
    page.keyboard.press("Escape")
    expect(page.get_by_role("menu", name="Step actions")).to_be_hidden()

    planning.get_by_role("checkbox", name="Done: step 1.1").check()
    expect(planning.get_by_role("checkbox", name="Done: step 1.1")).to_be_checked()
    expect(planning.get_by_text("1/3 done")).to_be_visible()

    # --- Document: type, and it saves itself after the debounce.
    document = page.get_by_role("region", name="Document")
    document.get_by_role("textbox", name="Document title").fill("Soil carbon review")
    body = document.get_by_role("textbox", name="Document text")
    body.click()
    body.press_sequentially("# Findings\n\nCover crops raise **soil carbon**.", delay=5)
    status = document.locator("[data-doc-status]")
    expect(status).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
    # The rendered preview shows real markdown (a heading, bold text).
    expect(document.get_by_role("heading", name="Findings")).to_be_visible()
    expect(document.locator("#doc-preview strong")).to_have_text("soil carbon")

    # --- The database holds what the person sees.
    assert haico_server.query(
        "SELECT title, kind, locked FROM workspace_preference WHERE thread_id = ? ORDER BY title", (thread_id,)
    ) == [("Cite every figure", "soft", 0), ("Peer-reviewed sources", "hard", 1)]
    assert haico_server.query(
        "SELECT text, depth, done FROM workspace_todo WHERE thread_id = ? ORDER BY position", (thread_id,)
    ) == [("Gather sources", 0, 0), ("Search the library", 1, 1), ("Write the draft", 0, 0)]
    assert haico_server.query("SELECT text FROM workspace_objective WHERE thread_id = ?", (thread_id,)) == [
        ("A literature review of soil carbon studies",)
    ]
    assert haico_server.query("SELECT title, content FROM workspace_document WHERE thread_id = ?", (thread_id,)) == [
        ("Soil carbon review", "# Findings\n\nCover crops raise **soil carbon**.")
    ]

    # --- Reload: everything is as it was left.
    page.reload()
    prefs = page.get_by_role("region", name="Preferences")
    expect(prefs.locator(".pref-title")).to_have_text(["Peer-reviewed sources", "Cite every figure"])
    hard = preference_item(page, "Hard", "Peer-reviewed sources")
    expect(hard.get_by_text("Locked", exact=True)).to_be_visible()
    expect(
        hard.get_by_role("toolbar", name="Actions for preference Peer-reviewed sources").get_by_role("button", name="Unlock")
    ).to_have_text("Unlock")
    expect(hard).to_contain_text("No blogs")
    expect(preference_item(page, "Soft", "Cite every figure").get_by_text("Locked", exact=True)).to_have_count(0)

    planning = page.get_by_role("region", name="Planning")
    expect(planning.locator(".objective-text")).to_have_text("A literature review of soil carbon studies")
    expect_plan(page, [("1", "Gather sources", False), ("1.1", "Search the library", True), ("2", "Write the draft", False)])

    document = page.get_by_role("region", name="Document")
    expect(document.get_by_role("textbox", name="Document title")).to_have_value("Soil carbon review")
    expect(document.get_by_role("textbox", name="Document text")).to_have_value(
        "# Findings\n\nCover crops raise **soil carbon**."
    )
    expect(document.locator("[data-doc-status]")).to_have_text("Saved")
    expect(document.get_by_role("heading", name="Findings")).to_be_visible()
    expect(page).to_have_title(re.compile("HAICO"))


def test_another_person_cannot_open_the_workspace_even_after_it_has_content(new_page, haico_server):
    owner_page = new_page()
    url = new_thread_for(owner_page, haico_server.url, "ada")
    add_preference(owner_page, "Secret preference", "", "hard")

    intruder = new_page()
    sign_up_quickly(intruder, haico_server.url, "mallory")
    response = intruder.goto(url)

    assert response.status == 404
    expect(intruder.get_by_text("Secret preference")).to_have_count(0)
    # Nor can they write to it: with a valid session and CSRF token of their
    # own, the add endpoint still answers 404 and nothing changes.
    intruder.goto(f"{haico_server.url}/threads/")
    csrf = next(c["value"] for c in intruder.context.cookies() if c["name"] == "csrftoken")
    answer = intruder.request.post(
        f"{url}preferences/add/",
        form={"title": "Injected", "kind": "soft"},
        headers={"X-CSRFToken": csrf, "Referer": f"{haico_server.url}/threads/"},
    )
    assert answer.status == 404
    assert haico_server.query("SELECT title FROM workspace_preference") == [("Secret preference",)]
