"""Thread list, new thread, rename, soft delete and the workspace page:
method, access, database effect and what the person sees."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.services import thread_create, thread_soft_delete
from workspace.models import Thread

from .conftest import HTMX, ws_url

pytestmark = pytest.mark.django_db


# --- list ------------------------------------------------------------------------


def test_thread_list_shows_own_live_threads_newest_first(owner_client, owner, other_user):
    older = thread_create(owner=owner, title="Older thread")
    newer = thread_create(owner=owner, title="Newer thread")
    Thread.objects.filter(pk=older.pk).update(last_activity_at=timezone.now() - timedelta(days=2))
    gone = thread_create(owner=owner, title="Deleted thread")
    thread_soft_delete(thread=gone)
    thread_create(owner=other_user, title="Someone else's thread")

    response = owner_client.get("/threads/")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.index("Newer thread") < html.index("Older thread")
    assert "Deleted thread" not in html
    assert "Someone else" not in html
    assert f'href="/threads/{newer.pk}/workspace/"' in html
    assert "Last activity" in html


def test_thread_list_empty_state_offers_new_thread(owner_client):
    html = owner_client.get("/threads/").content.decode()
    assert "No threads yet" in html
    assert "New thread" in html


def test_thread_list_requires_login(client):
    response = client.get("/threads/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_root_redirects_to_thread_list(owner_client):
    response = owner_client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/threads/"


def test_thread_list_refuses_post(owner_client):
    assert owner_client.post("/threads/").status_code == 405


# --- create ------------------------------------------------------------------------


def test_new_thread_creates_and_opens_its_workspace(owner_client, owner):
    response = owner_client.post("/threads/new/")

    thread = Thread.objects.get(owner=owner)
    assert response.status_code == 302
    assert response["Location"] == f"/threads/{thread.pk}/workspace/"
    assert thread.title == "New thread"


def test_new_thread_refuses_get(owner_client, owner):
    assert owner_client.get("/threads/new/").status_code == 405
    assert not Thread.objects.filter(owner=owner).exists()


def test_new_thread_requires_login(client):
    response = client.post("/threads/new/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert not Thread.objects.exists()


# --- rename ------------------------------------------------------------------------


def test_rename_with_htmx_returns_the_renamed_row(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": "  Survey   of methods "}, **HTMX)

    thread.refresh_from_db()
    assert response.status_code == 200
    assert thread.title == "Survey of methods"
    html = response.content.decode()
    assert f'id="thread-{thread.pk}"' in html
    assert "Survey of methods" in html
    assert "<html" not in html


def test_rename_without_htmx_redirects_to_list(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": "Renamed"})
    thread.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == "/threads/"
    assert thread.title == "Renamed"


@pytest.mark.parametrize(
    "title, message",
    [("   ", "Title cannot be empty."), ("x" * 201, "Title is too long (201 characters; the limit is 200).")],
)
def test_rename_bad_title_shows_error_and_keeps_old_title(owner_client, thread, title, message):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": title}, **HTMX)

    thread.refresh_from_db()
    assert response.status_code == 200
    assert thread.title == "Lit review"
    html = response.content.decode()
    assert 'role="alert"' in html
    assert message in html


def test_rename_bad_title_without_htmx_is_400(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": ""})
    assert response.status_code == 400
    thread.refresh_from_db()
    assert thread.title == "Lit review"


def test_rename_refuses_get(owner_client, thread):
    assert owner_client.get(f"/threads/{thread.pk}/rename/").status_code == 405


def test_rename_of_another_users_thread_is_404(other_client, thread):
    response = other_client.post(f"/threads/{thread.pk}/rename/", {"title": "Hijacked"}, **HTMX)
    thread.refresh_from_db()
    assert response.status_code == 404
    assert thread.title == "Lit review"


def test_rename_requires_login(client, thread):
    response = client.post(f"/threads/{thread.pk}/rename/", {"title": "Anon"})
    thread.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert thread.title == "Lit review"


def test_rename_of_deleted_thread_is_404(owner_client, thread):
    thread_soft_delete(thread=thread)
    assert owner_client.post(f"/threads/{thread.pk}/rename/", {"title": "Back"}).status_code == 404


# --- delete ------------------------------------------------------------------------


def test_delete_with_htmx_soft_deletes_and_removes_the_row(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/delete/", **HTMX)

    thread.refresh_from_db()
    assert response.status_code == 200
    assert response.content == b""
    assert thread.is_deleted and thread.deleted_at is not None
    assert "Lit review" not in owner_client.get("/threads/").content.decode()
    assert owner_client.get(ws_url(thread)).status_code == 404


def test_delete_without_htmx_redirects_to_list(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/delete/")
    thread.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == "/threads/"
    assert thread.is_deleted


def test_delete_refuses_get(owner_client, thread):
    assert owner_client.get(f"/threads/{thread.pk}/delete/").status_code == 405
    thread.refresh_from_db()
    assert not thread.is_deleted


def test_delete_of_another_users_thread_is_404(other_client, thread):
    assert other_client.post(f"/threads/{thread.pk}/delete/").status_code == 404
    thread.refresh_from_db()
    assert not thread.is_deleted


def test_delete_requires_login(client, thread):
    response = client.post(f"/threads/{thread.pk}/delete/")
    assert response.status_code == 302
    thread.refresh_from_db()
    assert not thread.is_deleted


# --- workspace page -----------------------------------------------------------------


def test_workspace_page_shows_every_region(owner_client, thread):
    response = owner_client.get(ws_url(thread))

    html = response.content.decode()
    assert response.status_code == 200
    for label in ("Preferences", "Planning", "Document", "Chat", "Trajectory"):
        assert f'aria-label="{label}"' in html, label
    for panel_id in ("panel-objective", "panel-preferences", "panel-plan", "panel-centre", "panel-chat"):
        assert f'id="{panel_id}"' in html, panel_id
    assert "Lit review" in html
    assert "The trajectory map of this thread’s turns and forks will appear here." in html
    assert "hx-swap-oob" not in html
    assert "X-CSRFToken" in html


def test_workspace_page_of_another_users_thread_is_404(other_client, thread):
    assert other_client.get(ws_url(thread)).status_code == 404


def test_workspace_page_of_unknown_thread_is_404(owner_client):
    assert owner_client.get(f"/threads/{uuid.uuid4()}/workspace/").status_code == 404


def test_workspace_page_of_deleted_thread_is_404(owner_client, thread):
    thread_soft_delete(thread=thread)
    assert owner_client.get(ws_url(thread)).status_code == 404


def test_workspace_page_requires_login(client, thread):
    response = client.get(ws_url(thread))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_workspace_page_refuses_post(owner_client, thread):
    assert owner_client.post(ws_url(thread)).status_code == 405
