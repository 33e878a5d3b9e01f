"""Sharing a thread, in two browser contexts (two people) against the real
server (docs/adr/0084): the owner shares through the Share dialog, the
editor's plan step shows in the owner's tab live, removing the editor
closes their page's socket at once and refuses their next action; a
viewer sees the thread live and has no enabled control that writes."""

import re

from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply

from .helpers import (
    AUTOSAVE_WAIT_MS,
    LATE_SOCKET_SCRIPT,
    TURN_WAIT_MS,
    document_status,
    document_text,
    log_in,
    model_env,
    new_thread_for,
    open_add_form,
    save_document_now,
    stored_document,
    thread_id_from,
    type_after,
    wait_for_socket,
)
from .test_accessibility import axe_problems

NOT_FOUND = "This thread does not exist or is not yours."

SOCKET_STATE = (
    "() => { const el = document.querySelector('[ws-connect]');"
    " const ws = el && el['htmx-internal-data'] && el['htmx-internal-data'].webSocket;"
    " return ws && ws.socket ? ws.socket.readyState : -1; }"
)


def _share(owner: Page, who: str, role: str) -> None:
    owner.get_by_role("button", name="Share").click()
    dialog = owner.get_by_role("dialog", name="Share")
    dialog.get_by_label("Username or email").fill(who)
    dialog.get_by_label("Role", exact=True).select_option(label=role)
    dialog.get_by_role("button", name="Add person").click()
    expect(dialog.get_by_role("status")).to_have_text(f"{who} can now {'edit' if role == 'Editor' else 'view'} this thread.")


def _person_on(new_page, server, url: str, username: str) -> Page:
    """Another person (their own browser context), signed in, on the thread's page with its socket open."""
    page = new_page()
    log_in(page, server.url, username)
    page.goto(url)
    wait_for_socket(page)
    return page


def _bea_editing(owner: Page, server, new_page, url: str, text: str) -> Page:
    """The owner's document saved as `text` and shared with Bea as an
    editor; Bea's page (her own browser context), showing it."""
    save_document_now(owner, text)
    server.create_user("bea")
    _share(owner, "bea", "Editor")
    owner.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()
    editor = _person_on(new_page, server, url, "bea")
    expect(document_text(editor)).to_have_value(text)
    return editor


def _add_step(page: Page, text: str) -> None:
    form = open_add_form(page, "Planning", "Add step")
    form.get_by_role("textbox", name="New step").fill(text)
    form.get_by_role("button", name="Add step").click()


def test_an_editor_edits_the_plan_live_and_removal_closes_their_page(owner_workspace, haico_server, new_page):
    owner, url = owner_workspace
    haico_server.create_user("bea")
    _share(owner, "bea", "Editor")
    editor = _person_on(new_page, haico_server, url, "bea")

    # The dialog with a person in it, as a screen reader or keyboard user meets it.
    assert axe_problems(owner, "the Share dialog") == []

    _add_step(editor, "Step written by the editor")
    expect(owner.get_by_role("region", name="Planning")).to_contain_text("Step written by the editor")

    people = owner.get_by_role("dialog", name="Share").get_by_role("list", name="People on this thread")
    people.get_by_role("listitem").filter(has_text="bea").get_by_role("button", name="Remove", exact=True).click()
    expect(owner.get_by_role("dialog", name="Share").get_by_role("status")).to_contain_text("Removed")

    # At once: the editor's page says so and its socket is closed (not reconnecting).
    expect(editor.get_by_role("region", name="Chat")).to_contain_text(NOT_FOUND)
    editor.wait_for_function(f"() => ({SOCKET_STATE})() === 3")
    # Their next action is refused, and nothing changes.
    _add_step(editor, "Step after removal")
    expect(editor.get_by_text("no longer exists").first).to_be_visible()
    assert haico_server.query("SELECT text FROM workspace_todo ORDER BY id") == [("Step written by the editor",)]
    assert editor.goto(url).status == 404


def test_the_owners_open_plan_history_names_the_editor_live(owner_workspace, haico_server, new_page):
    """docs/adr/0090: the editor's step shows in the owner's tab, and the
    plan's history the owner has open says, as it happens, that bea did it."""
    owner, url = owner_workspace
    haico_server.create_user("bea")
    _share(owner, "bea", "Editor")
    owner.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()
    editor = _person_on(new_page, haico_server, url, "bea")

    planning = owner.get_by_role("region", name="Planning")
    planning.get_by_role("button", name="Plan history").click()
    history = owner.get_by_role("dialog", name="Plan history")
    expect(history).to_contain_text("No changes yet")

    _add_step(editor, "Step written by the editor")
    expect(planning.get_by_role("list", name="Plan steps")).to_contain_text("Step written by the editor")
    entries = history.get_by_role("listitem")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Added “Step written by the editor”")
    expect(entries.first).to_contain_text("By bea before the first turn")

    editor.get_by_role("checkbox", name="Done: step 1").check()
    expect(entries).to_have_count(2)
    expect(entries.first).to_contain_text("Ticked “Step written by the editor”")
    expect(entries.first).to_contain_text("By bea")
    assert axe_problems(owner, "the plan's history") == []

    # The owner's own change, with the history still open (keys, not a click
    # outside it): its answer and its push both bring the entry, shown once.
    owner.get_by_role("checkbox", name="Done: step 1").focus()
    owner.keyboard.press("Space")
    expect(entries.first).to_contain_text("Unticked “Step written by the editor”")
    expect(entries.first).to_contain_text("By ada")
    expect(entries).to_have_count(3)

    # The editor's own history says the same, read afresh.
    editor.get_by_role("region", name="Planning").get_by_role("button", name="Plan history").click()
    theirs = editor.get_by_role("dialog", name="Plan history").get_by_role("listitem")
    expect(theirs).to_have_count(3)
    expect(theirs.nth(2)).to_contain_text("Added “Step written by the editor”")
    history.screenshot(path="/tmp/haico-plan-history.png")


# Counts the page's requests for newer history entries (?after=) and answers
# each 300 ms late, so a change's push arrives while the one before is asked for.
SLOW_HISTORY_FETCHES = """() => {
  const seen = (window.__historyFetches = { started: 0, inFlight: 0, most: 0 });
  const realFetch = window.fetch;
  window.fetch = (url, options) => {
    if (!String(url).includes("after=")) return realFetch(url, options);
    seen.started += 1;
    seen.inFlight += 1;
    seen.most = Math.max(seen.most, seen.inFlight);
    return new Promise((resolve) => setTimeout(resolve, 300))
      .then(() => realFetch(url, options))
      .finally(() => { seen.inFlight -= 1; });
  };
}"""

TICK_BOTH = """(checked) => {
  for (const n of [1, 2]) {
    const box = document.querySelector(`#plan-steps input[aria-label="Done: step ${n}"]`);
    if (box.checked !== checked) box.click();
  }
}"""

# Takes the n-th entry out of the open history, then hands the page the
# marker of that entry alone, as the live layer would; returns its id.
MISS_AND_MARK = """(n) => {
  const entry = document.querySelectorAll("#plan-history-list li[id]")[n];
  const id = entry.id.split("-").pop();
  entry.remove();
  const box = document.createElement("div");
  box.innerHTML = `<template data-live-patch="plan-history" data-oldest="${id}" data-newest="${id}"></template>`;
  document.getElementById("live-inbox").append(box.firstChild);
  return Number(id);
}"""

SHOWN_IDS = "() => Array.from(document.querySelectorAll('#plan-history-list li[id]'), (li) => Number(li.id.split('-').pop()))"


def _newest_first_once(page: Page) -> list[int]:
    ids = page.evaluate(SHOWN_IDS)
    assert ids == sorted(set(ids), reverse=True), ids
    return ids


def test_two_changes_in_quick_succession_show_once_each_newest_first_in_an_open_history(owner_workspace, haico_server, new_page):
    """docs/adr/0092: a push only says there are new entries, and the open
    history asks for them one request at a time; two changes close together
    (the editor's, then the owner's own, whose answers say so too) each show
    once, in order; so does one that committed after a newer one."""
    owner, url = owner_workspace
    haico_server.create_user("bea")
    _share(owner, "bea", "Editor")
    owner.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()
    _add_step(owner, "First step")
    _add_step(owner, "Second step")
    planning = owner.get_by_role("region", name="Planning")
    expect(planning.get_by_role("checkbox", name="Done: step 2")).to_be_visible()
    editor = _person_on(new_page, haico_server, url, "bea")
    planning.get_by_role("button", name="Plan history").click()
    entries = owner.get_by_role("dialog", name="Plan history").get_by_role("listitem")
    expect(entries).to_have_count(2)
    owner.evaluate(SLOW_HISTORY_FETCHES)

    # The editor ticks both steps at once: two changes, two pushes.
    editor.evaluate(TICK_BOTH, True)
    expect(entries).to_have_count(4)
    assert all("By bea" in t for t in entries.all_text_contents()[:2])
    texts = [t.split("By ")[0].strip() for t in entries.all_text_contents()]
    assert sorted(texts[:2]) == ["Ticked “First step”", "Ticked “Second step”"]
    assert texts[2:] == ["Added “Second step”", "Added “First step”"]
    _newest_first_once(owner)

    # The owner's own two changes: each answer and each push name the entry.
    owner.evaluate(TICK_BOTH, False)
    expect(entries).to_have_count(6)
    texts = [t.split("By ")[0].strip() for t in entries.all_text_contents()]
    assert sorted(texts[:2]) == ["Unticked “First step”", "Unticked “Second step”"]
    assert all("By ada" in t for t in entries.all_text_contents()[:2])
    assert len(_newest_first_once(owner)) == 6
    owner.wait_for_function("() => window.__historyFetches.inFlight === 0")
    fetches = owner.evaluate("() => window.__historyFetches")
    assert fetches["most"] == 1, fetches
    assert 2 <= fetches["started"] <= 4, fetches  # at most one more for a push that came meanwhile
    expect(entries).to_have_count(6)

    # A change that committed after a newer one (its id is below the newest
    # shown): as if the page lacked the third entry when its marker came.
    missing = owner.evaluate(MISS_AND_MARK, 2)
    expect(entries).to_have_count(6)
    assert _newest_first_once(owner)[2] == missing


def test_a_change_made_while_the_history_is_being_read_is_not_missed(owner_workspace, haico_server, new_page):
    """The history read when opened can predate a change whose push reaches
    the page first: once that reading is in place, the page asks for the
    entry it lacks (docs/adr/0092)."""
    owner, url = owner_workspace
    haico_server.create_user("bea")
    _share(owner, "bea", "Editor")
    owner.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()
    editor = _person_on(new_page, haico_server, url, "bea")
    # The opening read is answered as the server had it, but only once the
    # editor's change has reached the page.
    held = []
    owner.route(re.compile(r".*/plan/history/$"), lambda route: held.append((route, route.fetch())))
    owner.get_by_role("region", name="Planning").get_by_role("button", name="Plan history").click()
    for _ in range(50):  # the handler runs while the page is waited on
        if held:
            break
        owner.wait_for_timeout(100)
    assert held, "the history was not asked for"

    _add_step(editor, "Step added during the reading")
    expect(owner.get_by_role("list", name="Plan steps")).to_contain_text("Step added during the reading")
    route, stale = held[0]
    route.fulfill(response=stale)

    entries = owner.get_by_role("dialog", name="Plan history").get_by_role("listitem")
    expect(entries).to_have_count(1)
    expect(entries.first).to_contain_text("Added “Step added during the reading”")
    expect(entries.first).to_contain_text("By bea")


def test_an_open_plan_history_catches_up_on_what_it_missed_while_its_socket_was_down(haico_server, new_page):
    owner = new_page()
    owner.add_init_script("window.__socketDelayMs = 100;")
    owner.add_init_script(LATE_SOCKET_SCRIPT)
    url = new_thread_for(owner, haico_server.url, "ada")
    wait_for_socket(owner)
    haico_server.create_user("bea")
    _share(owner, "bea", "Editor")
    owner.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()
    editor = _person_on(new_page, haico_server, url, "bea")
    owner.get_by_role("region", name="Planning").get_by_role("button", name="Plan history").click()
    entries = owner.get_by_role("dialog", name="Plan history").get_by_role("listitem")
    expect(entries).to_have_text(["No changes yet: every change to the plan is listed here, with who made it."])

    # The owner's connection drops; the editor's step is pushed while it is down.
    owner.evaluate("() => { window.__socketDelayMs = 3000; window.__dropSocket(); }")
    expect(owner.get_by_role("status").filter(has_text="Reconnecting…")).to_be_visible()
    _add_step(editor, "Step added while the owner was away")
    expect(editor.get_by_role("list", name="Plan steps")).to_contain_text("Step added while the owner was away")

    # Back online: the history still open is read again.
    expect(entries).to_have_count(1, timeout=10_000)
    expect(entries.first).to_contain_text("Added “Step added while the owner was away”")
    expect(entries.first).to_contain_text("By bea")


def test_a_viewer_sees_the_thread_live_and_has_no_enabled_control_that_writes(owner_workspace, haico_server, new_page):
    owner, url = owner_workspace
    haico_server.create_user("cy")
    _share(owner, "cy", "Viewer")
    viewer = _person_on(new_page, haico_server, url, "cy")
    owner.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()

    _add_step(owner, "Step the viewer watches")
    expect(viewer.get_by_role("region", name="Planning")).to_contain_text("Step the viewer watches")

    # Every control of a form that writes (including the row pushed just now) is disabled, text is read-only.
    enabled = viewer.evaluate(
        """() => Array.from(document.querySelectorAll(
              '.workspace-grid :is(form[method=post], form[ws-send], form[hx-post]) :is(button, select, input:not([type=hidden]), textarea)'
           )).filter(el => !el.disabled && !el.readOnly).map(el => el.outerHTML.slice(0, 120))"""
    )
    assert enabled == [], enabled
    # What stays enabled anywhere on the workspace only reads: histories, the plan's view, which artifact, downloads.
    writes = viewer.evaluate(
        """() => Array.from(document.querySelectorAll('.workspace-grid :is(button, select, input:not([type=hidden]), textarea)'))
             .filter(el => !el.disabled && !el.readOnly && el.offsetParent !== null)
             .filter(el => !el.matches('[hx-get], [data-plan-view], [data-export-toggle]'))
             .map(el => el.outerHTML.slice(0, 160))"""
    )
    assert writes == [], writes
    expect(viewer.get_by_role("checkbox", name="Done: step 1")).to_be_disabled()
    chat = viewer.get_by_role("region", name="Chat")
    expect(chat.get_by_role("button", name="Send")).to_be_disabled()
    expect(chat.get_by_role("textbox", name="Message")).not_to_be_editable()
    expect(viewer.get_by_role("textbox", name="Document text")).not_to_be_editable()
    expect(viewer.get_by_role("button", name="Share")).to_have_count(0)
    expect(viewer.get_by_role("button", name="Rename thread")).to_have_count(0)
    assert axe_problems(viewer, "a viewer's workspace") == []


def test_a_viewer_by_the_link_watches_the_owners_turn_stream(new_page, start_haico_server, model_server):
    model_server.script([Reply(text="An answer the viewer watches arrive.")])
    server = start_haico_server(model_env(model_server))
    owner = new_page()
    url = new_thread_for(owner, server.url, "ada")
    wait_for_socket(owner)
    owner.get_by_role("button", name="Share").click()
    dialog = owner.get_by_role("dialog", name="Share")
    dialog.get_by_role("button", name="Make a read-only link").click()
    link = dialog.get_by_role("textbox", name="Read-only link").input_value()
    dialog.get_by_role("button", name="Close").click()
    server.create_user("dee")
    viewer = new_page()
    log_in(viewer, server.url, "dee")
    viewer.goto(link)
    expect(viewer).to_have_url(url)
    wait_for_socket(viewer)

    chat = owner.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("Say something")
    chat.get_by_role("button", name="Send").click()

    watched = viewer.get_by_role("region", name="Chat")
    expect(watched).to_contain_text("Say something", timeout=TURN_WAIT_MS)
    expect(watched.locator("#chat-messages .answer")).to_have_text(["An answer the viewer watches arrive."], timeout=TURN_WAIT_MS)
    expect(watched.get_by_role("button", name="Send")).to_be_disabled()


SEEN_WITHIN_MS = 2_000  # the promise: another person's saved text shows within 2 seconds
REPORT = "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"


def test_two_people_typing_different_paragraphs_keep_both_see_each_other_and_the_history_names_them(
    owner_workspace, haico_server, new_page
):
    owner, url = owner_workspace
    editor = _bea_editing(owner, haico_server, new_page, url, REPORT)

    # Both type, each in their own paragraph, neither waiting for the other's save.
    type_after(owner, "Intro paragraph.", " Ada's words.")
    type_after(editor, "Results paragraph.", " Bea's words.")
    # Once Bea's save is in, Ada's page has her words within 2 seconds, though Ada has typed since.
    expect(document_status(editor)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    expect(document_text(owner)).to_have_value(re.compile("Bea's words"), timeout=SEEN_WITHIN_MS)
    type_after(owner, "Ada's words.", " More from Ada.")

    both = REPORT.replace("Intro paragraph.", "Intro paragraph. Ada's words. More from Ada.").replace(
        "Results paragraph.", "Results paragraph. Bea's words."
    )
    for page in (owner, editor):
        expect(document_text(page)).to_have_value(both, timeout=3 * AUTOSAVE_WAIT_MS)
        expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
        expect(page.get_by_role("region", name="Document conflict")).to_be_hidden()
    # Each person's caret stayed after their own words.
    assert document_text(editor).evaluate("el => el.selectionStart") == both.index(" Bea's words.") + len(" Bea's words.")

    # Both paragraphs are what the server keeps: a reload of either page shows them.
    for page in (owner, editor):
        page.reload()
        expect(document_text(page)).to_have_value(both)
    thread_id = thread_id_from(url).replace("-", "")
    people = haico_server.query(
        "SELECT DISTINCT r.person_username FROM workspace_documentrevision r JOIN workspace_document d"
        " ON r.document_id = d.id WHERE d.thread_id = ? AND r.version > 1",
        (thread_id,),
    )
    assert {name for (name,) in people} == {"ada", "bea"}
    owner.get_by_role("region", name="Document").get_by_role("button", name="History").click()
    history = owner.locator("#doc-history")
    expect(history.locator(".doc-history-who").filter(has_text="bea").first).to_be_visible()
    expect(history.locator(".doc-history-who").filter(has_text="ada").first).to_be_visible()


LOWERED = "The owner made you a viewer of this thread"
RAISED = "The owner made you an editor of this thread"


def _set_role(owner: Page, who: str, label: str) -> None:
    dialog = owner.get_by_role("dialog", name="Share")
    if not dialog.is_visible():
        owner.get_by_role("button", name="Share").click()
        # Its list is loaded afresh: chosen once it is in and settled.
        expect(dialog.get_by_label(f"Access of {who}")).to_be_visible()
        owner.wait_for_function(
            "() => !document.querySelector('#share-body.htmx-request, #share-body.htmx-settling, #share-body.htmx-swapping')"
        )
    dialog.get_by_label(f"Access of {who}").select_option(label=label)
    expect(dialog.get_by_role("status")).to_be_visible()


def test_an_editor_made_viewer_is_still_told_so_after_the_owners_next_turn_and_then_told_they_edit_again(
    new_page, start_haico_server, model_server
):
    """Bea has unsaved words in the document when Ada makes her a viewer.
    The end of Ada's next turn empties the chat's notice in every tab;
    Bea's page keeps saying why her words are not saved, and keeps them.
    Made an editor again, her page says so, and her words save."""
    model_server.script([Reply(text="Ada's answer.")])
    server = start_haico_server(model_env(model_server))
    owner = new_page()
    url = new_thread_for(owner, server.url, "ada")
    save_document_now(owner, REPORT)
    server.create_user("bea")
    _share(owner, "bea", "Editor")
    editor = _person_on(new_page, server, url, "bea")
    expect(document_text(editor)).to_have_value(REPORT)
    notice = editor.locator("#chat-notice")

    _set_role(owner, "bea", "Viewer")
    expect(notice).to_contain_text(LOWERED)
    type_after(editor, "Methods paragraph.", " Bea's unsaved words.")
    owner.get_by_role("dialog", name="Share").get_by_role("button", name="Close").click()
    owner.get_by_role("textbox", name="Message").fill("Say something")
    owner.get_by_role("button", name="Send").click()
    expect(editor.locator("#chat-messages .answer").last).to_have_text("Ada's answer.", timeout=TURN_WAIT_MS)

    expect(notice).to_be_visible()
    expect(notice).to_contain_text(LOWERED)
    expect(document_text(editor)).to_have_value(re.compile("Bea's unsaved words"))

    _set_role(owner, "bea", "Editor")
    expect(notice).to_contain_text(RAISED)
    type_after(editor, "Bea's unsaved words.", " Now saved.")
    expect(document_status(editor)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    owner.reload()
    expect(document_text(owner)).to_have_value(re.compile("Bea's unsaved words. Now saved."))


def test_an_editor_made_viewer_with_unsaved_words_finds_them_to_copy_on_the_page_the_reload_shows(
    owner_workspace, haico_server, new_page
):
    """Bea is typing when Ada makes her a viewer; she reloads, as her page
    tells her to. The viewer's page she lands on shows the words her editor
    could not save, to copy (docs/adr/0162); the thread's document does not
    have them."""
    owner, url = owner_workspace
    save_document_now(owner, REPORT)
    haico_server.create_user("bea")
    _share(owner, "bea", "Editor")
    editor = _person_on(new_page, haico_server, url, "bea")
    expect(document_text(editor)).to_have_value(REPORT)

    type_after(editor, "Methods paragraph.", " Bea's words")
    _set_role(owner, "bea", "Viewer")
    expect(editor.locator("#chat-notice")).to_contain_text(LOWERED)
    type_after(editor, "Bea's words", " typed on after.")
    expect(document_status(editor)).to_have_text(re.compile("^Not saved"), timeout=AUTOSAVE_WAIT_MS)

    editor.on("dialog", lambda dialog: dialog.accept())  # the page asks before leaving unsaved words
    editor.reload()
    kept = editor.get_by_role("region", name="Words that could not be saved")
    expect(kept).to_contain_text("the owner made you a viewer of it")
    # Under the connection status, above the workspace.
    assert editor.evaluate("() => document.getElementById('words-kept').previousElementSibling.id") == "connection-status"
    expect(kept.get_by_role("textbox")).to_have_value(
        REPORT.replace("Methods paragraph.", "Methods paragraph. Bea's words typed on after.")
    )
    expect(document_text(editor)).to_have_value(REPORT)
    assert stored_document(haico_server, thread_id_from(url)) == REPORT

    # Dismissed, they are gone from the page and do not come back.
    kept.get_by_role("button", name=re.compile("^Dismiss")).click()
    expect(kept).to_have_count(0)
    editor.reload()
    expect(document_text(editor)).to_have_value(REPORT)
    expect(editor.get_by_role("region", name="Words that could not be saved")).to_have_count(0)
