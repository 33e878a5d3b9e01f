"""htmx requests get a message where the person acted, never an error page
(haico_site.middleware): a body too big to read, even before CSRF's check
reads it, and a thread deleted in another tab, with DEBUG on or off.
Requests go through the real CSRF check (token in the X-CSRFToken header,
as the page's htmx sends it)."""

import json

import pytest
from django.test import Client

from conversations.services import thread_soft_delete
from tests.support.web import HTMX, ws_url
from workspace import selectors
from workspace.models import Document, Preference, Todo
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db

TOO_BIG = "x" * 12_000


@pytest.fixture
def page(owner, thread, settings):
    """The owner's browser on the thread page: strict CSRF, token from the page's cookie."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.get(f"/threads/{thread.pk}/workspace/").status_code == 200
    client.htmx = {**HTMX, "HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}
    return client


def _flash(response):
    assert response.status_code == 200 and response["HX-Reswap"] == "none"
    return json.loads(response["HX-Trigger"])["haico:flash"]["message"]


@pytest.mark.parametrize("debug", [False, True])
def test_a_document_save_too_big_to_read_says_so_in_the_editor_and_saves_nothing(page, thread, settings, debug):
    settings.DEBUG = debug
    response = page.post(ws_url(thread, "document/save/"), {"title": "T", "content": TOO_BIG, "base_version": 0}, **page.htmx)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="doc-save-state"' in html and 'data-state="error"' in html
    assert "The document is too long to send; nothing was saved." in html
    # The editor itself is not sent back: what the person typed stays on screen.
    assert "<textarea" not in html
    assert not Document.objects.filter(thread=thread).exists()


def test_a_json_document_save_too_big_to_read_says_so_too(page, thread):
    body = json.dumps({"title": "T", "content": TOO_BIG, "base_version": 0})
    response = page.post(ws_url(thread, "document/save/"), body, content_type="application/json", **page.htmx)
    assert "The document is too long to send; nothing was saved." in response.content.decode()
    assert not Document.objects.filter(thread=thread).exists()


def test_a_plan_step_too_big_to_read_is_refused_in_the_plan_panel(page, thread):
    response = page.post(ws_url(thread, "plan/add/"), {"text": TOO_BIG}, **page.htmx)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-live-patch="error" data-panel="plan" data-target="panel"' in html
    assert "too much to send at once" in html and "nothing was saved" in html
    assert not Todo.objects.filter(thread=thread).exists()


def test_a_preference_with_too_many_fields_is_refused_in_the_preferences_panel(page, thread, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    fields = {"title": "T", **{f"extra{n}": "x" for n in range(20)}}
    response = page.post(ws_url(thread, "preferences/add/"), fields, **page.htmx)
    html = response.content.decode()
    assert 'data-panel="preferences"' in html and "too many fields" in html
    assert not Preference.objects.filter(thread=thread).exists()


def test_a_rename_too_big_to_read_flashes_and_leaves_the_row_as_it_is(page, thread):
    response = page.post(f"/threads/{thread.pk}/rename/", {"title": TOO_BIG}, **page.htmx)
    assert "too much to send at once" in _flash(response)
    thread.refresh_from_db()
    assert thread.title == "Lit review"


def test_without_htmx_a_body_too_big_to_read_gets_a_page_saying_so(owner, thread, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
    client = Client()
    client.force_login(owner)
    response = client.post(ws_url(thread, "objective/edit/"), {"text": TOO_BIG})
    assert response.status_code == 413
    assert "too much to send at once" in response.content.decode()


def test_a_body_too_big_still_needs_a_valid_csrf_token_to_change_anything(page, thread):
    # The refusal changes nothing, so it needs no token; a right-sized post without one is still refused.
    headers = {**HTMX}
    assert page.post(ws_url(thread, "plan/add/"), {"text": TOO_BIG}, **headers).status_code == 200
    assert "reload the page" in _flash(page.post(ws_url(thread, "plan/add/"), {"text": "small"}, **headers))
    assert not Todo.objects.filter(thread=thread).exists()


@pytest.mark.parametrize("debug", [False, True])
def test_acting_in_a_tab_of_a_thread_deleted_elsewhere_flashes_a_message_not_an_error_page(page, thread, settings, debug):
    settings.DEBUG = debug
    step = plan_services.todo_add(thread=thread, text="Step")
    thread_soft_delete(thread=thread)
    for path, data in [
        ("plan/add/", {"text": "more"}),
        (f"plan/{step.pk}/done/", {"done": "1"}),
        ("objective/edit/", {"text": "x"}),
    ]:
        response = page.post(ws_url(thread, path), data, **page.htmx)
        assert "no longer exists" in response.content.decode() + _flash_or_empty(response), path
    response = page.get(ws_url(thread, "centre/"), **page.htmx)
    assert "no longer exists" in _flash(response)
    assert selectors.plan_steps(thread=thread)[0].done is False


def _flash_or_empty(response):
    return _flash(response) if "HX-Trigger" in response else ""


@pytest.mark.parametrize("debug", [False, True])
def test_an_htmx_post_with_a_stale_csrf_token_flashes_reload_and_changes_nothing(page, thread, settings, debug):
    # E.g. the person logged out and in again in another tab: the token rotated.
    settings.DEBUG = debug
    stale = {**HTMX, "HTTP_X_CSRFTOKEN": "a" * 64}
    response = page.post(ws_url(thread, "plan/add/"), {"text": "small"}, **stale)
    assert "reload the page" in _flash(response)
    assert not Todo.objects.filter(thread=thread).exists()
    plain = page.post(ws_url(thread, "plan/add/"), {"text": "small"})
    assert plain.status_code == 403


# --- a signed-in person's pages are never cached (PrivatePagesMiddleware) --------


def _cache_control(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",") if part.strip()}


@pytest.mark.parametrize(
    "path",
    [
        "/threads/",
        "/threads/{thread}/workspace/",
        "/threads/{thread}/export/",
        "/threads/{thread}/workspace/plan/",
        "/accounts/tokens/",
        "/threads/{thread}/no-such-page/",
        "/accounts/login/",
    ],
)
def test_every_response_to_a_signed_in_person_is_private_and_not_stored(owner_client, thread, path):
    response = owner_client.get(path.format(thread=thread.pk))
    assert {"private", "no-store"} <= _cache_control(response), (path, response.status_code)
    assert "public" not in _cache_control(response)


def test_a_view_that_said_how_to_cache_keeps_it_made_private(owner_client, thread):
    response = owner_client.get("/admin/", follow=False)  # the admin's never_cache, for someone not staff
    assert {"private", "no-store"} <= _cache_control(response)


def test_anonymous_pages_and_static_files_are_left_alone(owner, rf):
    from django.http import HttpResponse

    from haico_site.middleware import PrivatePagesMiddleware

    assert "no-store" not in _cache_control(Client().get("/accounts/signup/"))

    def static_file(request):
        response = HttpResponse("body { }", content_type="text/css")
        response["Cache-Control"] = "public, max-age=3600"
        return response

    request = rf.get("/static/css/haico.css")
    request.user = owner
    assert PrivatePagesMiddleware(static_file)(request)["Cache-Control"] == "public, max-age=3600"
    request = rf.get("/threads/")
    request.user = owner
    assert _cache_control(PrivatePagesMiddleware(static_file)(request)) == {"private", "no-store", "max-age=3600"}
