"""A page's request is done only as the person the page was rendered for
(haico_site.middleware.PagePersonMiddleware, docs/adr/0108): after its
session ended it gets a 401 saying so, not the login page, and after someone
else logged in in the same browser it is not done as them. Requests go
through the real CSRF check with the token of the cookie, as the page sends
it."""

import pytest
from django.test import Client

from conversations import sharing
from conversations.sessions import ACCOUNT_DEACTIVATED
from haico_site.views import SESSION_ENDED, SOMEONE_ELSE
from tests.conftest import PASSWORD
from tests.support.web import HTMX, ws_url
from workspace import selectors
from workspace.models import Document, Todo

pytestmark = pytest.mark.django_db


def _browser(person, thread) -> Client:
    """`person`'s browser with the thread's page open: strict CSRF."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(person)
    assert client.get(f"/threads/{thread.pk}/workspace/").status_code == 200
    return client


def _log_out_elsewhere(client) -> None:
    """Log out as another tab of the same browser does: the session ends,
    the CSRF cookie stays (the test client's logout drops every cookie)."""
    token = client.cookies["csrftoken"].value
    client.logout()
    client.cookies["csrftoken"] = token


def _log_in_elsewhere(client, person) -> None:
    """Log in through the login form, as another tab of the browser does."""
    client.get("/accounts/login/")
    form = {"username": person.username, "password": PASSWORD, "csrfmiddlewaretoken": client.cookies["csrftoken"].value}
    assert client.post("/accounts/login/", form).status_code == 302


def _page_headers(client, person) -> dict:
    """What the page's htmx sends: the cookie's token and whom the page is for."""
    return {**HTMX, "HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value, "HTTP_X_HAICO_PERSON": str(person.pk)}


def test_the_page_names_its_person_and_where_to_log_in(owner, thread):
    page = _browser(owner, thread).get(f"/threads/{thread.pk}/workspace/").content.decode()
    assert f'data-person="{owner.pk}"' in page and 'data-login-url="/accounts/login/"' in page


def test_a_save_after_the_owners_session_ended_is_a_401_saying_so_and_saves_nothing(owner, thread):
    browser = _browser(owner, thread)
    headers = _page_headers(browser, owner)
    _log_out_elsewhere(browser)

    response = browser.post(
        ws_url(thread, "document/save/"), {"title": "T", "content": "Typed late.", "base_version": 0}, **headers
    )
    assert response.status_code == 401 and response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == SESSION_ENDED
    assert response["X-HAICO-Signed-In"] == "nobody"
    assert not Document.objects.filter(thread=thread).exists()

    response = browser.post(ws_url(thread, "plan/add/"), {"text": "A step"}, **headers)
    assert (response.status_code, response.content.decode()) == (401, SESSION_ENDED)
    assert not Todo.objects.filter(thread=thread).exists()


def test_a_save_after_staff_deactivated_the_account_says_so_not_log_in_again(owner, thread):
    browser = _browser(owner, thread)
    headers = _page_headers(browser, owner)
    owner.is_active = False
    owner.save()

    response = browser.post(
        ws_url(thread, "document/save/"), {"title": "T", "content": "Typed late.", "base_version": 0}, **headers
    )
    assert (response.status_code, response.content.decode()) == (401, ACCOUNT_DEACTIVATED)
    assert response["X-HAICO-Signed-In"] == "deactivated"
    assert "log in" not in response.content.decode().lower()
    assert not Document.objects.filter(thread=thread).exists()

    # The login page this browser reaches says why; one without its session stays generic.
    assert "has been deactivated" in browser.get("/accounts/login/").content.decode()
    stranger = Client()
    stranger.get("/accounts/login/")
    form = {"username": owner.username, "password": PASSWORD, "csrfmiddlewaretoken": stranger.cookies["csrftoken"].value}
    refused = stranger.post("/accounts/login/", form).content.decode()
    assert "That username and password do not match." in refused and "deactivated" not in refused


def test_a_save_to_a_thread_no_longer_shared_is_marked_gone_for_the_editor(owner, other_user, thread):
    sharing.thread_member_add(thread=thread, who=other_user.username, role="editor", by=owner)
    browser = _browser(other_user, thread)
    headers = _page_headers(browser, other_user)
    sharing.thread_member_remove(thread=thread, member_id=thread.members.get(user=other_user).pk, by=owner)
    response = browser.post(
        ws_url(thread, "document/save/"), {"title": "T", "content": "Bea's words.", "base_version": 0}, **headers
    )
    assert response.status_code == 200
    assert 'data-state="error"' in response.content.decode() and "data-gone" in response.content.decode()


def test_a_plain_page_load_after_the_session_ended_still_goes_to_the_login_page(owner, thread):
    browser = _browser(owner, thread)
    _log_out_elsewhere(browser)
    response = browser.get(f"/threads/{thread.pk}/workspace/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


def test_a_save_after_the_owner_logged_in_again_goes_through_with_the_renewed_token(owner, thread):
    browser = _browser(owner, thread)
    stale = _page_headers(browser, owner)
    _log_out_elsewhere(browser)
    _log_in_elsewhere(browser, owner)
    assert browser.cookies["csrftoken"].value != stale["HTTP_X_CSRFTOKEN"]  # a login renews the token
    assert browser.post(ws_url(thread, "plan/add/"), {"text": "A step"}, **stale).status_code == 200  # the flash says why
    assert not Todo.objects.filter(thread=thread).exists()

    response = browser.post(ws_url(thread, "plan/add/"), {"text": "A step"}, **_page_headers(browser, owner))
    assert response.status_code == 200
    assert [todo.text for todo in selectors.todos_for(thread=thread)] == ["A step"]


def test_an_editor_who_logged_in_over_the_owners_page_does_nothing_as_the_owners_page(owner, other_user, thread):
    sharing.thread_member_add(thread=thread, who=other_user.username, role="editor", by=owner)
    browser = _browser(owner, thread)
    owners_page = _page_headers(browser, owner)
    _log_out_elsewhere(browser)
    _log_in_elsewhere(browser, other_user)
    as_owners_page = {**owners_page, "HTTP_X_CSRFTOKEN": browser.cookies["csrftoken"].value}

    response = browser.post(
        ws_url(thread, "document/save/"), {"title": "T", "content": "Typed by the owner.", "base_version": 0}, **as_owners_page
    )
    assert (response.status_code, response.content.decode()) == (401, SOMEONE_ELSE)
    assert response["X-HAICO-Signed-In"] == "someone-else"
    assert not Document.objects.filter(thread=thread).exists()
    # A beacon (the tab closing) sends no headers: whom it is for is a field.
    beacon = {
        "title": "T",
        "content": "Typed by the owner.",
        "base_version": 0,
        "csrfmiddlewaretoken": browser.cookies["csrftoken"].value,
        "haico_person": str(owner.pk),
    }
    assert browser.post(ws_url(thread, "document/save/"), beacon).status_code == 401
    assert not Document.objects.filter(thread=thread).exists()

    # The editor's own page works as ever.
    response = browser.post(ws_url(thread, "plan/add/"), {"text": "Bea's step"}, **_page_headers(browser, other_user))
    assert response.status_code == 200
    assert [todo.text for todo in selectors.todos_for(thread=thread)] == ["Bea's step"]
