"""HTTP requests as the ASGI server hands them to Django
(haico_site.http_handler, docs/adr/0172): the middleware and the view run
in one hop to a thread, and do what they do under the test client (the
same sync chain): the person's pages only, the policy header, CSRF, the
async health view, a refused request storing nothing."""

import asgiref.sync
import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from conversations.services import thread_create
from haico_site.asgi import application
from tests.conversations.helpers import _session_cookie
from workspace.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)


async def _client(user=None) -> httpx2.AsyncClient:
    cookies = {}
    if user is not None:
        name, _, key = (await sync_to_async(_session_cookie)(user)).decode().partition("=")
        cookies[name] = key
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), base_url="http://localhost", cookies=cookies)


@pytest.fixture
def hops(monkeypatch):
    """How many times requests cross between the event loop and a thread
    (every sync_to_async and async_to_sync call)."""
    counted = {"hops": 0}
    to_thread, to_loop = asgiref.sync.SyncToAsync.__call__, asgiref.sync.AsyncToSync.__call__

    async def counted_to_thread(self, *args, **kwargs):
        counted["hops"] += 1
        return await to_thread(self, *args, **kwargs)

    def counted_to_loop(self, *args, **kwargs):
        counted["hops"] += 1
        return to_loop(self, *args, **kwargs)

    monkeypatch.setattr(asgiref.sync.SyncToAsync, "__call__", counted_to_thread)
    monkeypatch.setattr(asgiref.sync.AsyncToSync, "__call__", counted_to_loop)
    return counted


async def test_the_owner_gets_their_workspace_and_no_one_else_does(owner, other_user):
    thread = await sync_to_async(thread_create)(owner=owner, title="Grant report")
    path = reverse("thread-page", kwargs={"thread_id": thread.pk})
    async with await _client(owner) as http:
        page = await http.get(path)
    assert page.status_code == 200
    assert "Grant report" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "no-store" in page.headers["cache-control"]
    async with await _client(other_user) as http:
        refused = await http.get(path)
    assert refused.status_code == 404
    assert "Grant report" not in refused.text
    async with await _client() as http:
        anonymous = await http.get(path)
    assert anonymous.status_code == 302
    assert anonymous.headers["location"].startswith(reverse("login"))


async def test_a_step_added_with_the_pages_token_is_stored_and_one_without_it_is_refused(owner):
    thread = await sync_to_async(thread_create)(owner=owner, title="Plan")
    add = reverse("workspace:plan-add", kwargs={"thread_id": thread.pk})
    async with await _client(owner) as http:
        await http.get(reverse("thread-page", kwargs={"thread_id": thread.pk}))  # sets the CSRF cookie
        token = http.cookies["csrftoken"]
        refused = await http.post(add, data={"text": "Without a token"})
        stale = await http.post(add, data={"text": "From a stale tab"}, headers={"HX-Request": "true"})
        added = await http.post(add, data={"text": "Call the funder"}, headers={"HX-Request": "true", "X-CSRFToken": token})
    assert refused.status_code == 403
    assert "This page is out of date" in stale.headers["hx-trigger"]  # said in the page's flash line
    assert added.status_code == 200
    assert "Call the funder" in added.text
    steps = await sync_to_async(lambda: list(Todo.objects.filter(thread=thread).values_list("text", flat=True)))()
    assert steps == ["Call the funder"]


async def test_the_health_check_an_async_view_answers_through_the_handler():
    async with await _client() as http:
        response = await http.get("/healthz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


async def test_a_workspace_request_crosses_between_the_loop_and_a_thread_at_most_five_times(owner, hops):
    # Django's own handler made 14 such crossings of this request: one for
    # every sync middleware's process_view, each response hook and the view.
    thread = await sync_to_async(thread_create)(owner=owner, title="Hops")
    async with await _client(owner) as http:
        await http.get(reverse("conversations:list"))  # the first request warms up the server's parts
        hops["hops"] = 0
        response = await http.get(reverse("workspace:document-preview", kwargs={"thread_id": thread.pk}))
    assert response.status_code == 200
    assert hops["hops"] <= 5
