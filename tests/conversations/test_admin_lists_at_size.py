"""Staff's admin lists at a team's year of rows (docs/adr/0148): a list
narrows by date, model, provider and person without a statement over every
row (no list of years, no DISTINCT over the table), the activity log's search
reads messages and not traces, and the refused deletion of an account that
owns threads is answered before Django walks every related row."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import ActivityLogEntry, BranchLink, Feedback, ModelUsage, ModerationAction
from workspace.models import Thread

pytestmark = pytest.mark.django_db

# Django's date hierarchy lists the years (then months) of every row: a
# truncation of the date column over the whole table.
YEARS_OF_EVERY_ROW = re.compile(r"trunc", re.IGNORECASE)


def _sql(client, url):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, url
    return response, [q["sql"] for q in ctx.captured_queries]


@pytest.fixture
def calls(owner, other_user, thread):
    rows = [
        ModelUsage(user=who, thread=thread, provider_name=provider, model=model, input_tokens=10, output_tokens=5)
        for who in (owner, other_user)
        for provider, model in (("prov-a", "model-a"), ("prov-b", "model-b"))
        for _ in range(3)
    ]
    ModelUsage.objects.bulk_create(rows)


def test_staff_model_call_list_narrows_by_time_model_provider_and_person_without_reading_every_call(staff_client, calls):
    response, sql = _sql(staff_client, "/admin/conversations/modelusage/")
    page = response.content.decode()
    assert not [q for q in sql if YEARS_OF_EVERY_ROW.search(q) or "DISTINCT" in q.upper()], sql
    # The choices staff narrow by are still there.
    for link in ("?model=model-a", "?model=model-b", "?provider=prov-b", "?person=intruder", "created_at__gte"):
        assert link in page, link
    assert "Past 7 days" in page

    narrowed = staff_client.get("/admin/conversations/modelusage/", {"model": "model-b", "person": "intruder"})
    assert narrowed.context["cl"].result_count == 3


def test_staff_model_call_filter_keeps_a_model_chosen_by_address(staff_client, calls):
    page = staff_client.get("/admin/conversations/modelusage/", {"model": "retired-model"}).content.decode()
    assert "?model=retired-model" in page
    assert "0 model calls" in page


@pytest.fixture
def rows_of_every_list(owner, staff, thread):
    branch = Thread.objects.create(owner=owner, title="A branch")
    BranchLink.objects.create(thread=branch, parent=thread, branch_point_turn=0, status=BranchLink.Status.ACTIVE)
    ModerationAction.objects.create(thread=thread, staff_user=staff, action="soft_delete", detail="x")
    ActivityLogEntry.objects.create(thread=thread, message="Turn ended", person_username="owner")
    Feedback.objects.create(thread=thread, user=owner, turn_index=1, rating=4, comment="useful")


@pytest.mark.parametrize(
    "url",
    [
        "/admin/conversations/modelusage/",
        "/admin/conversations/activitylogentry/",
        "/admin/workspace/thread/",
        "/admin/conversations/moderationaction/",
        "/admin/conversations/branchlink/",
        "/admin/conversations/feedback/",
        "/admin/workspace/workspacesnapshot/",
        "/admin/workspace/preference/",
        "/admin/workspace/objective/",
        "/admin/workspace/objectiverevision/",
        "/admin/workspace/planchange/",
        "/admin/workspace/document/",
        "/admin/workspace/documentrevision/",
        "/admin/workspace/artifact/",
    ],
)
def test_staff_lists_narrow_by_date_without_listing_the_years_of_every_row(staff_client, rows_of_every_list, url):
    response, sql = _sql(staff_client, url)
    assert not [q for q in sql if YEARS_OF_EVERY_ROW.search(q)], sql
    assert "Past 7 days" in response.content.decode()


# What a failed turn logs: the error and its trace, a few kilobytes.
TRACE = "Traceback (most recent call last):\n" + "  File agent/turn.py, line 120, in run\n" * 60


def test_staff_search_the_activity_log_by_message_not_by_trace(staff_client, thread):
    ActivityLogEntry.objects.create(thread=thread, message="The zebra chart failed", detail=TRACE)
    ActivityLogEntry.objects.create(thread=thread, message="Provider error", detail=TRACE + "zebra")

    response, sql = _sql(staff_client, "/admin/conversations/activitylogentry/?q=zebra")

    messages = [entry.message for entry in response.context["cl"].result_list]
    assert messages == ["The zebra chart failed"]
    # One count, of what the search found: not a second of the whole log.
    assert len([q for q in sql if "COUNT(" in q.upper()]) == 1, sql


def test_staff_open_delete_on_an_owner_of_threads_and_are_refused_before_their_rows_are_read(staff_client, owner, thread):
    ActivityLogEntry.objects.create(thread=thread, message="Turn ended", person_username="owner")

    response, sql = _sql(staff_client, f"/admin/auth/user/{owner.pk}/delete/")

    page = response.content.decode()
    assert "Cannot delete user" in page
    blocked = page.split("following types of objects", 1)[1].split("</ul>", 1)[0]
    assert "<li>thread</li>" in blocked
    read = [q for q in sql if "workspace_workspacesnapshot" in q or "conversations_activitylogentry" in q]
    assert not read, read


def test_staff_select_an_owner_of_threads_for_delete_in_the_people_list_and_are_refused_alike(staff_client, owner, thread):
    with CaptureQueriesContext(connection) as ctx:
        response = staff_client.post("/admin/auth/user/", {"action": "delete_selected", "_selected_action": [owner.pk]})
    page = response.content.decode()
    assert "Cannot delete user" in page and "<li>thread</li>" in page
    assert not [q["sql"] for q in ctx.captured_queries if "conversations_activitylogentry" in q["sql"]]

    staff_client.post("/admin/auth/user/", {"action": "delete_selected", "_selected_action": [owner.pk], "post": "yes"})
    assert Thread.objects.filter(pk=thread.pk, owner=owner).exists()
