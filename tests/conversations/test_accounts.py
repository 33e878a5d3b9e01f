"""Sign up, log in, log out and reset a forgotten password under /accounts/."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def test_signup_page_shows_the_form(client):
    response = client.get("/accounts/signup/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'name="username"' in html and 'name="password1"' in html and 'name="password2"' in html
    assert "csrfmiddlewaretoken" in html


def test_signup_creates_account_logs_in_and_opens_thread_list(client):
    response = client.post(
        "/accounts/signup/", {"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD}, follow=True
    )

    assert get_user_model().objects.filter(username="newcomer").exists()
    assert response.redirect_chain == [("/threads/", 302)]
    assert response.context["user"].username == "newcomer"
    assert "Your threads" in response.content.decode()


def test_signup_with_an_email_keeps_it_for_password_resets(client):
    response = client.post(
        "/accounts/signup/",
        {"username": "newcomer", "email": "New@Example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    assert get_user_model().objects.get(username="newcomer").email == "New@example.com"


def test_signup_without_an_email_is_fine_and_the_form_says_it_is_optional(client):
    html = client.get("/accounts/signup/").content.decode()
    assert 'name="email"' in html and "Email (optional)" in html
    response = client.post(
        "/accounts/signup/", {"username": "newcomer", "email": "", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 302
    assert get_user_model().objects.get(username="newcomer").email == ""


def test_the_signup_form_says_who_can_find_a_person_by_their_email(client):
    """Not "only used for password resets": people sharing a thread may add them by it (docs/adr/0137)."""
    html = client.get("/accounts/signup/").content.decode()
    assert "Only used to send you a link" not in html
    assert "by people who share a thread with you: they may add you by it, and then see your username." in html


def test_signup_with_an_address_that_is_not_one_is_refused(client):
    response = client.post(
        "/accounts/signup/", {"username": "newcomer", "email": "not-an-address", "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 400
    assert "Enter a valid email address." in response.content.decode()
    assert not get_user_model().objects.filter(username="newcomer").exists()


def test_signup_with_mismatched_passwords_is_refused(client):
    response = client.post("/accounts/signup/", {"username": "newcomer", "password1": PASSWORD, "password2": "other-pass-123"})
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode()
    assert not get_user_model().objects.filter(username="newcomer").exists()


def test_signup_with_taken_username_is_refused(client, owner):
    response = client.post("/accounts/signup/", {"username": "owner", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 400
    assert "already exists" in response.content.decode()
    assert get_user_model().objects.filter(username="owner").count() == 1


def test_signup_when_logged_in_goes_to_threads(owner_client):
    response = owner_client.get("/accounts/signup/")
    assert response.status_code == 302 and response["Location"] == "/threads/"


def test_login_page_links_to_signup(client):
    html = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/signup/"' in html and 'name="password"' in html


def test_login_with_right_password_opens_thread_list(client, owner):
    response = client.post("/accounts/login/", {"username": "owner", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/threads/"
    assert client.get("/threads/").status_code == 200


def test_login_returns_to_the_page_asked_for(client, thread):
    target = f"/threads/{thread.pk}/workspace/"
    response = client.post("/accounts/login/", {"username": "owner", "password": PASSWORD, "next": target})
    assert response.status_code == 302 and response["Location"] == target


def test_the_login_page_sends_someone_signed_in_on_to_their_threads(owner_client, thread):
    # Not the form again beside "Log out": where they would go after logging in.
    response = owner_client.get("/accounts/login/")
    assert response.status_code == 302 and response["Location"] == "/threads/"
    target = f"/threads/{thread.pk}/workspace/"
    response = owner_client.get(f"/accounts/login/?next={target}")
    assert response.status_code == 302 and response["Location"] == target


def test_login_with_wrong_password_shows_error(client, owner):
    response = client.post("/accounts/login/", {"username": "owner", "password": "wrong"})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'role="alert"' in html and "do not match" in html
    assert client.get("/threads/").status_code == 302


def test_logout_needs_post_and_ends_the_session(owner_client):
    assert owner_client.get("/accounts/logout/").status_code == 405
    assert owner_client.get("/threads/").status_code == 200

    response = owner_client.post("/accounts/logout/")

    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert owner_client.get("/threads/").status_code == 302


def test_pages_show_username_and_logout_form_when_logged_in(owner_client):
    html = owner_client.get("/threads/").content.decode()
    assert "owner" in html
    assert 'action="/accounts/logout/"' in html and "Log out" in html


def test_password_reset_for_a_known_address_sends_the_mail_and_never_fails(client, django_user_model, mailoutbox):
    django_user_model.objects.create_user(username="mia", email="mia@example.com", password="a-long-password-123")
    response = client.post("/accounts/password_reset/", {"email": "mia@example.com"})
    assert response.status_code == 302 and response["Location"].endswith("/accounts/password_reset/done/")
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["mia@example.com"]


def test_login_page_offers_forgot_password_and_every_page_has_the_favicon(client):
    html = client.get("/accounts/login/").content.decode()
    assert '<a href="/accounts/password_reset/">Forgot password?</a>' in html
    favicon = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', html)
    assert favicon and favicon.group(1) == "/static/img/favicon.svg"
    from django.contrib.staticfiles import finders

    with open(finders.find("img/favicon.svg")) as svg:
        assert "<svg" in svg.read()


def test_password_reset_end_to_end_mail_link_new_password_log_in(client, django_user_model, mailoutbox):
    user = django_user_model.objects.create_user(username="mia", email="mia@example.com", password="old-password-123")
    page = client.get("/accounts/password_reset/").content.decode()
    assert "Reset your password" in page and 'class="auth-card"' in page  # the app's own page, not the admin's

    done = client.post("/accounts/password_reset/", {"email": "mia@example.com"}, follow=True)
    assert "Check your email" in done.content.decode()
    (mail,) = mailoutbox
    assert mail.subject == "Reset your HAICO password" and mail.to == ["mia@example.com"]
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.body).group(1)

    form = client.get(link, follow=True)  # Django moves the token out of the URL into the session
    assert "Choose a new password" in form.content.decode()
    new_password = "a-brand-new-password-456"
    complete = client.post(
        form.redirect_chain[-1][0], {"new_password1": new_password, "new_password2": new_password}, follow=True
    )
    assert "Password changed" in complete.content.decode()

    user.refresh_from_db()
    assert user.check_password(new_password)
    fresh = Client()
    assert fresh.post("/accounts/login/", {"username": "mia", "password": new_password}).status_code == 302
    assert "This link no longer works" in client.get(link, follow=True).content.decode()


def test_password_reset_never_tells_whether_an_address_has_an_account(client, django_user_model, mailoutbox):
    django_user_model.objects.create_user(username="mia", email="mia@example.com", password="old-password-123")
    known = client.post("/accounts/password_reset/", {"email": "mia@example.com"}, follow=True)
    unknown = client.post("/accounts/password_reset/", {"email": "nobody@example.com"}, follow=True)
    assert known.redirect_chain == unknown.redirect_chain == [("/accounts/password_reset/done/", 302)]
    card = re.compile(r'<div class="auth-card">.*?</div>', re.S)
    assert card.search(known.content.decode()).group(0) == card.search(unknown.content.decode()).group(0)
    assert [m.to for m in mailoutbox] == [["mia@example.com"]]


def test_the_configured_mail_backend_never_needs_a_mail_server():
    # pytest-django swaps in the locmem backend during tests; what a fresh
    # install uses is what the settings module itself computes.
    import importlib

    import haico_site.settings as site_settings

    assert importlib.reload(site_settings).EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"


# --- login rate limit (django-axes) ----------------------------------------------

WRONG = "not-the-password"


def _log_in(client, username, password, *, path="/accounts/login/", address="127.0.0.1"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def _fail(client, username, times, **where):
    """`times` wrong passwords; the fifth answers with the lockout page itself."""
    for attempt in range(1, times + 1):
        response = _log_in(client, username, WRONG, **where)
        if attempt < 5:
            assert response.status_code == 200 and "do not match" in response.content.decode()
        else:
            assert response.status_code == 429


def test_after_five_wrong_passwords_even_the_right_one_is_refused_with_the_wait(client, owner):
    _fail(client, "owner", 5)
    response = _log_in(client, "owner", PASSWORD)
    html = response.content.decode()
    assert response.status_code == 429
    assert "Too many failed attempts to log in as “owner”" in html and "Try again in 15 minutes" in html
    assert client.get("/threads/").status_code == 302  # not logged in


def test_a_locked_out_username_leaves_other_users_and_other_addresses_alone(client, owner, other_user):
    _fail(client, "owner", 5)
    assert _log_in(client, "owner", PASSWORD).status_code == 429
    assert _log_in(Client(), "intruder", PASSWORD).status_code == 302
    assert _log_in(Client(), "owner", PASSWORD, address="10.0.0.2").status_code == 302


def test_a_successful_login_clears_the_failure_count(client, owner):
    _fail(client, "owner", 4)
    assert _log_in(client, "owner", PASSWORD).status_code == 302
    other_browser = Client()
    _fail(other_browser, "owner", 4)
    assert _log_in(other_browser, "owner", PASSWORD).status_code == 302


def test_once_the_wait_is_over_the_right_password_works_again(client, owner):
    from axes.models import AccessAttempt
    from django.utils import timezone

    _fail(client, "owner", 5)
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert _log_in(client, "owner", PASSWORD).status_code == 302


def test_the_admin_login_is_limited_the_same_way(client, staff):
    for _ in range(4):
        assert _log_in(client, "staff", WRONG, path="/admin/login/").status_code == 200
    assert _log_in(client, "staff", WRONG, path="/admin/login/").status_code == 429
    response = _log_in(client, "staff", PASSWORD, path="/admin/login/")
    assert response.status_code == 429
    assert "Too many failed attempts" in response.content.decode()
    assert client.get("/admin/").status_code == 302


# --- a shared address cannot keep the owner out (docs/adr/0051) ------------------


def test_attempts_during_a_lockout_do_not_make_it_last_longer(client, owner):
    from axes.models import AccessAttempt
    from django.utils import timezone

    _fail(client, "owner", 5)
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=10))
    for _ in range(3):  # someone keeps trying meanwhile
        assert _log_in(Client(), "owner", WRONG).status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert _log_in(Client(), "owner", PASSWORD).status_code == 302


def test_a_browser_that_has_logged_in_as_its_person_is_not_locked_out_by_others_at_its_address(client, owner):
    assert _log_in(client, "owner", PASSWORD).status_code == 302  # the owner's own browser, once
    client.post("/accounts/logout/")
    attacker = Client()
    _fail(attacker, "owner", 5)  # the same address (a NAT, an office)
    assert _log_in(attacker, "owner", PASSWORD).status_code == 429
    assert _log_in(client, "owner", PASSWORD).status_code == 302
    # The cookie is the owner's alone: it does not open the lock for another username.
    client.post("/accounts/logout/")
    _fail(Client(), "intruder", 5)
    assert _log_in(client, "intruder", PASSWORD).status_code == 429


def test_a_forged_or_foreign_known_browser_cookie_opens_nothing(client, owner, other_user):
    from conversations.login_limits import KNOWN_BROWSER_COOKIE

    _fail(Client(), "owner", 5)
    client.cookies[KNOWN_BROWSER_COOKIE] = "[1]:forged:signature"
    assert _log_in(client, "owner", PASSWORD).status_code == 429
    other = Client()
    assert _log_in(other, "intruder", PASSWORD).status_code == 302  # known as intruder, not as owner
    other.post("/accounts/logout/")  # (signed in, the login page only sends them on to their threads)
    assert _log_in(other, "owner", PASSWORD).status_code == 429


def test_a_password_reset_ends_the_accounts_lockout_from_every_address(client, django_user_model, mailoutbox):
    django_user_model.objects.create_user(username="bob", email="bob@example.com", password="old-password-123")
    _fail(Client(), "bob", 5)
    _fail(Client(), "bob", 5, address="10.0.0.9")
    client.post("/accounts/password_reset/", {"email": "bob@example.com"})
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mailoutbox[0].body).group(1)
    form = client.get(link, follow=True)
    new_password = "a-brand-new-password-456"
    client.post(form.redirect_chain[-1][0], {"new_password1": new_password, "new_password2": new_password})
    assert _log_in(Client(), "bob", new_password).status_code == 302
    assert _log_in(Client(), "bob", new_password, address="10.0.0.9").status_code == 302


# --- rate limits per address (docs/adr/0051) --------------------------------------


def _too_many(response, words: str) -> None:
    html = response.content.decode()
    assert response.status_code == 429, response.status_code
    assert words in html and "Try again in" in html and 'class="auth-card"' in html
    assert 0 < int(response["Retry-After"]) <= 3600


def test_sign_ups_from_one_address_are_limited_with_a_page_saying_when_to_retry(client, settings):
    settings.HAICO_RATE_SIGNUP = "3/hour"
    for n in range(3):
        response = Client().post(
            "/accounts/signup/",
            {
                "username": f"new-{n}",
                "password1": "a-long-password-123",
                "password2": "a-long-password-123",
            },
        )
        assert response.status_code == 302
    refused = Client().post(
        "/accounts/signup/",
        {
            "username": "new-3",
            "password1": "a-long-password-123",
            "password2": "a-long-password-123",
        },
    )
    _too_many(refused, "Too many sign-ups from your network address.")
    assert not get_user_model().objects.filter(username="new-3").exists()
    # Another address signs up as usual; looking at the form is never limited.
    other = Client().post(
        "/accounts/signup/",
        {
            "username": "new-4",
            "password1": "a-long-password-123",
            "password2": "a-long-password-123",
        },
        REMOTE_ADDR="10.0.0.7",
    )
    assert other.status_code == 302 and Client().get("/accounts/signup/").status_code == 200


def test_failed_sign_ups_count_too_so_taken_names_cannot_be_listed_fast(client, owner, settings):
    settings.HAICO_RATE_SIGNUP = "3/hour"
    for _ in range(3):
        taken = client.post("/accounts/signup/", {"username": "owner", "password1": "x", "password2": "y"})
        assert taken.status_code == 400 and "already exists" in taken.content.decode()
    _too_many(client.post("/accounts/signup/", {"username": "someone", "password1": "x", "password2": "y"}), "Too many sign-ups")


def test_invited_colleagues_sign_up_from_one_office_address_past_the_address_limit(settings, staff):
    """Staff invited a team that shares one office address: each valid
    invite lets its holder sign up whatever the address's count; an
    uninvited or wrongly invited POST from there is still limited."""
    from conversations.models import Invite
    from conversations.signup import invite_create

    settings.HAICO_SIGNUP, settings.HAICO_RATE_SIGNUP = "invite", "3/hour"
    office = "203.0.113.7"
    secrets = [invite_create(created_by=staff, note=f"colleague {i}")[1] for i in range(6)]
    for i, secret in enumerate(secrets):
        response = Client(REMOTE_ADDR=office).post(
            "/accounts/signup/", {"username": f"colleague{i}", "password1": PASSWORD, "password2": PASSWORD, "invite": secret}
        )
        assert response.status_code == 302, (i, response.status_code)
    assert Invite.objects.filter(used_at__isnull=False).count() == 6
    for _ in range(3):
        guessed = Client(REMOTE_ADDR=office).post("/accounts/signup/", {"username": "x", "invite": "inv_guessed-0123456789"})
        assert guessed.status_code == 403
    _too_many(
        Client(REMOTE_ADDR=office).post("/accounts/signup/", {"username": "x", "invite": "inv_guessed-0123456789"}),
        "Too many sign-ups from your network address.",
    )


def test_one_invite_tries_names_at_the_sign_up_rate(settings, staff, owner):
    """With a valid invite, taken names are still told at most the
    sign-up rate: counted against the invite."""
    from conversations.signup import invite_create

    settings.HAICO_SIGNUP, settings.HAICO_RATE_SIGNUP = "invite", "3/hour"
    secret = invite_create(created_by=staff)[1]
    for n in range(3):
        taken = Client(REMOTE_ADDR=f"10.0.0.{n + 1}").post(
            "/accounts/signup/", {"username": "owner", "password1": PASSWORD, "password2": PASSWORD, "invite": secret}
        )
        assert taken.status_code == 400 and "already exists" in taken.content.decode()
    refused = Client(REMOTE_ADDR="10.0.0.9").post(
        "/accounts/signup/", {"username": "someone", "password1": PASSWORD, "password2": PASSWORD, "invite": secret}
    )
    _too_many(refused, "Too many sign-up attempts with this invite link.")


def test_password_reset_requests_per_address_and_mails_per_account_are_limited(django_user_model, mailoutbox, settings):
    settings.HAICO_RATE_PASSWORD_RESET = "5/hour"
    settings.HAICO_RATE_RESET_MAIL = "2/hour"
    django_user_model.objects.create_user(username="victim", email="victim@example.com", password="x-long-password-1")
    for n in range(5):
        response = Client().post(
            "/accounts/password_reset/", {"email": "victim@example.com"}, REMOTE_ADDR=f"10.0.1.{n % 2}"
        )  # two addresses take turns
        assert response.status_code == 302
    # The account got two mails; the other requests were answered the same way, and sent nothing.
    assert [m.to for m in mailoutbox] == [["victim@example.com"]] * 2
    for _ in range(2):  # 10.0.1.0 asked 3 times so far: its 4th and 5th are answered
        assert (
            Client().post("/accounts/password_reset/", {"email": "victim@example.com"}, REMOTE_ADDR="10.0.1.0").status_code == 302
        )
    _too_many(
        Client().post("/accounts/password_reset/", {"email": "victim@example.com"}, REMOTE_ADDR="10.0.1.0"),
        "Too many password reset requests",
    )
    assert len(mailoutbox) == 2


def test_failed_logins_across_usernames_from_one_address_are_limited(client, owner, settings):
    settings.HAICO_RATE_LOGIN_FAILURES = "6/hour"
    for n in range(6):  # one or two guesses for each of many usernames: no pair is locked
        assert _log_in(Client(), f"user-{n}", WRONG).status_code == 200
    _too_many(_log_in(Client(), "owner", PASSWORD), "Too many failed logins from your network address")
    _too_many(_log_in(Client(), "staff", WRONG, path="/admin/login/"), "Too many failed logins")
    # Another address, and a page that is only looked at, are not limited.
    assert _log_in(Client(), "owner", PASSWORD, address="10.0.0.8").status_code == 302
    assert Client().get("/accounts/login/").status_code == 200
