"""A person told the truth about what became of their words, in Chromium:
staff deactivate their account while they type (the page says it was
deactivated, never "log in again", and the words stay where they typed
them); an editor's share is removed while they have unsaved document words
(they are told, the words stay in the editor, and the thread list later
shows them once to copy). docs/adr/0108, 0040."""

import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import OWNER, PASSWORD
from .helpers import document_status, document_text, log_in, thread_id_from, wait_for_socket

pytestmark = pytest.mark.browser

DEACTIVATED = "Your account has been deactivated, so nothing more can be saved here."


def _make_staff(server, username="boss"):
    server.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_superuser(username={username!r}, password={PASSWORD!r}, email='boss@example.com')",
    )


def _user_id(server, username):
    return server.query("SELECT id FROM auth_user WHERE username = ?", (username,))[0][0]


def _deactivate_in_the_admin(staff: Page, server, username):
    staff.goto(f"{server.url}/admin/auth/user/{_user_id(server, username)}/change/")
    staff.get_by_label("Active").uncheck()
    staff.get_by_role("button", name="Save", exact=True).click()
    expect(staff.locator(".messagelist")).to_contain_text("was changed successfully")


def _stored_document(server, thread_id):
    rows = server.query("SELECT content FROM workspace_document WHERE thread_id = ?", (thread_id.replace("-", ""),))
    return rows[0][0] if rows else None


def test_a_person_deactivated_while_typing_is_told_so_and_keeps_their_words(owner_workspace, haico_server, new_page):
    page, url = owner_workspace
    thread_id = thread_id_from(url)
    _make_staff(haico_server)
    staff = new_page()
    log_in(staff, haico_server.url, "boss")

    composer = page.get_by_role("textbox", name="Message")
    composer.fill("A question I was still writing")
    _deactivate_in_the_admin(staff, haico_server, OWNER)

    # At once, when the page's socket is closed for it: the truth, and no "Log in again".
    flash = page.locator("#flash")
    expect(flash).to_contain_text(DEACTIVATED)
    expect(flash.get_by_role("link", name="Log in again")).to_have_count(0)
    expect(page.locator("#chat-notice")).to_contain_text(DEACTIVATED)
    expect(page.locator("#chat-pending")).to_contain_text("your account has been deactivated")

    # Typing in the document after: refused, said plainly, and kept in the editor.
    document_text(page).click()
    page.keyboard.type("Words typed after the deactivation.", delay=5)
    region = page.get_by_role("region", name="Document")
    expect(region.get_by_role("alert")).to_contain_text("your account has been deactivated", timeout=10_000)
    expect(document_status(page)).to_have_text("Not saved")
    expect(flash).to_contain_text(DEACTIVATED)
    expect(flash).not_to_contain_text("log in again")
    expect(flash).not_to_contain_text("Log in again")

    # Send pressed again: still not "log in", and the message is still there.
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-pending")).to_contain_text("your account has been deactivated")
    expect(composer).to_have_value("A question I was still writing")
    expect(document_text(page)).to_have_value("Words typed after the deactivation.")
    assert page.url == url
    assert _stored_document(haico_server, thread_id) is None
    assert not re.search(r"log in again", page.locator("body").inner_text(), re.IGNORECASE)

    # The login page this browser reaches says why logging in fails.
    login = page.context.new_page()
    login.goto(f"{haico_server.url}/accounts/login/")
    expect(login.get_by_role("alert")).to_contain_text("has been deactivated")
    login.get_by_label("Username").fill(OWNER)
    login.get_by_label("Password").fill(PASSWORD)
    login.get_by_role("button", name="Log in").click()
    expect(login.get_by_text("has been deactivated")).to_be_visible()
    expect(login.get_by_text("That username and password do not match.")).to_be_visible()


def test_the_login_page_of_another_browser_stays_generic_for_a_deactivated_username(haico_server, new_page):
    haico_server.create_user("cleo")
    page = new_page()
    log_in(page, haico_server.url, "cleo")
    haico_server.manage(
        "shell", "-c", "from django.contrib.auth.models import User; User.objects.filter(username='cleo').update(is_active=False)"
    )
    stranger = new_page()
    stranger.goto(f"{haico_server.url}/accounts/login/")
    stranger.get_by_label("Username").fill("cleo")
    stranger.get_by_label("Password").fill(PASSWORD)
    stranger.get_by_role("button", name="Log in").click()
    expect(stranger.get_by_role("alert")).to_have_text("That username and password do not match. Please try again.")
    expect(stranger.get_by_text("deactivated")).to_have_count(0)


def _share(owner: Page, who: str) -> None:
    dialog = owner.get_by_role("dialog", name="Share")
    if not dialog.is_visible():
        owner.get_by_role("button", name="Share").click()
    dialog.get_by_label("Username or email").fill(who)
    dialog.get_by_label("Role", exact=True).select_option(label="Editor")
    dialog.get_by_role("button", name="Add person").click()
    expect(dialog.get_by_role("status")).to_have_text(f"{who} can now edit this thread.")


def _remove(owner: Page, who: str) -> None:
    people = owner.get_by_role("dialog", name="Share").get_by_role("list", name="People on this thread")
    people.get_by_role("listitem").filter(has_text=who).get_by_role("button", name="Remove", exact=True).click()
    expect(owner.get_by_role("dialog", name="Share").get_by_role("status")).to_contain_text("Removed")


def _editor_with_unsaved_words(owner: Page, url: str, server, new_page) -> Page:
    """Bea, made an editor, with words in the document and the chat box
    that are not saved: her saves are held back."""
    server.create_user("bea")
    _share(owner, "bea")
    editor = new_page()
    log_in(editor, server.url, "bea")
    editor.goto(url)
    wait_for_socket(editor)
    editor.route("**/document/save/", lambda route: None)
    document_text(editor).click()
    editor.keyboard.type("Bea's paragraph, never saved.", delay=5)
    editor.get_by_role("textbox", name="Message").fill("Bea's unsent question")
    return editor


def test_an_editor_removed_with_unsaved_words_is_told_and_finds_them_on_the_thread_list(owner_workspace, haico_server, new_page):
    owner, url = owner_workspace
    editor = _editor_with_unsaved_words(owner, url, haico_server, new_page)

    _remove(owner, "bea")
    expect(editor.get_by_role("region", name="Chat")).to_contain_text("This thread does not exist or is not yours.")
    region = editor.get_by_role("region", name="Document")
    expect(region.get_by_role("alert")).to_contain_text("It is still in the editor: copy it to keep it.")
    expect(editor.locator("#chat-pending")).to_contain_text("Your message is still in the box")
    expect(document_text(editor)).to_have_value("Bea's paragraph, never saved.")
    expect(editor.get_by_role("textbox", name="Message")).to_have_value("Bea's unsent question")
    editor.wait_for_timeout(2_500)  # an autosave's delay: the words stay
    expect(document_text(editor)).to_have_value("Bea's paragraph, never saved.")

    editor.on("dialog", lambda dialog: dialog.accept())  # "Leave site?": Leave
    editor.get_by_role("link", name="Threads").click()
    kept = editor.get_by_role("region", name="Words that could not be saved")
    expect(kept).to_be_visible()
    # Under the list's heading, not above the page's own header.
    assert editor.evaluate("() => document.getElementById('words-kept').previousElementSibling.matches('.threads-header')")
    expect(kept).to_contain_text("Words you typed in “")
    expect(kept.get_by_role("textbox")).to_have_count(2)
    expect(kept.locator("textarea").nth(0)).to_have_value("Bea's paragraph, never saved.")
    expect(kept.locator("textarea").nth(1)).to_have_value("Bea's unsent question")

    # Another person signed in to this tab later never sees them.
    other = editor.context.new_page()
    other.goto(f"{haico_server.url}/threads/")
    expect(other.get_by_role("region", name="Words that could not be saved")).to_have_count(0)  # a new tab: its own storage
    other.close()

    for _ in range(2):
        kept.get_by_role("button", name=re.compile("^Dismiss")).first.click()
    expect(kept).to_have_count(0)
    editor.reload()
    expect(editor.get_by_role("heading", name="Your threads")).to_be_visible()
    expect(editor.get_by_role("region", name="Words that could not be saved")).to_have_count(0)


def test_kept_words_of_another_person_in_the_same_tab_are_not_shown(haico_server, new_page):
    haico_server.create_user("dan")
    page = new_page()
    log_in(page, haico_server.url, "dan")
    page.evaluate(
        """() => sessionStorage.setItem('haico:words-lost:999999:document:/x/',
        JSON.stringify({thread: 'Someone else', what: 'document', title: '', text: 'not yours'}))"""
    )
    person = page.evaluate("document.body.getAttribute('data-person')")
    page.evaluate(
        f"""() => sessionStorage.setItem('haico:words-lost:{person}:document:/y/',
        JSON.stringify({{thread: '<b>Mine</b>', what: 'document', title: '', text: '<img src=x>mine'}}))"""
    )
    page.reload()
    kept = page.get_by_role("region", name="Words that could not be saved")
    expect(kept).to_contain_text("Words you typed in “<b>Mine</b>” could not be saved")
    expect(kept.locator("textarea")).to_have_count(1)
    expect(kept.locator("textarea")).to_have_value("<img src=x>mine")
    expect(kept.locator("img")).to_have_count(0)
    expect(kept).not_to_contain_text("not yours")


def test_words_kept_from_a_lost_thread_stay_when_the_same_thread_is_lost_again(owner_workspace, haico_server, new_page):
    """Bea's share is removed with unsaved words in the document and the
    chat box; she leaves them on the thread list. The owner gives the
    thread back and removes her again while she has it open, typing
    nothing: the words of the first loss are still there to copy (each page
    keeps its own entry; before, the second page dropped them)."""
    owner, url = owner_workspace
    editor = _editor_with_unsaved_words(owner, url, haico_server, new_page)

    _remove(owner, "bea")
    expect(editor.locator("#chat-pending")).to_contain_text("Your message is still in the box")
    editor.on("dialog", lambda dialog: dialog.accept())
    editor.get_by_role("link", name="Threads").click()
    expect(editor.get_by_role("region", name="Words that could not be saved").locator("textarea")).to_have_count(2)

    _share(owner, "bea")
    editor.unroute("**/document/save/")
    editor.goto(url)
    wait_for_socket(editor)
    _remove(owner, "bea")
    expect(editor.get_by_role("region", name="Chat")).to_contain_text("This thread does not exist or is not yours.")
    editor.get_by_role("link", name="Threads").click()
    expect(editor.get_by_role("heading", name="Your threads")).to_be_visible()
    kept = editor.get_by_role("region", name="Words that could not be saved").locator("textarea")
    expect(kept).to_have_count(2)
    assert sorted(kept.nth(i).input_value() for i in range(2)) == ["Bea's paragraph, never saved.", "Bea's unsent question"]
