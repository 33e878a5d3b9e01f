"""Accounts waiting for staff approval (HAICO_SIGNUP_APPROVAL,
conversations.approval): a new account signs in and sees "Waiting for
approval"; no page, thread, turn, socket or MCP call works for it until
staff approve it with the admin's "Approve" action."""

import json

import httpx2
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from conversations import mcp_transport
from conversations.approval import account_hold_for_approval, is_waiting
from conversations.models import Account
from conversations.tokens import token_create
from tests.conftest import PASSWORD
from tests.support.web import HTMX, database_rows
from workspace.models import Thread

User = get_user_model()

WAITING = "Waiting for approval"


@pytest.fixture
def waiting_user(django_user_model):
    user = django_user_model.objects.create_user(username="newcomer", password=PASSWORD)
    account_hold_for_approval(user=user)
    return user


@pytest.mark.django_db
def test_sign_up_with_approval_on_signs_in_to_the_waiting_page(client, settings):
    settings.HAICO_SIGNUP, settings.HAICO_SIGNUP_APPROVAL = "open", True
    response = client.post(
        "/accounts/signup/", {"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD}, follow=True
    )
    assert response.redirect_chain == [("/accounts/waiting/", 302)]
    page = response.content.decode()
    assert f"<h1>{WAITING}</h1>" in page and "newcomer" in page
    assert is_waiting(User.objects.get(username="newcomer"))
    # Logging in again later lands there too.
    client.logout()
    again = client.post("/accounts/login/", {"username": "newcomer", "password": PASSWORD}, follow=True)
    assert again.redirect_chain[-1] == ("/accounts/waiting/", 302) and WAITING in again.content.decode()


@pytest.mark.django_db
def test_sign_up_without_approval_needs_none(client, settings):
    settings.HAICO_SIGNUP_APPROVAL = False
    client.post("/accounts/signup/", {"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD})
    assert not Account.objects.exists()
    assert client.get("/threads/").status_code == 200


@pytest.mark.django_db
def test_every_page_of_a_waiting_account_goes_to_the_waiting_page_and_changes_nothing(client, waiting_user, owner):
    theirs = Thread.objects.create(owner=owner, title="not theirs")
    client.force_login(waiting_user)
    before = database_rows()
    for method, path in (
        ("get", "/threads/"),
        ("post", "/threads/new/"),
        ("get", "/accounts/tokens/"),
        ("post", "/accounts/tokens/"),
        ("get", f"/threads/{theirs.pk}/workspace/"),
        ("post", "/threads/import/"),
        ("get", "/accounts/usage/"),
        ("get", "/"),
    ):
        response = getattr(client, method)(path, {"name": "x"} if method == "post" else None)
        assert response.status_code == 302 and response["Location"] == "/accounts/waiting/", (method, path)
        htmx = getattr(client, method)(path, **HTMX)
        assert htmx.status_code == 200 and htmx["HX-Redirect"] == "/accounts/waiting/", (method, path)
    assert database_rows() == before
    # What stays open: the waiting page, the password change and logging out.
    assert client.get("/accounts/waiting/").status_code == 200
    assert client.get("/accounts/password_change/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302


@pytest.mark.django_db
def test_an_approved_account_has_no_waiting_page(client, owner):
    client.force_login(owner)
    assert client.get("/accounts/waiting/")["Location"] == "/threads/"
    assert client.get("/accounts/waiting/", follow=True).status_code == 200


@pytest.mark.django_db
def test_staff_approve_from_the_people_list_and_the_account_works(client, staff, waiting_user):
    client.force_login(staff)
    people = client.get("/admin/auth/user/?account__waiting_for_approval__exact=1").content.decode()
    assert "newcomer" in people and "Approve the selected accounts" in people
    response = client.post(
        "/admin/auth/user/", {"action": "approve_accounts", "_selected_action": [waiting_user.pk]}, follow=True
    )
    assert "Approved 1 account(s)" in response.content.decode()
    account = Account.objects.get(user=waiting_user)
    assert not account.waiting_for_approval and account.approved_by == staff and account.approved_at is not None
    client.force_login(waiting_user)
    assert client.get("/threads/").status_code == 200
    assert client.post("/threads/new/").status_code == 302 and Thread.objects.filter(owner=waiting_user).exists()


@pytest.mark.django_db
def test_staff_approve_from_the_accounts_list(client, staff, waiting_user):
    client.force_login(staff)
    listing = client.get("/admin/conversations/account/?waiting_for_approval__exact=1").content.decode()
    assert "newcomer" in listing
    client.post("/admin/conversations/account/", {"action": "approve_accounts", "_selected_action": [Account.objects.get().pk]})
    assert not is_waiting(waiting_user)


@pytest.mark.django_db
def test_a_person_cannot_approve_themselves_or_anyone(client, waiting_user, owner):
    for user in (waiting_user, owner):
        client.force_login(user)
        client.post("/admin/auth/user/", {"action": "approve_accounts", "_selected_action": [waiting_user.pk]})
        client.post("/admin/conversations/account/", {"action": "approve_accounts", "_selected_action": [1]})
    assert is_waiting(waiting_user)


@pytest.mark.django_db
def test_staff_never_wait(staff):
    account_hold_for_approval(user=staff)
    assert not is_waiting(staff)


# --- the socket and MCP ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_waiting_account_gets_no_socket(waiting_user, owner):
    from tests.conversations.helpers import open_socket

    own = await sync_to_async(Thread.objects.create)(owner=waiting_user, title="made before")
    socket = await open_socket(own.pk, waiting_user)
    try:
        notice = await socket.receive_from(timeout=5)
        assert "waiting for approval" in notice
        closed = await socket.receive_output(timeout=5)
        assert closed == {"type": "websocket.close", "code": 4403}
    finally:
        await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_waiting_account_s_token_is_refused_over_mcp(waiting_user):
    _token, secret = await sync_to_async(token_create)(user=waiting_user, name="made by staff")
    from haico_site.asgi import application

    try:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=application), base_url="http://localhost") as http:
            response = await http.post(
                "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"Authorization": f"Bearer {secret}"}
            )
        assert response.status_code == 401
        assert "waiting for approval" in json.loads(response.content)["error"]["message"]
    finally:
        await mcp_transport.http_endpoint.close()


@pytest.mark.django_db(transaction=True)
async def test_no_turn_starts_for_a_waiting_account_whatever_calls_the_registry(waiting_user, settings):
    from conversations.errors import ConversationError
    from conversations.turns import registry

    settings.OPENAI_BASE_URL, settings.HAICO_MODEL, settings.HAICO_MODELS = "http://127.0.0.1:9/v1", "m", ["m"]
    own = await sync_to_async(Thread.objects.create)(owner=waiting_user, title="made before")
    with pytest.raises(ConversationError, match="waiting for approval"):
        await registry.start_turn(thread=own, user_message="hello")
    assert await sync_to_async(lambda: Thread.objects.get(pk=own.pk).turn_index)() == 0
