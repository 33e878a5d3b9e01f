"""The thread list shows each branch under the thread it was branched from,
with its branch point, the fifty most recently active families first and
the older a page at a time (conversations.views.thread_list,
selectors.thread_list_for, selectors.thread_list_page)."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import BranchLink
from tests.support.web import HTMX
from workspace.models import Thread, ThreadMember

pytestmark = pytest.mark.django_db


def _thread(owner, title, *, minutes_ago, parent=None, at=None, status=BranchLink.Status.ACTIVE, deleted=False):
    thread = Thread.objects.create(owner=owner, title=title, is_deleted=deleted)
    # auto_now_add: set afterwards.
    Thread.objects.filter(pk=thread.pk).update(last_activity_at=timezone.now() - timedelta(minutes=minutes_ago))
    if parent is not None:
        BranchLink.objects.create(thread=thread, parent=parent, branch_point_turn=at, status=status)
    return thread


def _rows(html: str) -> list[str]:
    """Each row's title, branch point and indentation, in list order."""
    rows = []
    for row in re.findall(r'<li class="thread-row[^"]*".*?</li>', html, re.DOTALL):
        title = re.search(r'class="thread-title"[^>]*>([^<]*)<', row).group(1)
        point = re.search(r'class="thread-branch-point">([^<]*)<', row)
        depth = re.search(r"--thread-depth: (\d+)", row)
        rows.append(f"{'  ' * int(depth.group(1) if depth else 0)}{title}{' (' + point.group(1) + ')' if point else ''}")
    return rows


def test_branches_are_listed_under_their_parent_with_the_branch_point(owner_client, owner, other_user):
    report = _thread(owner, "Report", minutes_ago=30)
    retry = _thread(owner, "Report", minutes_ago=5, parent=report, at=2)
    _thread(owner, "Report", minutes_ago=20, parent=report, at=0)
    _thread(owner, "Report", minutes_ago=1, parent=retry, at=3)
    _thread(owner, "Holiday", minutes_ago=10)
    _thread(owner, "Being made", minutes_ago=0, parent=report, at=1, status=BranchLink.Status.PENDING, deleted=True)
    _thread(other_user, "Not mine", minutes_ago=0, parent=None)

    html = owner_client.get("/threads/").content.decode()

    assert _rows(html) == [
        "Holiday",
        "Report",
        "  Report (from turn 2 of Report)",
        "    Report (from turn 3 of Report)",
        "  Report (from before turn 1 of Report)",
    ]


def test_a_branch_whose_parent_was_deleted_stands_on_its_own(owner_client, owner):
    parent = _thread(owner, "Gone", minutes_ago=10, deleted=True)
    _thread(owner, "Kept", minutes_ago=5, parent=parent, at=4)
    html = owner_client.get("/threads/").content.decode()
    assert _rows(html) == ["Kept (from turn 4 of Gone)"]


def test_a_renamed_branch_keeps_its_place_and_branch_point(owner_client, owner):
    parent = _thread(owner, "Report", minutes_ago=10)
    branch = _thread(owner, "Report", minutes_ago=5, parent=parent, at=2)
    response = owner_client.post(f"/threads/{branch.pk}/rename/", {"title": "Shorter report"}, **HTMX)
    assert _rows(response.content.decode()) == ["  Shorter report (from turn 2 of Report)"]


def _roots(html: str) -> list[str]:
    return [row for row in _rows(html) if not row.startswith(" ")]


def test_the_list_shows_the_fifty_most_recently_active_families_whole_and_offers_the_older(owner_client, owner):
    threads = [_thread(owner, f"Thread {n}", minutes_ago=n) for n in range(53)]
    _thread(owner, "Thread 49", minutes_ago=0, parent=threads[49], at=1)  # the last family shown keeps its branch

    html = owner_client.get("/threads/").content.decode()

    assert _roots(html) == [f"Thread {n}" for n in range(50)]
    assert _rows(html)[-1] == "  Thread 49 (from turn 1 of Thread 49)"
    assert f'href="?shown=100#thread-{threads[50].pk}">Show older threads</a>' in html
    assert "3 more not shown" in html

    html = owner_client.get("/threads/?shown=100").content.decode()
    assert _roots(html) == [f"Thread {n}" for n in range(53)]
    assert "Show older threads" not in html


@pytest.mark.parametrize("shown", ["abc", "-5", "10", "9" * 5000, "１００", ""])
def test_a_shown_count_that_is_no_page_shows_the_first_page(owner_client, owner, shown):
    for n in range(51):
        _thread(owner, f"Thread {n}", minutes_ago=n)
    response = owner_client.get("/threads/", {"shown": shown})
    assert response.status_code == 200
    assert len(_roots(response.content.decode())) == 50


def test_threads_shared_with_the_person_come_a_page_at_a_time_too(owner_client, owner, other_user):
    shared = [_thread(other_user, f"Theirs {n}", minutes_ago=n) for n in range(52)]
    for thread in shared:
        ThreadMember.objects.create(thread=thread, user=owner, role=ThreadMember.Role.VIEWER)

    html = owner_client.get("/threads/").content.decode()

    assert len(re.findall(r'<li class="thread-row" id="shared-', html)) == 50
    assert f'href="?shown=100#shared-{shared[50].pk}">Show older shared threads</a>' in html
    html = owner_client.get("/threads/?shown=100").content.decode()
    assert len(re.findall(r'<li class="thread-row" id="shared-', html)) == 52
    assert "Show older shared threads" not in html
