"""conversations.staff_view and its page: staff open a thread's workspace
read-only from the admin ("View on site"); nobody else can, its owner
included; every visit is in the moderation history."""

import re

import pytest

from conversations.models import ModerationAction
from conversations.services import thread_soft_delete
from tests.conftest import PASSWORD
from tests.support.web import HTMX
from workspace.services import artifacts as artifact_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace(thread):
    objective_services.objective_set(thread=thread, text="Review soil carbon studies")
    preference_services.preference_add(
        thread=thread, title="Peer-reviewed only", subtitle="No blogs", kind="hard", respect_lock=False
    )
    step = plan_services.todo_add(thread=thread, text="Find the studies")
    plan_services.todo_add(thread=thread, text="Read the abstracts", parent=step)
    document_services.document_save(thread=thread, title="Notes", content="# Findings\n\n- [x] searched")
    artifact_services.artifact_create(
        thread=thread,
        artifact_type="data_table",
        title="Studies",
        payload={"columns": ["Name"], "rows": [["Smith 2021"]]},
        turn_index=1,
    )
    return thread


def url(thread) -> str:
    return f"/threads/{thread.pk}/staff-view/"


def main_of(response) -> str:
    """The page below the top bar (whose log-out form every page has)."""
    return response.content.decode().split("<main", 1)[1]


def test_staff_see_the_whole_workspace_read_only_with_the_banner(staff_client, workspace):
    response = staff_client.get(url(workspace))
    assert response.status_code == 200
    main = main_of(response)
    assert "Read-only view for staff." in main and "owner’s workspace" in main
    for text in (
        "Review soil carbon studies",
        "Peer-reviewed only",
        "No blogs",
        "Find the studies",
        "Read the abstracts",
        "<h1>Findings</h1>",
        "Studies",
        "Smith 2021",
    ):
        assert text in main, text
    # Nothing to edit with, no turn to start; its one socket only listens (it is the staff route's).
    for control in (
        "<form",
        "<textarea",
        "<select",
        "hx-post",
        "hx-get",
        "ws-send",
        "contenteditable",
        "data-pref-act",
        "step-menu",
    ):
        assert control not in main, control
    assert re.findall(r'ws-connect="([^"]+)"', main) == [f"/ws/staff/threads/{workspace.pk}/"]
    assert re.findall(r"<input[^>]*>", main) == [m for m in re.findall(r"<input[^>]*>", main) if "disabled" in m]
    page = response.content.decode()
    assert "live.js" not in page and "chat.js" not in page and "document_editor.js" not in page
    assert "js/charts." in page and "js/tables." in page


def test_every_staff_visit_is_recorded_in_the_moderation_history(staff_client, staff, thread):
    staff_client.get(url(thread))
    staff_client.get(url(thread))
    visits = ModerationAction.objects.filter(thread=thread, action=ModerationAction.Action.VIEW_WORKSPACE)
    assert visits.count() == 2 and {v.staff_user for v in visits} == {staff}
    assert "Viewed the workspace (read-only)" in staff_client.get(f"/admin/workspace/thread/{thread.pk}/change/").content.decode()


@pytest.mark.parametrize("who", ["owner", "other_user"])
def test_anyone_not_staff_gets_404_the_owner_too_and_nothing_is_recorded(client, request, who, thread):
    client.force_login(request.getfixturevalue(who))
    for headers in ({}, HTMX):
        response = client.get(url(thread), **headers)
        assert response.status_code == 404 or "Read-only view" not in response.content.decode()
    assert client.get(url(thread)).status_code == 404
    assert not ModerationAction.objects.exists()


def test_anonymous_visitors_are_sent_to_log_in(client, thread):
    response = client.get(url(thread))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_staff_can_view_a_soft_deleted_thread_and_an_unknown_one_is_404(staff_client, thread):
    thread_soft_delete(thread=thread)
    assert "(soft-deleted)" in main_of(staff_client.get(url(thread)))
    assert staff_client.get("/threads/00000000-0000-0000-0000-000000000000/staff-view/").status_code == 404


def test_the_view_takes_no_writes(staff_client, thread):
    assert staff_client.post(url(thread), {}).status_code == 405
    assert not ModerationAction.objects.exists()


def test_the_admin_thread_page_links_to_it_as_view_on_site(staff_client, thread):
    html = staff_client.get(f"/admin/workspace/thread/{thread.pk}/change/").content.decode()
    link = re.search(r'<a href="([^"]+)" class="viewsitelink">', html)
    assert link and link.group(1) == url(thread), "no View on site link to the read-only view"
    assert "Read-only view for staff." in staff_client.get(link.group(1)).content.decode()


def test_a_staff_member_who_is_not_superuser_can_view_too(client, django_user_model, thread):
    from django.contrib.auth.models import Group, Permission

    moderators = Group.objects.create(name="Moderators")
    moderators.permissions.add(Permission.objects.get(codename="view_thread", content_type__app_label="workspace"))
    moderator = django_user_model.objects.create_user(username="moderator", password=PASSWORD, is_staff=True)
    moderator.groups.add(moderators)
    client.force_login(moderator)
    assert client.get(url(thread)).status_code == 200
    assert ModerationAction.objects.get().staff_user == moderator


def test_staff_without_the_permission_to_view_threads_get_403_as_in_the_admin(client, django_user_model, thread):
    from django.contrib.auth.models import Permission

    bare = django_user_model.objects.create_user(username="bare-staff", password=PASSWORD, is_staff=True)
    client.force_login(bare)
    response = client.get(url(thread))
    assert response.status_code == 403 and "Not allowed" in response.content.decode()
    assert "Lit review" not in response.content.decode()
    admin_review = client.get(f"/admin/workspace/thread/{thread.pk}/review/")
    assert admin_review.status_code == 403
    assert not ModerationAction.objects.exists()
    # Given the admin's permission to view threads, they see it (and it is recorded).
    bare.user_permissions.add(Permission.objects.get(codename="view_thread", content_type__app_label="workspace"))
    client.force_login(django_user_model.objects.get(pk=bare.pk))
    assert client.get(url(thread)).status_code == 200
    assert client.get(f"/admin/workspace/thread/{thread.pk}/review/").status_code == 200
    assert ModerationAction.objects.filter(thread=thread, staff_user=bare).count() == 2


def test_staff_see_a_long_tables_first_rows_and_how_many_it_has(staff_client, thread):
    """The staff page shows each table as the owner's centre panel does, its
    first 500 rows; the owner's "Show all" is not offered (docs/adr/0141)."""
    rows = [[f"Study {n}"] for n in range(800)]
    artifact_services.artifact_create(
        thread=thread, artifact_type="data_table", title="Studies", payload={"columns": ["Name"], "rows": rows}, turn_index=1
    )
    main = main_of(staff_client.get(url(thread)))
    assert main.count("<tr><td") == 500 and "<td>Study 499</td>" in main and "<td>Study 500</td>" not in main
    assert "Showing the first 500 of 800 rows" in main and "Show all" not in main
