"""What a new user trips over, tried in Chromium at the sizes people use
(1440 × 900, 1024 × 768 and a 390 × 844 phone) against the real server and a
scripted model (docs/adr/0055, 0056, 0057):

- the approval card is in view and focused when it comes (or announced while
  the person types), with Approve and Reject on screen;
- a refusal said while a turn waited goes when it is answered;
- no console error, htmx's out-of-band errors included, on a thread's load,
  after a turn, or moving between a thread and its branch;
- a branch says which it is, in its title and in the top bar;
- the newest artifact shows with the way back to the document, and an older
  turn's review folds, remembered;
- the trajectory opens larger with whole labels; a mode's refusal is said in
  words; empty states say what to do; the row buttons show and are named;
- the document's history, the feedback form, the thread list's import and the
  login page behave as a new user expects.
"""

import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call

from .helpers import (
    TURN_WAIT_MS,
    document_text,
    model_env,
    new_thread_for,
    open_add_form,
    sign_up_quickly,
    thread_id_from,
    wait_for_socket,
)

SIZES = [{"width": 1440, "height": 900}, {"width": 1024, "height": 768}, {"width": 390, "height": 844}]
PHONE = SIZES[2]
LONG = "# Long\n\n" + "\n\n".join(f"Paragraph {i}: some words about the trip and a few more." for i in range(60)) + "\n"
SHORT = "# Short\n\nJust this.\n"
REPORT = "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n"


def _last_user_text(body: dict) -> str:
    for message in reversed(body["messages"]):
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else " ".join(part.get("text", "") for part in content)
    return ""


def respond(body: dict) -> Reply:
    """The model, by what the person asked in the turn: after a tool's result, a short answer."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(text="Done.")
    asked = _last_user_text(body).lower()
    if "slowly" in asked:
        time.sleep(2.5)  # time for the person to start typing somewhere
    if "long document" in asked:
        return Reply(tool_calls=[tool_call("update_document", "Writing the long document.", content=LONG, title="Long")])
    if "make it short" in asked:
        return Reply(tool_calls=[tool_call("update_document", "Replacing it with a short one.", content=SHORT, title="Short")])
    if "chart" in asked:
        return Reply(
            tool_calls=[
                tool_call(
                    "chart_generator",
                    "Charting the budget.",
                    chart_type="bar",
                    title="Budget by day",
                    data=[{"name": "Day 1", "value": 300}, {"name": "Day 2", "value": 400}],
                )
            ]
        )
    if "rewrite the intro" in asked:
        return Reply(
            tool_calls=[
                tool_call(
                    "replace_in_document", "Rewriting the intro.", old_text="Intro paragraph.", new_text="A new introduction."
                )
            ]
        )
    if "plan it" in asked:
        return Reply(tool_calls=[tool_call("add_todos", "Laying out the plan.", steps=[{"text": "Book flights"}])])
    return Reply(text=f"Answer to: {asked[:40]}")


@pytest.fixture
def model_server(model_server):
    model_server.script([respond] * 200)
    return model_server


@pytest.fixture
def server(start_haico_server, model_server):
    return start_haico_server(model_env(model_server))


def _chat(page: Page):
    return page.get_by_role("region", name="Chat")


def _show_chat(page: Page) -> None:
    tab = page.get_by_role("tab", name="Chat")
    if tab.is_visible():
        tab.click()


def _send(page: Page, text: str) -> None:
    _show_chat(page)
    _chat(page).get_by_role("textbox", name="Message").fill(text)
    _chat(page).get_by_role("button", name="Send").click()


def _turn(page: Page, text: str) -> None:
    """Send `text` and wait for the turn to end."""
    answers = _chat(page).locator(".answer")
    before = answers.count()
    _send(page, text)
    expect(answers).to_have_count(before + 1, timeout=TURN_WAIT_MS)
    expect(answers.nth(before)).not_to_be_empty(timeout=TURN_WAIT_MS)
    expect(_chat(page).get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)


def _fully_in_view(locator) -> None:
    expect(locator).to_be_in_viewport(ratio=1)


class ConsoleWatch:
    """Every console error and uncaught exception of a page, htmx's
    out-of-band "no target" errors included (htmx logs them with console.error)."""

    def __init__(self, page: Page):
        self.errors: list[str] = []
        page.on("console", lambda message: self.errors.append(f"console: {message.text}") if message.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        page.add_init_script(
            "document.addEventListener('htmx:oobErrorNoTarget', e => console.error('oob without a target: ' + (e.detail && e.detail.target)));"
        )

    def settle_and_check(self, page: Page, where: str) -> None:
        wait_for_socket(page)
        page.wait_for_timeout(800)  # what the socket sends on connecting has arrived
        assert not self.errors, f"{where}: {self.errors}"


# --- the approval card ------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s['width']}x{s['height']}")
def test_a_pending_approval_is_in_view_and_focused_with_its_buttons_on_screen(new_page, server, size):
    page = new_page()
    page.set_viewport_size(size)
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    _turn(page, "Write a long document")
    _send(page, "Now make it short")

    card = page.get_by_role("region", name="Approval for turn 2")
    expect(card).to_contain_text("The assistant asks before making this change", timeout=TURN_WAIT_MS)
    for moment in ("as it arrives", "after a reload"):
        expect(card).to_be_focused()
        _fully_in_view(card.get_by_text("The assistant asks before making this change"))
        _fully_in_view(card.get_by_role("button", name="Approve", exact=True))
        _fully_in_view(card.get_by_role("button", name="Reject", exact=True))
        # The chat is no taller than what it holds: its end is the last turn, not empty space.
        gap = page.locator("#chat-messages").evaluate(
            "el => el.scrollHeight - (el.lastElementChild.offsetTop + el.lastElementChild.offsetHeight)"
        )
        assert gap < 40, (moment, gap)
        if moment == "as it arrives":
            page.reload()
            wait_for_socket(page)

    # A message sent meanwhile is refused; the refusal goes once the question is answered.
    _chat(page).get_by_role("textbox", name="Message").fill("something else")
    _chat(page).get_by_role("button", name="Send").click()
    notice = page.locator("#chat-notice")
    expect(notice).to_contain_text("Answer the pending approval first")
    card.get_by_role("button", name="Reject", exact=True).click()
    expect(card).to_contain_text("Rejected by ada", timeout=TURN_WAIT_MS)
    expect(notice).to_be_hidden()


@pytest.mark.parametrize("size", [SIZES[0], PHONE], ids=["1440x900", "390x844"])
def test_an_approval_that_comes_while_the_person_types_is_announced_and_does_not_take_the_focus(new_page, server, size):
    page = new_page()
    page.set_viewport_size(size)
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    _turn(page, "Write a long document")
    _send(page, "Now make it short, slowly")

    # The person goes back to the document and types while the agent works.
    tab = page.get_by_role("tab", name="Document")
    if tab.is_visible():
        tab.click()
    editor = document_text(page)
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type(" typing along", delay=40)
    card = page.get_by_role("region", name="Approval for turn 2")
    expect(page.locator("#flash")).to_contain_text("approve or reject it in the chat", timeout=TURN_WAIT_MS)
    page.keyboard.type(" and on", delay=20)
    expect(editor).to_be_focused()
    if size is PHONE:
        expect(page.get_by_role("tab", name="Document")).to_have_attribute("aria-selected", "true")
        page.get_by_role("tab", name="Chat").click()
    _fully_in_view(card.get_by_role("button", name="Approve", exact=True))
    _fully_in_view(card.get_by_text("The assistant asks before making this change"))


# --- a clean console, branches that say which they are ------------------------------------------


def test_no_console_error_on_load_after_a_turn_or_moving_between_a_thread_and_its_branch(new_page, server):
    page = new_page()
    watch = ConsoleWatch(page)
    original = new_thread_for(page, server.url, "ada")
    watch.settle_and_check(page, "an empty thread")
    _turn(page, "Plan it")
    _turn(page, "What next?")
    watch.settle_and_check(page, "after two turns")
    page.reload()
    watch.settle_and_check(page, "loading a thread with turns")

    # Regenerate turn 2: a branch, which the page moves to.
    _chat(page).get_by_role("button", name="Regenerate turn 2", exact=True).click()
    expect(page).not_to_have_url(original)
    expect(_chat(page).locator(".answer")).to_have_count(2, timeout=TURN_WAIT_MS)
    expect(_chat(page).get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
    watch.settle_and_check(page, "in the branch after its turn")
    branch = page.url.split("#")[0]
    top = page.get_by_role("banner")
    expect(top.get_by_role("heading", level=1)).to_have_text("Plan it (turn 2 regenerated)")
    expect(top.get_by_role("link", name="Branch of “Plan it” from turn 1")).to_be_visible()

    # Back to the original by the versions arrows, and by the top bar's link from the branch.
    _chat(page).get_by_role("navigation", name="Versions of turn 2").get_by_role(
        "link", name="Previous version of turn 2"
    ).click()
    expect(page).to_have_url(re.compile(re.escape(original.split("#")[0])))
    watch.settle_and_check(page, "moving back to the original")
    expect(top.get_by_role("link", name=re.compile("^Branch of"))).to_have_count(0)
    page.goto(branch)
    top.get_by_role("link", name="Branch of “Plan it” from turn 1").click()
    expect(page).to_have_url(original.split("#")[0])
    watch.settle_and_check(page, "following the top bar's link")

    # The thread list tells them apart.
    page.goto(f"{server.url}/threads/")
    titles = page.get_by_role("list", name="Threads").locator("a.thread-title")
    expect(titles).to_have_text(["Plan it", "Plan it (turn 2 regenerated)"])
    assert thread_id_from(branch) != thread_id_from(original)


# --- the centre: the newest artifact, the way back, a review that folds --------------------------


def test_a_new_artifact_shows_with_the_way_back_and_an_older_review_folds_and_stays_folded(new_page, server):
    page = new_page()
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    document_text(page).fill(REPORT)
    page.get_by_role("region", name="Document").get_by_role("textbox", name="Document title").press("Enter")
    expect(page.locator("[data-doc-status]")).to_have_text("Saved")
    _turn(page, "Rewrite the intro")
    centre = page.get_by_role("region", name="Document")
    review = centre.get_by_role("region", name="The agent’s changes in turn 1")
    # The latest turn's review is open, each change's buttons named by their change.
    expect(review.get_by_role("button", name="Keep change 1", exact=True)).to_be_visible()
    expect(review.get_by_role("button", name="Undo change 1", exact=True)).to_be_visible()
    expect(review.get_by_role("button", name="Hide changes")).to_have_attribute("aria-expanded", "true")

    _turn(page, "Chart the budget")
    # The chart is on show; the document and its review are a click away, and the page says so.
    expect(centre.get_by_role("heading", name="Budget by day")).to_be_visible()
    expect(centre.get_by_role("status")).to_contain_text("The agent made “Budget by day” and shows it here")
    expect(centre.get_by_role("status")).to_contain_text("with the agent’s changes to review")
    centre.get_by_role("button", name="Back to the document").click()
    expect(document_text(page)).to_have_value(REPORT.replace("Intro paragraph.", "A new introduction."))

    # Turn 1's review, now that turn 2 exists, is folded: one line, not 40 % of the column.
    review = centre.get_by_role("region", name="The agent’s changes in turn 1")
    show = review.get_by_role("button", name="Show changes")
    expect(show).to_have_attribute("aria-expanded", "false")
    expect(review.get_by_role("button", name="Keep change 1", exact=True)).to_be_hidden()
    assert review.bounding_box()["height"] < 90
    show.click()
    expect(review.get_by_role("button", name="Keep change 1", exact=True)).to_be_visible()
    page.reload()
    expect(review.get_by_role("button", name="Hide changes")).to_have_attribute("aria-expanded", "true")
    review.get_by_role("button", name="Hide changes").click()
    page.reload()
    expect(review.get_by_role("button", name="Show changes")).to_be_visible()


# --- the trajectory, modes, empty states, rows ---------------------------------------------------


def test_the_trajectory_opens_larger_with_whole_labels_and_keeps_a_small_strip_on_a_phone(new_page, server):
    page = new_page()
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    trajectory = page.get_by_role("region", name="Trajectory")
    expect(trajectory.get_by_role("button", name="Open larger")).to_be_hidden()  # no map yet
    message = "Compare the three hotels near the old town by price"
    _turn(page, message)
    _turn(page, "And the restaurants?")

    node = trajectory.get_by_role("button", name=re.compile(r"^Turn 1\b"))
    expect(node).to_have_accessible_name(re.compile(r"^Turn 1 Compare the three hotels"))
    assert node.locator("span").evaluate("el => el.scrollWidth > el.clientWidth")  # cut in the rail
    trajectory.get_by_role("button", name="Open larger").click()
    dialog = page.get_by_role("dialog", name="Trajectory")
    expect(dialog).to_be_visible()
    large = dialog.get_by_role("button", name=re.compile(r"^Turn 1\b"))
    expect(large).to_contain_text(message)
    assert large.locator("span").evaluate("el => el.scrollWidth <= el.clientWidth")  # whole
    expect(dialog.get_by_role("button", name=re.compile(r"^Turn 2\b"))).to_be_focused()  # the current turn
    large.click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("region", name="Turn preview")).to_contain_text("Viewing turn 1")

    page.set_viewport_size(PHONE)
    page.reload()
    page.get_by_role("tab", name="Chat").click()
    strip, view = trajectory.bounding_box()["height"], page.locator("#rail-right").bounding_box()["height"]
    assert strip <= view / 4, (strip, view)
    trajectory.get_by_role("button", name="Open larger").click()
    expect(dialog.get_by_role("button", name=re.compile(r"^Turn 1\b"))).to_be_in_viewport()


def test_empty_states_the_mode_label_and_a_refusal_in_words(new_page, server):
    page = new_page()
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    planning = page.get_by_role("region", name="Planning")
    expect(planning.get_by_text("No objective yet — say in the chat what you want to build")).to_be_visible()
    expect(planning).not_to_contain_text("Understand what the user is trying to achieve")
    expect(planning.get_by_text("No plan yet. Add a step with + above")).to_be_visible()
    # "Ask about selection" only once there is a selection to ask about.
    ask = _chat(page).get_by_role("button", name="Ask about selection")
    expect(ask).to_be_hidden()
    document_text(page).fill("Some words to ask about.")
    document_text(page).evaluate("el => { el.focus(); el.setSelectionRange(5, 10); }")
    expect(ask).to_be_visible()

    # The Mode has a label one can see, and a step the mode refuses says why.
    mode = _chat(page).get_by_label("Mode")
    expect(_chat(page).locator(".chat-mode-label")).to_have_text("Mode")
    mode.select_option(label="Explore")
    _turn(page, "Plan it")
    steps = _chat(page).locator(".reasoning-step")
    expect(steps).to_have_count(1)
    expect(steps.first.locator(".step-status")).to_have_text("Not available in Explore mode")
    page.reload()
    expect(_chat(page).locator(".reasoning-step .step-status")).to_have_text("Not available in Explore mode")


def test_preference_buttons_show_beside_the_locked_badge_without_covering_it(page, haico_server):
    new_thread_for(page, haico_server.url, "ada")
    add = open_add_form(page, "Preferences", "Add preference")
    add.get_by_label("Preference title").fill("Budget under 1500 euros")
    add.get_by_role("button", name="Add").click()
    prefs = page.get_by_role("region", name="Preferences")
    prefs.get_by_role("toolbar", name="Actions for preference Budget under 1500 euros").get_by_role("button", name="Lock").click()
    row = prefs.get_by_role("listitem").filter(has_text="Budget under 1500 euros")
    badge = row.get_by_text("Locked", exact=True)
    expect(badge).to_be_visible()
    page.mouse.move(0, 0)  # nothing hovered
    for name in ("Unlock", "Edit", "Delete"):
        button = row.get_by_role("button", name=name, exact=True)
        expect(button).to_be_visible()
        assert button.evaluate("el => getComputedStyle(el).opacity") == "1"
        a, b = button.bounding_box(), badge.bounding_box()
        apart = (
            a["x"] + a["width"] <= b["x"]
            or b["x"] + b["width"] <= a["x"]
            or a["y"] + a["height"] <= b["y"]
            or b["y"] + b["height"] <= a["y"]
        )
        assert apart, (name, a, b)


# --- history, feedback, the thread list, the login page ------------------------------------------


@pytest.mark.parametrize("size", SIZES[:2], ids=["1440x900", "1024x768"])
def test_the_document_history_overlaps_nothing_and_compare_names_its_versions(page, haico_server, size):
    page.set_viewport_size(size)
    new_thread_for(page, haico_server.url, "ada")
    document = page.get_by_role("region", name="Document")
    for n in range(1, 5):
        document_text(page).fill(f"Version {n} of the text.")
        document.get_by_role("textbox", name="Document title").press("Enter")
        expect(page.locator("#doc-save-state input[name=base_version]")).to_have_value(str(n))
    document.get_by_role("button", name="History", exact=True).click()
    history = page.get_by_role("region", name="Document history")
    close = history.get_by_role("button", name="Close history")
    expect(close).to_be_visible()
    for other in (document.get_by_role("button", name="Export"), page.locator("[data-doc-status]"), document_text(page)):
        a, b = close.bounding_box(), other.bounding_box()
        assert (
            a["y"] >= b["y"] + b["height"] - 1
            or b["y"] >= a["y"] + a["height"] - 1
            or a["x"] >= b["x"] + b["width"]
            or b["x"] >= a["x"] + a["width"]
        ), (a, b)
    expect(history.locator(".doc-history-who").first).to_have_text("ada")  # the person, by name

    history.get_by_role("button", name="Compare version 2 with now").click()
    changes = history.get_by_role("region", name="Changes between versions")
    expect(changes.get_by_role("heading")).to_have_text("Changes from version 2 to now (version 4)")
    compare = history.get_by_role("form", name="Compare two versions")
    expect(compare.get_by_label("From version")).to_have_value("2")
    expect(compare.get_by_label("to version")).to_have_value("")


def test_the_feedback_form_fits_the_chat_and_asks_for_an_artifact_only_when_it_is_about_one(new_page, server):
    page = new_page()
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    _turn(page, "Hello there")
    _chat(page).get_by_role("button", name="Feedback on turn 1").click()
    form = _chat(page).get_by_role("group", name="Leave feedback")
    expect(form).to_be_visible()
    chat_box = _chat(page).bounding_box()
    for field in (
        form.get_by_label("About"),
        form.get_by_label("Aspect"),
        form.get_by_label("Comment (optional)"),
        form.get_by_role("radio", name="5 (excellent)"),
    ):
        box = field.bounding_box()
        assert box["x"] >= chat_box["x"] and box["x"] + box["width"] <= chat_box["x"] + chat_box["width"], (field, box, chat_box)
    which = form.get_by_label("Which artifact")
    expect(which).to_be_hidden()
    form.get_by_label("About").select_option(label="An artifact")
    expect(which).to_be_visible()
    expect(which.locator("option").first).to_have_text("No artifacts by this turn")
    assert "-----" not in which.inner_text()


def test_the_thread_list_offers_import_as_a_button_and_the_login_page_sends_a_signed_in_person_on(page, haico_server):
    sign_up_quickly(page, haico_server.url, "ada")
    page.goto(f"{haico_server.url}/threads/")
    header = page.locator(".threads-header")
    new, choose = header.get_by_role("button", name="New thread"), header.get_by_text("Import a thread archive…")
    expect(new).to_be_visible()
    expect(choose).to_be_visible()
    assert new.bounding_box()["x"] < choose.bounding_box()["x"]  # after New thread
    picker = page.get_by_label("Import a thread archive")
    assert picker.bounding_box()["width"] <= 1  # no raw file picker on show
    assert choose.evaluate("el => getComputedStyle(el).borderStyle") == "solid"  # drawn as a button

    page.goto(f"{haico_server.url}/accounts/login/")
    expect(page).to_have_url(f"{haico_server.url}/threads/")
    expect(page.get_by_role("button", name="Log in")).to_have_count(0)
