"""The plan in Chromium by keyboard and by drag (docs/adr/0023): the plan is
one Tab stop whatever its length, its rows answer the arrows, Enter, Space
and the menu key, the step editor moves and re-nests its step with Alt+↑/↓
and Tab / Shift+Tab, the row menu works by mouse and keyboard, and a drag
reorders steps within their level (persisted) while a drag onto another
level is refused with a message."""

import uuid

from playwright.sync_api import Page, expect

from .helpers import new_thread_for, open_add_form, step_action, thread_id_from

SEED = (
    "import uuid, json; from workspace.models import Thread; from workspace.services import plan as p; "
    "t = Thread.objects.get(pk=uuid.UUID('{thread_id}')); "
    "p.todos_add_outline(thread=t, steps=json.loads('{steps}'))"
)
ACROSS_LEVELS = "Dragging only reorders a step among the steps at its own level; use Indent or Outdent to change its level."


def seed_plan(server, url: str, steps: list[tuple[str, int]]) -> None:
    import json

    payload = json.dumps([{"text": text, "depth": depth} for text, depth in steps])
    server.manage("shell", "-c", SEED.format(thread_id=uuid.UUID(thread_id_from(url)), steps=payload))


def open_seeded(page: Page, server, steps) -> str:
    url = new_thread_for(page, server.url, "grace")
    seed_plan(server, url, steps)
    page.goto(url)
    expect(page.get_by_role("list", name="Plan steps").locator(":scope > li")).to_have_count(len(steps))
    return url


def expect_plan(page: Page, rows: list[str]) -> None:
    """The tree shows these rows ("<number> <text>"), in this order."""
    views = page.get_by_role("list", name="Plan steps").locator(":scope > li > .edit-view")
    expect(views.locator(".step-number")).to_have_text([r.split(" ", 1)[0] for r in rows])
    expect(views.locator(".step-text")).to_have_text([r.split(" ", 1)[1] for r in rows])


def row(page: Page, text: str):
    return (
        page.get_by_role("list", name="Plan steps")
        .locator(":scope > li.step")
        .filter(has=page.locator(":scope > .edit-view").get_by_text(text, exact=True))
    )


def focused(page: Page) -> str:
    return page.evaluate(
        "() => { const a = document.activeElement;"
        " const bar = a.closest('[role=toolbar]');"
        " return a.tagName + ' ' + (a.getAttribute('aria-label') || a.id || a.textContent.trim().slice(0, 40))"
        " + (bar && bar.getAttribute('aria-label') ? ' in ' + bar.getAttribute('aria-label') : ''); }"
    )


def drag(page: Page, source, target, *, above: bool = True) -> None:
    """Press on `source`'s text and let go over the upper (or lower) edge of `target`."""
    start = source.locator(".step-text").bounding_box()
    end = target.bounding_box()
    page.mouse.move(start["x"] + 10, start["y"] + start["height"] / 2)
    page.mouse.down()
    page.mouse.move(start["x"] + 10, start["y"] + start["height"] / 2 + 8, steps=4)
    y = end["y"] + (end["height"] * 0.25 if above else end["height"] * 0.75)
    page.mouse.move(end["x"] + 20, y, steps=12)
    page.mouse.move(end["x"] + 21, y + 1, steps=2)
    page.mouse.up()


TWELVE = [(f"Step {n}", 1 if n in (3, 4, 8) else 0) for n in range(12)]


def test_tab_from_the_top_reaches_the_message_box_within_16_presses_with_a_12_step_plan(page, haico_server):
    open_seeded(page, haico_server, TWELVE)
    page.locator("body").focus()
    order = []
    for _ in range(40):
        page.keyboard.press("Tab")
        order.append(focused(page))
        if order[-1] == "TEXTAREA Message":
            break
    assert order[-1] == "TEXTAREA Message", order
    # 15 before the document's one Export control (docs/adr/0053) became a
    # stop of its own; "Skip to chat", the first stop, gets there at once.
    assert len(order) <= 16, "\n".join(order)
    print(f"{len(order)} Tab presses to the Message box")
    # The plan's twelve rows are one stop: the first row.
    plan_stops = [stop for stop in order if stop.startswith("LI ")]
    assert len(plan_stops) == 1, order


PREFERENCES = (
    "import uuid; from workspace.models import Thread; from workspace.services import preferences as p; "
    "t = Thread.objects.get(pk=uuid.UUID('{thread_id}')); "
    "[p.preference_add(thread=t, title=title, kind='hard', respect_lock=False) for title in ('Cite sources', 'Plain words')]"
)


def test_each_preference_row_and_an_empty_add_form_are_one_tab_stop(page, haico_server):
    url = open_seeded(page, haico_server, [("Gather", 0)])
    haico_server.manage("shell", "-c", PREFERENCES.format(thread_id=uuid.UUID(thread_id_from(url))))
    page.goto(url)
    prefs = page.get_by_role("region", name="Preferences")
    expect(prefs.get_by_role("toolbar")).to_have_count(2)
    page.locator("body").focus()
    order = [page.keyboard.press("Tab") or focused(page) for _ in range(12)]
    first = order.index("BUTTON Lock in Actions for preference Cite sources")
    # Each row is one stop (its Lock button); the next stop is past the list.
    assert order[first + 1] == "BUTTON Lock in Actions for preference Plain words"
    assert "Plain words" not in order[first + 2] and "Cite sources" not in order[first + 2], order
    # Inside a row's toolbar the arrows go from button to button.
    prefs.get_by_role("toolbar", name="Actions for preference Plain words").get_by_role("button", name="Lock").focus()
    page.keyboard.press("ArrowRight")
    expect(
        prefs.get_by_role("toolbar", name="Actions for preference Plain words").get_by_role("button", name="Edit")
    ).to_be_focused()
    # An empty add form is one stop: Tab from its title leaves the form.
    add = open_add_form(page, "Preferences", "Add preference")
    add.get_by_role("textbox", name="Preference title").focus()
    page.keyboard.press("Tab")
    assert add.evaluate("(form) => !form.contains(document.activeElement)")
    # With a title typed, the add form's other controls are in the Tab order again.
    prefs.get_by_role("textbox", name="Preference title").fill("Short")
    prefs.get_by_role("textbox", name="Preference title").press("Tab")
    expect(prefs.get_by_role("combobox", name="Kind")).to_be_focused()


def test_plan_rows_by_keyboard_and_the_step_editor_moves_and_renests_its_step(page, haico_server):
    url = open_seeded(page, haico_server, [("Gather", 0), ("Search", 0), ("Write", 0)])
    planning = page.get_by_role("region", name="Planning")
    row(page, "Gather").focus()

    # ↓ goes to the next row; Space ticks it; Alt+↑ moves it up among its siblings.
    page.keyboard.press("ArrowDown")
    expect(row(page, "Search")).to_be_focused()
    page.keyboard.press("Space")
    expect(planning.get_by_role("checkbox", name="Done: step 2")).to_be_checked()
    page.keyboard.press("Alt+ArrowUp")
    expect_plan(page, ["1 Search", "2 Gather", "3 Write"])
    expect(row(page, "Search")).to_be_focused()

    # Enter opens the editor; Tab indents, Alt+↓ moves, Shift+Tab outdents, with the typed text kept.
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(row(page, "Write")).to_be_focused()
    page.keyboard.press("Enter")
    editor = planning.get_by_role("textbox", name="Text of step 3")
    expect(editor).to_be_focused()
    page.keyboard.press("End")
    page.keyboard.type(" it up")
    page.keyboard.press("Tab")
    expect(planning.locator("#plan-steps > li > .edit-view .step-number")).to_have_text(["1", "2", "2.1"])
    editor = planning.get_by_role("textbox", name="Text of step 2.1")
    expect(editor).to_be_focused()
    expect(editor).to_have_value("Write it up")
    page.keyboard.press("Shift+Tab")
    expect(planning.get_by_role("textbox", name="Text of step 3")).to_be_focused()
    page.keyboard.press("Alt+ArrowUp")
    editor = planning.get_by_role("textbox", name="Text of step 2")
    expect(editor).to_be_focused()
    expect(editor).to_have_value("Write it up")
    page.keyboard.press("Enter")
    expect_plan(page, ["1 Search", "2 Write it up", "3 Gather"])
    expect(row(page, "Write it up")).to_be_focused()

    # Escape closes an editor and leaves focus on its row.
    page.keyboard.press("Enter")
    expect(planning.get_by_role("textbox", name="Text of step 2")).to_be_focused()
    page.keyboard.press("Escape")
    expect(planning.get_by_role("textbox", name="Text of step 2")).to_have_count(0)
    expect(row(page, "Write it up")).to_be_focused()

    # All of it was stored.
    page.goto(url)
    expect_plan(page, ["1 Search", "2 Write it up", "3 Gather"])
    expect(planning.get_by_role("checkbox", name="Done: step 1")).to_be_checked()


def test_the_row_menu_by_keyboard_and_by_mouse(page, haico_server):
    open_seeded(page, haico_server, [("Gather", 0), ("Search", 0), ("Write", 0)])
    planning = page.get_by_role("region", name="Planning")
    menu = page.get_by_role("menu", name="Step actions")

    # The menu key opens the focused row's menu on its first item; Escape closes it, focus goes back.
    row(page, "Search").focus()
    page.keyboard.press("ContextMenu")
    expect(menu).to_be_visible()
    expect(menu.get_by_role("menuitem", name="Edit")).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(planning.get_by_role("button", name="Actions for step 2")).to_be_focused()

    # ↓ to an item and Enter runs it.
    row(page, "Search").focus()
    page.keyboard.press("Shift+F10")
    for _ in range(4):  # Edit, Add sub-step, Indent, (Outdent is disabled), Move up
        page.keyboard.press("ArrowDown")
    expect(menu.get_by_role("menuitem", name="Move down")).to_be_focused()
    page.keyboard.press("Enter")
    expect_plan(page, ["1 Gather", "2 Write", "3 Search"])

    # By mouse: the one button of a row opens the same menu.
    planning.get_by_role("button", name="Actions for step 3").click()
    expect(menu.get_by_role("menuitem", name="Move down")).to_be_disabled()
    menu.get_by_role("menuitem", name="Indent").click()
    expect_plan(page, ["1 Gather", "2 Write", "2.1 Search"])


def test_on_a_touch_screen_a_rows_controls_and_its_menu_are_at_least_40_px(page, haico_server):
    open_seeded(page, haico_server, [("Gather", 0), ("Search", 1)])
    page.context.new_cdp_session(page).send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    assert page.evaluate("() => matchMedia('(pointer: coarse)').matches")
    planning = page.get_by_role("region", name="Planning")
    targets = [
        planning.get_by_role("checkbox", name="Done: step 1.1"),
        planning.get_by_role("button", name="Actions for step 1.1"),
    ]
    planning.get_by_role("button", name="Actions for step 1.1").click()
    menu = page.get_by_role("menu", name="Step actions")
    expect(menu).to_be_visible()
    targets += menu.get_by_role("menuitem").all()
    for target in targets:
        box = target.bounding_box()
        assert box["width"] >= 40 and box["height"] >= 40, (target, box)


def test_a_drag_reorders_within_a_level_and_a_drag_onto_another_level_is_refused(page, haico_server):
    url = open_seeded(page, haico_server, [("Alpha", 0), ("Beta", 0), ("Beta one", 1), ("Beta two", 1), ("Gamma", 0)])
    planning = page.get_by_role("region", name="Planning")

    # Gamma dropped on top of Alpha: it goes first.
    drag(page, row(page, "Gamma"), row(page, "Alpha"))
    expect_plan(page, ["1 Gamma", "2 Alpha", "3 Beta", "3.1 Beta one", "3.2 Beta two"])

    # Beta dropped above Alpha carries its sub-steps.
    drag(page, row(page, "Beta"), row(page, "Alpha"))
    expect_plan(page, ["1 Gamma", "2 Beta", "2.1 Beta one", "2.2 Beta two", "3 Alpha"])

    # Sub-steps reorder among themselves.
    drag(page, row(page, "Beta two"), row(page, "Beta one"))
    expect_plan(page, ["1 Gamma", "2 Beta", "2.1 Beta two", "2.2 Beta one", "3 Alpha"])

    page.goto(url)
    expect_plan(page, ["1 Gamma", "2 Beta", "2.1 Beta two", "2.2 Beta one", "3 Alpha"])

    # Gamma dragged down past Beta two, among Beta's sub-steps, would change
    # its level: refused, nothing moves.
    drag(page, row(page, "Gamma"), row(page, "Beta two"))
    expect(planning.get_by_role("alert")).to_have_text(ACROSS_LEVELS)
    expect_plan(page, ["1 Gamma", "2 Beta", "2.1 Beta two", "2.2 Beta one", "3 Alpha"])
    page.goto(url)
    expect_plan(page, ["1 Gamma", "2 Beta", "2.1 Beta two", "2.2 Beta one", "3 Alpha"])


def test_after_an_indent_a_move_and_a_delete_the_page_shows_the_servers_outline_numbers(page, haico_server):
    """A change that may renumber rows it did not touch sends every row's
    number (docs/adr/0081): the rows, an open editor's labels, the checklist
    and the count show them, and a page whose rows do not match them (it
    missed a change) asks for the whole plan again."""
    open_seeded(page, haico_server, [("Gather", 0), ("Screen", 0), ("Write", 0), ("Edit", 1)])
    step_action(page, "3.1", "Add sub-step")
    child = row(page, "Edit").locator('form[data-edit-form="child"] input[name=text]')
    expect(child).to_have_attribute("placeholder", "Sub-step of 3.1…")

    step_action(page, "2", "Indent")
    expect_plan(page, ["1 Gather", "1.1 Screen", "2 Write", "2.1 Edit"])
    expect(child).to_have_attribute("placeholder", "Sub-step of 2.1…")
    expect(child).to_have_attribute("aria-label", "New sub-step of step 2.1")
    expect(row(page, "Edit").locator(":scope > .edit-view > input[type=checkbox]")).to_have_attribute(
        "aria-label", "Done: step 2.1"
    )

    step_action(page, "2", "Move up")
    expect_plan(page, ["1 Write", "1.1 Edit", "2 Gather", "2.1 Screen"])

    page.once("dialog", lambda dialog: dialog.accept())
    step_action(page, "1", "Delete")
    expect_plan(page, ["1 Gather", "1.1 Screen"])
    expect(page.locator("#plan-count")).to_have_text("0/2 done")
    page.get_by_role("button", name="Checklist").click()
    expect(page.get_by_label("Plan as a markdown checklist")).to_have_text("- [ ] 1 Gather\n  - [ ] 1.1 Screen")
    page.get_by_role("button", name="Tree").click()

    form = open_add_form(page, "Planning", "Add step")
    form.get_by_role("textbox", name="New step").fill("Read")
    form.get_by_role("button", name="Add step").click()
    expect_plan(page, ["1 Gather", "1.1 Screen", "2 Read"])
    expect(page.locator("#plan-count")).to_have_text("0/3 done")
    # As if the page had missed Screen's push: the next numbers do not match its rows.
    page.evaluate("() => document.getElementById(" + repr(row(page, "Screen").get_attribute("id")) + ").remove()")
    expect_plan(page, ["1 Gather", "2 Read"])
    step_action(page, "2", "Move up")
    expect_plan(page, ["1 Read", "2 Gather", "2.1 Screen"])


def test_alt_down_pressed_twice_on_a_slow_connection_moves_the_step_two_places(page, haico_server):
    """The second move waits for the first's answer (one request per row at
    a time); the step's number it carries is the one the page shows when it
    goes, so the person's own first move is not taken for someone else's
    (docs/adr/0125)."""
    open_seeded(page, haico_server, [("Alpha", 0), ("Beta", 0), ("Gamma", 0), ("Delta", 0)])
    # Every move takes 400 ms on its way, as on a mobile connection.
    page.evaluate(
        """() => {
            const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
            XMLHttpRequest.prototype.open = function (method, url) { this.__url = String(url); return open.apply(this, arguments); };
            XMLHttpRequest.prototype.send = function (body) {
                if (this.__url.indexOf("/move/") < 0) return send.call(this, body);
                setTimeout(() => send.call(this, body), 400);
            };
        }"""
    )
    row(page, "Alpha").focus()
    page.keyboard.press("Alt+ArrowDown")
    page.keyboard.press("Alt+ArrowDown")
    expect_plan(page, ["1 Beta", "2 Gamma", "3 Alpha", "4 Delta"])
    page.wait_for_timeout(500)
    expect(page.locator("#plan-error")).to_be_hidden()
    expect_plan(page, ["1 Beta", "2 Gamma", "3 Alpha", "4 Delta"])
