"""The thread list shows each branch under the thread it was branched from,
with its branch point (conversations.views.thread_list, selectors.thread_list_for)."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import BranchLink
from tests.support.web import HTMX
from workspace.models import Thread

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
