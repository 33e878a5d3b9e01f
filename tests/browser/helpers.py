"""Steps a person takes in the browser, shared by the browser tests."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from .conftest import PASSWORD

WORKSPACE_URL = re.compile(r"/threads/([0-9a-f-]{36})/workspace/$")


def sign_up(page: Page, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/signup/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_label("Password confirmation").fill(password)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("heading", name="Your threads")).to_be_visible()
    expect(page.get_by_role("navigation", name="Account")).to_contain_text(username)


def log_in(page: Page, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("navigation", name="Account")).to_contain_text(username)


def create_thread(page: Page, base_url: str) -> str:
    """Click "New thread" on the list; returns the new thread's workspace URL."""
    page.goto(f"{base_url}/threads/")
    page.get_by_role("button", name="New thread").click()
    expect(page).to_have_url(WORKSPACE_URL)
    return page.url


def thread_id_from(url: str) -> str:
    match = WORKSPACE_URL.search(url)
    assert match, url
    return match.group(1)
