"""The workspace at every width (docs/adr/0022, 0055): the document keeps half a
laptop window, with both rails beside it from 1280 px and one rail chosen by
tabs from 768 to 1279 px; rails collapse and stay so for the person, a phone
gets tabs, add forms open from a compact control, skip links, and the top
bar's thread switcher and rename; the thread list reads on a phone."""

import re

from playwright.sync_api import Page, expect

from .helpers import create_thread, document_text, log_in, new_thread_for, open_add_form, wait_for_socket

LAPTOPS = [(1280, 800), (1440, 900)]
TWO_COLUMNS = [(1024, 768), (800, 1000)]
PHONE = {"width": 390, "height": 844}


def box(locator) -> dict:
    found = locator.bounding_box()
    assert found is not None, f"{locator} is not laid out"
    return found


def inside_window(page: Page, locator) -> bool:
    b, size = box(locator), page.viewport_size
    return (
        b["x"] >= 0
        and b["y"] >= 0
        and b["x"] + b["width"] <= size["width"] + 0.5
        and b["y"] + b["height"] <= size["height"] + 0.5
    )


def rename_from_top_bar(page: Page, title: str) -> None:
    page.get_by_role("banner").get_by_role("button", name="Rename thread").click()
    page.get_by_role("banner").get_by_role("textbox", name="Thread title").fill(title)
    page.get_by_role("banner").get_by_role("textbox", name="Thread title").press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text(title)


def test_the_document_keeps_half_a_laptop_window_with_both_rails_beside_it(owner_workspace):
    page, _url = owner_workspace
    for width, height in LAPTOPS:
        page.set_viewport_size({"width": width, "height": height})
        page.reload()
        document = page.get_by_role("region", name="Document")
        assert box(document)["width"] >= width / 2, (width, box(document))
        assert box(document_text(page))["width"] >= width / 5, (width, box(document_text(page)))
        for region in ("Preferences", "Planning", "Trajectory", "Chat"):
            expect(page.get_by_role("region", name=region)).to_be_visible()
            assert inside_window(page, page.get_by_role("region", name=region)), (width, region)
        assert inside_window(page, page.get_by_role("textbox", name="Message"))
        # One page, no tabs, nothing to scroll sideways or down.
        expect(page.get_by_role("tablist", name="Workspace views")).to_be_hidden()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.evaluate("document.documentElement.scrollHeight") <= height


def test_between_768_and_1279_px_the_document_keeps_its_column_and_tabs_choose_the_rail_beside_it(owner_workspace):
    page, url = owner_workspace
    add = open_add_form(page, "Planning", "Add step")
    for n in range(1, 8):
        add.get_by_role("textbox", name="New step").fill(f"Step {n}")
        add.get_by_role("button", name="Add step").click()
        expect(page.get_by_role("list", name="Plan steps").get_by_role("listitem")).to_have_count(n)
    for width, height in TWO_COLUMNS:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(url)
        document = page.get_by_role("region", name="Document")
        # Half the window stays the document's (docs/adr/0022 still holds), and it is never a tab.
        assert box(document)["width"] >= width / 2, (width, box(document))
        assert inside_window(page, document)
        tabs = page.get_by_role("tablist", name="Workspace views")
        expect(tabs.get_by_role("tab")).to_have_text(["Workspace", "Chat"])
        # The chat first: the rail a turn needs, its message box in the window.
        expect(tabs.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
        for region in ("Trajectory", "Chat"):
            expect(page.get_by_role("region", name=region)).to_be_visible()
            assert inside_window(page, page.get_by_role("region", name=region)), (width, region)
        assert inside_window(page, page.get_by_role("textbox", name="Message"))
        expect(page.get_by_role("region", name="Planning")).to_be_hidden()

        tabs.get_by_role("tab", name="Workspace").click()
        expect(page.get_by_role("region", name="Chat")).to_be_hidden()
        expect(document).to_be_visible()
        planning = page.get_by_role("region", name="Planning")
        for region in ("Preferences", "Planning"):
            expect(page.get_by_role("region", name=region)).to_be_visible()
            assert inside_window(page, page.get_by_role("region", name=region)), (width, region)
        # The plan has room for its steps: at least five of the seven in sight, not one and a half.
        steps = planning.get_by_role("list", name="Plan steps").get_by_role("listitem")
        in_sight = sum(
            1
            for step in steps.all()
            if step.evaluate(
                "el => { const r = el.getBoundingClientRect(), s = el.closest('.scroll, .plan-view, .subpanel') || document.body;"
                " const p = s.getBoundingClientRect(); return r.top >= p.top - 1 && r.bottom <= Math.min(p.bottom, innerHeight) + 1; }"
            )
        )
        assert in_sight >= 5, (width, in_sight)
        # Arrow keys move between the two tabs; a skip link opens the rail it needs.
        page.keyboard.press("ArrowRight")
        expect(tabs.get_by_role("tab", name="Chat")).to_be_focused()
        expect(page.get_by_role("region", name="Chat")).to_be_visible()
        tabs.get_by_role("tab", name="Workspace").click()
        page.get_by_role("link", name="Skip to chat").focus()
        page.keyboard.press("Enter")
        expect(page.get_by_role("textbox", name="Message")).to_be_focused()
        expect(tabs.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.evaluate("document.documentElement.scrollHeight") <= height


def test_a_collapsed_rail_stays_collapsed_after_a_reload_and_on_another_device(new_page, haico_server):
    page = new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    url = new_thread_for(page, haico_server.url, "ada")
    wait_for_socket(page)  # the page's scripts have run: the toggle answers a click
    left = page.get_by_role("button", name="Preferences and Planning rail")
    expect(left).to_have_attribute("aria-expanded", "true")
    narrow_document = box(page.get_by_role("region", name="Document"))["width"]

    left.click()
    expect(left).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_role("region", name="Preferences")).to_be_hidden()
    expect(page.get_by_role("region", name="Planning")).to_be_hidden()
    expect(page.get_by_role("region", name="Chat")).to_be_visible()
    assert box(page.get_by_role("region", name="Document"))["width"] > narrow_document + 150
    page.get_by_role("button", name="Chat rail").click()
    expect(page.get_by_role("region", name="Chat")).to_be_hidden()
    page.wait_for_load_state("networkidle")

    page.reload()
    expect(page.get_by_role("region", name="Preferences")).to_be_hidden()
    expect(page.get_by_role("region", name="Chat")).to_be_hidden()
    expect(page.get_by_role("button", name="Preferences and Planning rail")).to_have_attribute("aria-expanded", "false")

    # Another browser (no local storage in common): the same person's layout.
    other = new_page()
    other.set_viewport_size({"width": 1280, "height": 800})
    log_in(other, haico_server.url, "ada")
    other.goto(url)
    expect(other.get_by_role("region", name="Preferences")).to_be_hidden()
    expect(other.get_by_role("region", name="Chat")).to_be_hidden()
    other.get_by_role("button", name="Chat rail").click()
    expect(other.get_by_role("region", name="Chat")).to_be_visible()
    other.wait_for_load_state("networkidle")
    page.reload()
    expect(page.get_by_role("region", name="Chat")).to_be_visible()
    expect(page.get_by_role("region", name="Preferences")).to_be_hidden()

    # Another person's layout is their own.
    stranger = new_page()
    stranger.set_viewport_size({"width": 1280, "height": 800})
    new_thread_for(stranger, haico_server.url, "bob")
    expect(stranger.get_by_role("region", name="Preferences")).to_be_visible()


def test_a_phone_shows_one_view_at_a_time_behind_tabs(page, haico_server):
    page.set_viewport_size(PHONE)
    new_thread_for(page, haico_server.url, "ada")
    tabs = page.get_by_role("tablist", name="Workspace views")
    expect(tabs.get_by_role("tab")).to_have_text(["Workspace", "Document", "Chat"])
    for tab in tabs.get_by_role("tab").all():
        assert inside_window(page, tab)

    # The document first; the other views are a tap away, not 1 650 px down.
    expect(tabs.get_by_role("tab", name="Document")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("region", name="Document")).to_be_visible()
    expect(page.get_by_role("region", name="Chat")).to_be_hidden()
    assert inside_window(page, page.get_by_role("region", name="Document"))

    tabs.get_by_role("tab", name="Chat").click()
    expect(tabs.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_role("region", name="Document")).to_be_hidden()
    expect(page.get_by_role("region", name="Chat")).to_be_visible()
    assert inside_window(page, page.get_by_role("textbox", name="Message"))
    assert inside_window(page, page.get_by_role("button", name="Send"))

    tabs.get_by_role("tab", name="Workspace").click()
    expect(page.get_by_role("region", name="Chat")).to_be_hidden()
    for region in ("Preferences", "Planning"):
        expect(page.get_by_role("region", name=region)).to_be_visible()
        assert inside_window(page, page.get_by_role("region", name=region))
    add = open_add_form(page, "Planning", "Add step")
    add.get_by_role("textbox", name="New step").fill("Pack the charger")
    add.get_by_role("button", name="Add step").click()
    expect(page.get_by_role("list", name="Plan steps")).to_contain_text("Pack the charger")

    # Arrow keys move between the tabs (one tab stop for the three).
    tabs.get_by_role("tab", name="Workspace").focus()
    page.keyboard.press("ArrowRight")
    expect(tabs.get_by_role("tab", name="Document")).to_be_focused()
    expect(page.get_by_role("region", name="Document")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_add_forms_open_from_a_compact_control_and_a_new_preference_scrolls_into_view(page, haico_server):
    page.set_viewport_size({"width": 1280, "height": 800})
    new_thread_for(page, haico_server.url, "ada")
    prefs = page.get_by_role("region", name="Preferences")
    planning = page.get_by_role("region", name="Planning")
    expect(prefs.get_by_role("form", name="Add preference")).to_be_hidden()
    expect(planning.get_by_role("form", name="Add step")).to_be_hidden()

    toggle = prefs.get_by_role("button", name="Add a preference", exact=True)
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    form = prefs.get_by_role("form", name="Add preference")
    expect(form).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(form.get_by_label("Preference title")).to_be_focused()
    page.keyboard.press("Escape")
    expect(form).to_be_hidden()
    expect(toggle).to_be_focused()

    planning.get_by_role("button", name="Add a step", exact=True).click()
    expect(planning.get_by_role("form", name="Add step")).to_be_visible()
    expect(planning.get_by_role("textbox", name="New step")).to_be_focused()

    form = open_add_form(page, "Preferences", "Add preference")
    soft = prefs.get_by_role("list", name="Soft preferences")
    for n in range(1, 15):
        form.get_by_label("Preference title").fill(f"Preference {n}")
        form.get_by_role("button", name="Add").click()
        expect(soft.get_by_role("listitem")).to_have_count(n)
    newest = soft.get_by_role("listitem").filter(has_text="Preference 14")
    scroller = prefs.locator(".panel-body.scroll")
    page.wait_for_function("el => el.scrollTop > 0", arg=scroller.element_handle())
    expect(newest).to_be_in_viewport()
    row, pane = box(newest), box(scroller)
    assert pane["y"] - 1 <= row["y"] and row["y"] + row["height"] <= pane["y"] + pane["height"] + 1, (row, pane)
    # The form stays open for the next one, and the panels keep their sizes.
    expect(form).to_be_visible()
    assert box(prefs)["height"] < box(planning)["height"]


def test_thread_list_cards_read_on_a_phone(page, haico_server):
    page.set_viewport_size(PHONE)
    new_thread_for(page, haico_server.url, "ada")
    rename_from_top_bar(page, "Quarterly revenue report for the board meeting in March")
    create_thread(page, haico_server.url)
    rename_from_top_bar(page, "Garden")
    page.goto(f"{haico_server.url}/threads/")
    rows = page.get_by_role("list", name="Threads").get_by_role("listitem")
    expect(rows).to_have_count(2)
    for row in rows.all():
        card = box(row)
        title = box(row.locator("a.thread-title"))
        assert title["width"] >= card["width"] * 0.6 or title["height"] > 30, (card, title)
        delete = box(row.get_by_role("button", name=re.compile("^Delete thread")))
        rename = box(row.get_by_role("button", name=re.compile("^Rename thread")))
        export = box(row.get_by_role("link", name=re.compile("^Export thread")))
        for button in (delete, rename, export):
            assert card["x"] <= button["x"] and button["x"] + button["width"] <= card["x"] + card["width"], (card, button)
    long_title = rows.first.locator("a.thread-title")
    # The whole title shows, wrapped, not cut to a few letters.
    assert long_title.evaluate("el => el.scrollWidth <= el.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_skip_links_focus_the_message_box_and_the_document_text(page, haico_server):
    page.set_viewport_size({"width": 1280, "height": 800})
    url = new_thread_for(page, haico_server.url, "ada")
    wait_for_socket(page)  # the page has loaded; then the first Tab from the top
    page.locator("body").focus()
    page.keyboard.press("Tab")
    skip_chat = page.get_by_role("link", name="Skip to chat")
    expect(skip_chat).to_be_focused()
    expect(skip_chat).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.get_by_role("region", name="Chat").get_by_role("textbox", name="Message")).to_be_focused()

    page.get_by_role("link", name="Skip to document").focus()
    page.keyboard.press("Enter")
    expect(document_text(page)).to_be_focused()

    # On a phone the link opens the tab that holds its target.
    page.set_viewport_size(PHONE)
    page.goto(url)
    page.get_by_role("link", name="Skip to chat").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="Message")).to_be_focused()
    expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    page.get_by_role("link", name="Skip to document").focus()
    page.keyboard.press("Enter")
    expect(document_text(page)).to_be_focused()
    expect(page.get_by_role("tab", name="Document")).to_have_attribute("aria-selected", "true")


def test_the_top_bar_switches_between_own_threads_and_renames_the_thread(new_page, haico_server):
    bob = new_page()
    new_thread_for(bob, haico_server.url, "bob")
    rename_from_top_bar(bob, "Bob's beta secret")

    page = new_page()
    new_thread_for(page, haico_server.url, "ada")
    rename_from_top_bar(page, "Alpha notes")
    beta_url = create_thread(page, haico_server.url)
    rename_from_top_bar(page, "Beta plan")
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("Beta plan")
    expect(page).to_have_title(re.compile("Beta plan"))
    create_thread(page, haico_server.url)

    page.get_by_role("button", name="Switch thread").click()
    switcher = page.get_by_role("dialog", name="Switch thread")
    expect(switcher).to_be_visible()
    search = switcher.get_by_role("searchbox", name="Search threads")
    expect(search).to_be_focused()
    listed = switcher.get_by_role("list", name="Your threads").get_by_role("link")
    expect(listed).to_have_count(3)
    expect(listed.filter(has_text="Alpha notes")).to_have_count(1)
    expect(switcher).not_to_contain_text("Bob")

    search.fill("beta")
    expect(listed).to_have_count(1)
    expect(listed).to_contain_text("Beta plan")
    listed.first.click()
    expect(page).to_have_url(beta_url)
    expect(page.get_by_role("heading", level=1)).to_have_text("Beta plan")

    page.get_by_role("button", name="Switch thread").click()
    search.fill("no such thread")
    expect(switcher.get_by_role("list", name="Your threads")).to_contain_text("No thread of yours")
    page.keyboard.press("Escape")
    expect(switcher).to_be_hidden()

    # Rename from the top bar: the list and a reload agree; a blank title is refused.
    rename_from_top_bar(page, "Beta plan, second draft")
    page.get_by_role("banner").get_by_role("button", name="Rename thread").click()
    page.get_by_role("banner").get_by_role("textbox", name="Thread title").fill("   ")
    page.get_by_role("banner").get_by_role("button", name="Save").click()
    expect(page.locator("#flash")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", level=1)).to_have_text("Beta plan, second draft")
    page.goto(f"{haico_server.url}/threads/")
    expect(page.get_by_role("list", name="Threads")).to_contain_text("Beta plan, second draft")
    expect(page.get_by_role("list", name="Threads")).not_to_contain_text("Bob")
