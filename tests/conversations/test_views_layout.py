"""The workspace page's top bar and layout (docs/adr/0022): the thread
switcher lists the person's own threads and those shared with them, a rail's collapsed state is
saved for the person and lays out their next page, rename from the top bar
answers with the new title."""

import json

import pytest

from conversations.models import LayoutPreference
from conversations.services import thread_create, thread_soft_delete
from tests.support.web import HTMX, answered_as_missing
from workspace.models import Thread

pytestmark = pytest.mark.django_db

TOP_BAR = {**HTMX, "HTTP_HX_TARGET": "thread-title"}


# --- thread switcher ----------------------------------------------------------------------


def test_switcher_lists_own_live_threads_and_never_anyone_elses(owner_client, owner, other_user, thread):
    thread_create(owner=owner, title="Garden plan")
    thread_soft_delete(thread=thread_create(owner=owner, title="Deleted draft"))
    thread_create(owner=other_user, title="Other person's garden")

    html = owner_client.get("/threads/switch/", **HTMX).content.decode()

    assert "Lit review" in html and "Garden plan" in html
    assert "Deleted draft" not in html
    assert "Other person" not in html
    assert "<html" not in html


def test_switcher_lists_threads_shared_with_the_person_naming_their_owner_and_not_after_removal(owner_client, owner, other_user):
    from conversations.sharing import thread_member_add, thread_member_remove

    theirs = thread_create(owner=other_user, title="Their garden")
    member = thread_member_add(thread=theirs, who=owner.username, role="viewer", by=other_user)

    html = owner_client.get("/threads/switch/", {"q": "garden"}, **HTMX).content.decode()
    assert "Their garden" in html and f"shared by {other_user.username}" in html

    thread_member_remove(thread=theirs, member_id=member.pk, by=other_user)
    assert "Their garden" not in owner_client.get("/threads/switch/", {"q": "garden"}, **HTMX).content.decode()


def test_switcher_search_matches_titles_in_any_case(owner_client, owner, thread):
    garden = thread_create(owner=owner, title="Garden plan")

    html = owner_client.get("/threads/switch/", {"q": "GARDEN", "current": str(garden.pk)}, **HTMX).content.decode()

    assert "Garden plan" in html and "Lit review" not in html
    assert 'aria-current="page"' in html
    assert "No thread of yours has “nothing here”" in owner_client.get("/threads/switch/", {"q": "nothing here"}).content.decode()


def test_switcher_escapes_titles_and_the_query(owner_client, owner):
    thread_create(owner=owner, title="<b>bold</b>")
    html = owner_client.get("/threads/switch/", {"q": "<i>"}).content.decode()
    assert "<i>" not in html
    html = owner_client.get("/threads/switch/", {"q": "bold"}).content.decode()
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html


def test_switcher_refuses_post_and_anonymous_visitors(owner_client, client):
    assert owner_client.post("/threads/switch/").status_code == 405
    client.logout()
    response = client.get("/threads/switch/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- side rails ------------------------------------------------------------------------------


def test_collapsing_a_rail_is_saved_for_the_person_and_lays_out_their_page(owner_client, owner, thread):
    response = owner_client.post("/threads/layout/", {"rail": "left", "collapsed": "on"}, **HTMX)

    assert response.status_code == 200
    layout = LayoutPreference.objects.get(user=owner)
    assert layout.left_rail_collapsed and not layout.right_rail_collapsed
    page = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()
    assert "workspace-grid is-left-collapsed" in page
    assert 'data-rail-toggle="left" aria-controls="rail-left"\n            aria-expanded="false"' in page

    owner_client.post("/threads/layout/", {"rail": "left", "collapsed": ""}, **HTMX)
    layout.refresh_from_db()
    assert not layout.left_rail_collapsed
    assert "is-left-collapsed" not in owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()


def test_one_persons_layout_is_not_anothers(owner_client, other_user, owner):
    owner_client.post("/threads/layout/", {"rail": "right", "collapsed": "on"}, **HTMX)
    other_thread = thread_create(owner=other_user, title="Theirs")
    owner_client.force_login(other_user)
    page = owner_client.get(f"/threads/{other_thread.pk}/workspace/").content.decode()
    assert "is-right-collapsed" not in page
    assert not LayoutPreference.objects.filter(user=other_user).exists()


@pytest.mark.parametrize("data", [{"rail": "middle", "collapsed": "on"}, {}])
def test_a_bad_rail_is_refused_with_a_message_and_nothing_saved(owner_client, data):
    response = owner_client.post("/threads/layout/", data, **HTMX)
    assert response.status_code == 200
    assert json.loads(response["HX-Trigger"])["haico:flash"]["message"] == "Choose the left or the right rail."
    assert owner_client.post("/threads/layout/", data).status_code == 400
    assert not LayoutPreference.objects.exists()


def test_layout_refuses_get(owner_client):
    assert owner_client.get("/threads/layout/").status_code == 405


# --- rename from the top bar -------------------------------------------------------------------


def test_rename_from_the_top_bar_answers_with_the_new_title(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": " Survey  of methods "}, **TOP_BAR)

    thread.refresh_from_db()
    assert thread.title == "Survey of methods"
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="thread-title"' in html and "Survey of methods" in html
    assert f'id="thread-{thread.pk}"' not in html


def test_a_blank_title_from_the_top_bar_is_refused_in_the_flash_line(owner_client, thread):
    response = owner_client.post(f"/threads/{thread.pk}/rename/", {"title": "  "}, **TOP_BAR)

    thread.refresh_from_db()
    assert thread.title == "Lit review"
    assert response.status_code == 200
    assert json.loads(response["HX-Trigger"])["haico:flash"]["message"] == "Title cannot be empty."


def test_rename_from_the_top_bar_of_another_persons_thread_is_404(other_client, thread):
    response = other_client.post(f"/threads/{thread.pk}/rename/", {"title": "Hijacked"}, **TOP_BAR)
    assert answered_as_missing(response)
    assert Thread.objects.get(pk=thread.pk).title == "Lit review"
