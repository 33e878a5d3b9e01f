"""Accounts in a real browser: sign up, log in and out, and one person's
thread is invisible to another (404, never a 403 that confirms it exists)."""

import re

from playwright.sync_api import expect

from .helpers import WORKSPACE_URL, log_in, new_thread_for, sign_up, sign_up_quickly, thread_id_from


def test_signup_creates_the_account_and_opens_an_empty_thread_list(page, haico_server):
    sign_up(page, haico_server.url, "ada")

    expect(page.get_by_text("No threads yet.")).to_be_visible()
    assert haico_server.query("SELECT username FROM auth_user") == [("ada",)]


def test_log_out_then_log_in_again(page, haico_server):
    haico_server.create_user("grace")
    log_in(page, haico_server.url, "grace")

    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.get_by_role("button", name="Log out")).to_have_count(0)
    page.goto(f"{haico_server.url}/threads/")
    expect(page).to_have_url(f"{haico_server.url}/accounts/login/?next=/threads/")

    log_in(page, haico_server.url, "grace")
    expect(page.get_by_role("heading", name="Your threads")).to_be_visible()


def test_wrong_password_is_refused_with_a_message(page, haico_server):
    haico_server.create_user("grace")
    page.goto(f"{haico_server.url}/accounts/login/")
    page.get_by_label("Username").fill("grace")
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Log in").click()

    expect(page.get_by_role("alert")).to_contain_text("do not match")
    expect(page.get_by_role("button", name="Log out")).to_have_count(0)


def test_new_thread_opens_its_workspace_and_is_listed(page, haico_server):
    url = new_thread_for(page, haico_server.url, "ada")

    for region in ("Preferences", "Planning", "Document", "Chat"):
        expect(page.get_by_role("region", name=region)).to_be_visible()
    owner = haico_server.query(
        "SELECT u.username FROM conversations_thread t JOIN auth_user u ON u.id = t.owner_id WHERE t.id = ?",
        (thread_id_from(url).replace("-", ""),),
    )
    assert owner == [("ada",)]

    page.goto(f"{haico_server.url}/threads/")
    page.get_by_role("list", name="Threads").get_by_role("link").first.click()
    expect(page).to_have_url(WORKSPACE_URL)
    assert page.url == url


def test_another_person_gets_404_on_a_thread_url_they_do_not_own(new_page, haico_server):
    owner_page = new_page()
    url = new_thread_for(owner_page, haico_server.url, "ada")

    intruder_page = new_page()
    sign_up_quickly(intruder_page, haico_server.url, "mallory")
    response = intruder_page.goto(url)

    assert response.status == 404
    for region in ("Preferences", "Planning", "Document", "Chat"):
        expect(intruder_page.get_by_role("region", name=region)).to_have_count(0)
    intruder_page.goto(f"{haico_server.url}/threads/")
    expect(intruder_page.get_by_text("No threads yet.")).to_be_visible()

    # The owner still has it.
    assert owner_page.goto(url).status == 200


def test_anonymous_visitor_is_sent_to_log_in_from_a_thread_url(new_page, haico_server):
    owner_page = new_page()
    url = new_thread_for(owner_page, haico_server.url, "ada")

    anonymous = new_page()
    anonymous.goto(url)
    expect(anonymous).to_have_url(re.compile(r"/accounts/login/\?next="))
    expect(anonymous.get_by_role("region", name="Document")).to_have_count(0)
