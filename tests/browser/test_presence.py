"""Presence in the top bar, in Chromium against the real server (daphne):
who has the thread open now, as initials with the name on hover, pushed to
every open tab within 2 seconds of a tab opening or closing; a person with
two tabs open is one presence until their last tab closes; a tab on
another server process is pushed through the Redis channel layer; a killed
server's open pages are gone once it starts again (docs/adr/0087)."""

import time

import pytest
from playwright.sync_api import Page, expect

from .helpers import log_in, new_thread_for, open_second_tab, thread_id_from, wait_for_socket

PUSH_WITHIN_MS = 2000


def _mark(page: Page) -> None:
    """Tag the presence shown now, so the test can tell a pushed one from it."""
    page.locator("#presence").evaluate("(el) => { el.dataset.shownBefore = 'yes'; }")


def _expect_pushed(page: Page) -> None:
    expect(page.locator("#presence:not([data-shown-before])")).to_have_count(1, timeout=PUSH_WITHIN_MS)


def _open_pages(server) -> list[tuple]:
    return server.query("SELECT instance, boot FROM conversations_openpage")


def _until(condition, timeout: float = 15.0) -> None:
    """Poll the server's database until `condition()` (rows are written by
    the server, not pushed to the page)."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_the_owners_second_tab_opens_and_closes_and_the_first_tab_keeps_showing_them(page, haico_server):
    url = new_thread_for(page, haico_server.url, "ada")
    wait_for_socket(page)
    present = page.get_by_role("banner").get_by_role("img", name="Open now: ada")
    expect(present).to_have_text("A")
    expect(present.locator(".presence-person")).to_have_attribute("title", "ada")
    # The page shows its own person from the start; the server records the
    # open page just after the socket opens (it joins the thread's group first).
    _until(lambda: len(_open_pages(haico_server)) == 1, timeout=PUSH_WITHIN_MS / 1000)
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


def test_another_person_appears_when_they_open_the_shared_thread_and_disappears_when_they_leave(
    owner_workspace, haico_server, new_page
):
    owner, url = owner_workspace
    haico_server.create_user("bea")
    haico_server.manage(
        "shell",
        "-c",
        "import uuid; from django.contrib.auth import get_user_model; from workspace.models import Thread; "
        "from conversations.sharing import thread_member_add; "
        f"t = Thread.objects.get(pk=uuid.UUID('{url.rstrip('/').split('/')[-2]}')); "
        "thread_member_add(thread=t, who='bea', role='viewer', by=t.owner)",
    )
    banner = owner.get_by_role("banner")
    expect(banner.get_by_role("img", name="Open now: ada")).to_be_visible()

    _mark(owner)
    other = new_page()
    log_in(other, haico_server.url, "bea")
    other.goto(url)
    wait_for_socket(other)
    _expect_pushed(owner)
    both = banner.get_by_role("img", name="Open now: ada, bea")
    # What this wide page shows: both, and no "+1" (a narrow one's, hidden).
    expect(both.locator(".presence-person:visible")).to_have_text(["A", "B"])
    expect(both.locator(".presence-more:visible")).to_have_count(0)
    expect(both.locator('.presence-person[title="bea"]')).to_have_count(1)
    # The other person's page shows both as well.
    expect(other.get_by_role("banner").get_by_role("img", name="Open now: ada, bea")).to_be_visible()

    _mark(owner)
    other.close()
    _expect_pushed(owner)
    expect(banner.get_by_role("img", name="Open now: ada")).to_have_text("A")


def test_a_killed_servers_open_pages_are_gone_once_it_starts_again(page, haico_server):
    new_thread_for(page, haico_server.url, "ada")
    wait_for_socket(page)
    _until(lambda: len(_open_pages(haico_server)) == 1, timeout=PUSH_WITHIN_MS / 1000)  # recorded just after the socket opens
    [(instance, boot_before)] = _open_pages(haico_server)

    haico_server.kill()
    assert _open_pages(haico_server) == [(instance, boot_before)]  # nothing got to clean up
    haico_server.start()

    # The tab reconnects by itself: its new socket's row, on the new boot, is the only one.
    _until(lambda: [boot != boot_before for _instance, boot in _open_pages(haico_server)] == [True])
    [(instance_after, boot_after)] = _open_pages(haico_server)
    assert instance_after == instance and boot_after != boot_before
    expect(page.get_by_role("banner").get_by_role("img", name="Open now: ada")).to_have_text("A")


@pytest.mark.postgres
@pytest.mark.redis
def test_a_tab_opening_and_closing_on_another_server_is_pushed_to_this_one(
    new_page, start_haico_server, migrated_postgres_database_url, redis_url
):
    server_a = start_haico_server({"REDIS_URL": redis_url}, database_url=migrated_postgres_database_url)
    server_b = start_haico_server({"REDIS_URL": redis_url}, database_url=migrated_postgres_database_url)
    tab_a = new_page()
    url_a = new_thread_for(tab_a, server_a.url, "ada")
    wait_for_socket(tab_a)
    present = tab_a.get_by_role("banner").get_by_role("img", name="Open now: ada")
    expect(present).to_have_text("A")

    _mark(tab_a)
    # Same browser context: the session (in the shared database) logs it in on server B.
    tab_b = tab_a.context.new_page()
    tab_b.goto(url_a.replace(server_a.url, server_b.url))
    wait_for_socket(tab_b)
    _expect_pushed(tab_a)  # through Redis, from server B
    expect(present).to_have_text("A")

    _mark(tab_a)
    tab_b.close()
    _expect_pushed(tab_a)
    expect(present).to_have_text("A")


TEAM = ["bea", "cal", "dee", "eve", "fay", "gus", "hal", "ivy", "jon"]
# From a laptop's full width down to a phone's.
WIDTHS = (1280, 1024, 800, 390)


def test_a_teams_presence_keeps_the_top_bar_on_the_screen_at_every_width(page, haico_server):
    """Ten people with the thread open: before, their initials pushed the
    account links off the screen below 1 280 px, squeezed the title to
    nothing, and made the page scroll sideways on a phone."""
    url = new_thread_for(page, haico_server.url, "ada")
    thread_id = thread_id_from(url)
    # Their open pages, as their sockets would have recorded them (a page's
    # presence is read from these rows when it is rendered).
    haico_server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from conversations.models import OpenPage\n"
        f"for name in {TEAM!r}:\n"
        "    user = User.objects.create_user(username=name, password='a-long-pass-4826')\n"
        f"    OpenPage.objects.create(thread_id='{thread_id}', user=user, channel_name='test!' + name, instance='test', boot='x')\n",
    )
    page.goto(url)
    banner = page.get_by_role("banner")
    presence = banner.get_by_role("img", name="Open now: ada, " + ", ".join(TEAM))
    expect(presence).to_be_visible()

    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 800})
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= width, f"{width} px: the page scrolls sideways ({scroll_width} px)"
        log_out = banner.get_by_role("button", name="Log out").bounding_box()
        assert log_out is not None and log_out["x"] + log_out["width"] <= width, f"{width} px: Log out is off the screen"
        title = page.locator(".topbar-title-box").bounding_box()
        assert title is not None and title["width"] >= 40, f"{width} px: the title is squeezed to {title}"
        shown = presence.locator(".presence-person:visible")
        more = presence.locator(".presence-more:visible")
        if width >= 1024:
            expect(shown).to_have_text(["A", "B", "C", "D"])
            expect(more).to_have_text("+6")
            expect(more).to_have_attribute("title", ", ".join(TEAM[3:]))
        else:
            expect(shown).to_have_text(["A"])
            expect(more).to_have_text("+9")
            expect(more).to_have_attribute("title", ", ".join(TEAM))
