"""Who may make an account (HAICO_SIGNUP, conversations.signup): anyone,
only with a single-use expiring invite link staff made in the admin, or
nobody (staff make accounts). A refused sign-up says why and creates
nothing; the login page offers "Sign up" only where it can work."""

import re
import threading
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.utils import timezone

from conversations.models import Invite
from conversations.signup import INVITE_PREFIX, invite_create
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

User = get_user_model()


def _sign_up(client, username="newcomer", **extra):
    return client.post("/accounts/signup/", {"username": username, "password1": PASSWORD, "password2": PASSWORD, **extra})


def _link_on(page: str) -> str:
    match = re.search(r'id="invite-link" type="text" readonly size="90" value="([^"]+)"', page)
    assert match, page
    return match.group(1)


# --- open (the development default) -------------------------------------------------------


def test_open_sign_up_is_offered_on_the_login_page_and_in_the_top_bar(client, settings):
    settings.HAICO_SIGNUP = "open"
    page = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/signup/">Sign up</a>' in page
    assert _sign_up(client).status_code == 302
    assert User.objects.filter(username="newcomer").exists()


# --- closed --------------------------------------------------------------------------------


def test_closed_sign_up_says_so_and_creates_nothing(client, settings):
    settings.HAICO_SIGNUP = "closed"
    login = client.get("/accounts/login/").content.decode()
    assert "/accounts/signup/" not in login and "Sign up" not in login
    page = client.get("/accounts/signup/")
    assert page.status_code == 200
    assert "Sign-up is closed on this site: accounts are made by its staff." in page.content.decode()
    assert 'name="password1"' not in page.content.decode()
    refused = _sign_up(client)
    assert refused.status_code == 403 and "Sign-up is closed" in refused.content.decode()
    assert not User.objects.filter(username="newcomer").exists()


def test_staff_still_make_accounts_in_the_admin_when_sign_up_is_closed(client, settings, staff):
    settings.HAICO_SIGNUP = "closed"
    client.force_login(staff)
    response = client.post(
        "/admin/auth/user/add/",
        {
            "username": "colleague",
            "password1": PASSWORD,
            "password2": PASSWORD,
            "usable_password": "true",
            "account-TOTAL_FORMS": "0",
            "account-INITIAL_FORMS": "0",
            "account-MIN_NUM_FORMS": "0",
            "account-MAX_NUM_FORMS": "1",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert User.objects.filter(username="colleague").exists()


# --- invite ----------------------------------------------------------------------------------


def _staff_makes_invite(client, staff, **fields) -> str:
    client.force_login(staff)
    form = client.get("/admin/conversations/invite/add/")
    assert form.status_code == 200 and "Make an invite link" in form.content.decode()
    made = client.post("/admin/conversations/invite/add/", {"days": "7", **fields})
    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    link = _link_on(made.content.decode())
    client.logout()
    return link


def test_an_invite_link_made_in_the_admin_makes_one_account_and_is_shown_once(client, settings, staff):
    settings.HAICO_SIGNUP = "invite"
    link = _staff_makes_invite(client, staff, note="For Ada")
    assert link.startswith("http://testserver/accounts/signup/?invite=" + INVITE_PREFIX)
    secret = link.split("invite=", 1)[1]
    invite = Invite.objects.get()
    # Only the digest is stored; the admin never shows the link again.
    assert secret not in str(Invite.objects.values().get())
    client.force_login(staff)
    listing = client.get("/admin/conversations/invite/").content.decode()
    change = client.get(f"/admin/conversations/invite/{invite.pk}/change/").content.decode()
    assert secret not in listing and secret not in change and "Open" in listing
    client.logout()
    assert invite.created_by == staff and timedelta(days=6, hours=23) < invite.expires_at - timezone.now() <= timedelta(days=7)

    # Without the link there is nothing to sign up with, and the login page offers nothing.
    assert "Sign up" not in client.get("/accounts/login/").content.decode()
    without = client.get("/accounts/signup/").content.decode()
    assert "by invitation only" in without and 'name="password1"' not in without
    assert _sign_up(client).status_code == 403

    # With it: the form, and the account.
    page = client.get(link)
    assert page.status_code == 200 and f'name="invite" value="{secret}"' in page.content.decode()
    assert _sign_up(client, invite=secret).status_code == 302
    invite.refresh_from_db()
    assert invite.used_by == User.objects.get(username="newcomer") and invite.used_at is not None


def test_a_used_invite_gives_a_clear_page_and_makes_no_second_account(client, settings, staff):
    settings.HAICO_SIGNUP = "invite"
    _invite, secret = invite_create(created_by=staff)
    assert _sign_up(client, invite=secret).status_code == 302
    second = Client()
    page = second.get(f"/accounts/signup/?invite={secret}")
    assert page.status_code == 403
    assert "This invite link has already been used" in page.content.decode()
    again = _sign_up(second, username="second", invite=secret)
    assert again.status_code == 403 and "already been used" in again.content.decode()
    assert not User.objects.filter(username="second").exists()


def test_an_expired_invite_gives_a_clear_page_and_makes_nothing(client, settings, staff):
    settings.HAICO_SIGNUP = "invite"
    invite, secret = invite_create(created_by=staff, days=7)
    Invite.objects.filter(pk=invite.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    page = client.get(f"/accounts/signup/?invite={secret}")
    assert page.status_code == 403
    assert "This invite link expired on" in page.content.decode() and "Ask staff for a new one." in page.content.decode()
    refused = _sign_up(client, invite=secret)
    assert refused.status_code == 403 and not User.objects.filter(username="newcomer").exists()
    assert Invite.objects.get(pk=invite.pk).used_at is None


@pytest.mark.parametrize("secret", ["inv_not-a-real-one", "haico_abc", "x" * 500, "inv_\x00"])
def test_an_unknown_invite_is_refused_and_makes_nothing(client, settings, staff, secret):
    settings.HAICO_SIGNUP = "invite"
    invite_create(created_by=staff)
    refused = _sign_up(client, invite=secret)
    assert refused.status_code == 403 and "This invite link is not valid" in refused.content.decode()
    assert not User.objects.filter(username="newcomer").exists()


def test_an_invite_for_an_address_signs_up_with_that_address(client, settings, staff):
    settings.HAICO_SIGNUP = "invite"
    _invite, secret = invite_create(created_by=staff, email="ada@example.com")
    page = client.get(f"/accounts/signup/?invite={secret}").content.decode()
    assert 'value="ada@example.com"' in page and "disabled" in page
    # A different address posted is ignored: the field is the invitation's.
    assert _sign_up(client, invite=secret, email="mallory@example.com").status_code == 302
    assert User.objects.get(username="newcomer").email == "ada@example.com"


def test_a_sign_up_whose_form_is_refused_leaves_the_invite_unused(client, settings, staff):
    settings.HAICO_SIGNUP = "invite"
    invite, secret = invite_create(created_by=staff)
    refused = client.post(
        "/accounts/signup/", {"username": "newcomer", "password1": PASSWORD, "password2": "no", "invite": secret}
    )
    assert refused.status_code == 400 and f'name="invite" value="{secret}"' in refused.content.decode()
    assert Invite.objects.get(pk=invite.pk).used_at is None
    assert _sign_up(client, invite=secret).status_code == 302


def test_the_login_page_offers_sign_up_to_who_came_with_an_invite_link(client, settings):
    settings.HAICO_SIGNUP = "invite"
    assert "Sign up" not in client.get("/accounts/login/").content.decode()
    page = client.get("/accounts/login/?invite=inv_abc").content.decode()
    assert 'href="/accounts/signup/?invite=inv_abc">Sign up</a>' in page


def test_an_invite_made_by_staff_in_open_mode_warns_that_it_does_nothing(client, settings, staff):
    settings.HAICO_SIGNUP = "open"
    client.force_login(staff)
    page = client.get("/admin/conversations/invite/add/").content.decode()
    assert "invite links make accounts only when it is “invite”" in page


def test_the_invite_form_refuses_bad_input_and_makes_nothing(client, staff):
    client.force_login(staff)
    for data in ({}, {"days": "0"}, {"days": "400"}, {"days": "7", "email": "not-an-address"}, {"days": "²"}):
        response = client.post("/admin/conversations/invite/add/", data)
        assert response.status_code == 400, data
    assert not Invite.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_sign_ups_racing_with_one_invite_make_one_account(settings, django_user_model):
    """Two browsers post the same link at the same moment: the claim is a
    conditional update in the account's transaction, so one wins and the
    other's account is undone."""
    settings.HAICO_SIGNUP = "invite"
    staff = django_user_model.objects.create_superuser(username="staff", password=PASSWORD)
    _invite, secret = invite_create(created_by=staff)
    barrier = threading.Barrier(2)
    results = {}

    def sign_up(name):
        try:
            barrier.wait(timeout=5)
            results[name] = _sign_up(Client(), username=name, invite=secret).status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=sign_up, args=(name,)) for name in ("first", "second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(results.values()) == [302, 403], results
    assert User.objects.filter(username__in=["first", "second"]).count() == 1
