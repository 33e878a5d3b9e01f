"""Presence in the top bar, in Chromium against the real server (daphne):
who has the thread open now, as initials with the name on hover, pushed to
every open tab within 2 seconds of a tab opening or closing; a person with
two tabs open is one presence until their last tab closes (docs/adr/0087)."""

from playwright.sync_api import Page, expect

from .helpers import new_thread_for, open_second_tab, wait_for_socket

PUSH_WITHIN_MS = 2000


def _mark(page: Page) -> None:
    """Tag the presence shown now, so the test can tell a pushed one from it."""
    page.locator("#presence").evaluate("(el) => { el.dataset.shownBefore = 'yes'; }")


def _expect_pushed(page: Page) -> None:
    expect(page.locator("#presence:not([data-shown-before])")).to_have_count(1, timeout=PUSH_WITHIN_MS)


def test_the_owners_second_tab_opens_and_closes_and_the_first_tab_keeps_showing_them(page, haico_server):
    url = new_thread_for(page, haico_server.url, "ada")
    wait_for_socket(page)
    present = page.get_by_role("banner").get_by_role("img", name="Open now: ada")
    expect(present).to_have_text("A")
    expect(present.locator(".presence-person")).to_have_attribute("title", "ada")
    assert haico_server.query("SELECT count(*) FROM conversations_openpage") == [(1,)]

    _mark(page)
    second = open_second_tab(page, url)
    _expect_pushed(page)
    expect(present).to_have_text("A")  # one presence for two tabs
    expect(second.get_by_role("banner").get_by_role("img", name="Open now: ada")).to_have_text("A")
    assert haico_server.query("SELECT count(*) FROM conversations_openpage") == [(2,)]

    _mark(page)
    second.close()
    _expect_pushed(page)
    expect(present).to_have_text("A")  # still open here
    assert haico_server.query("SELECT count(*) FROM conversations_openpage") == [(1,)]
