"""Personal access tokens: made on the account page and shown once, stored
only as a digest, revoked at once, and only ever the person's own."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from conversations.models import AccessToken
from conversations.tokens import (
    MAX_ACTIVE_TOKENS,
    TokenRefused,
    digest,
    token_check,
    token_create,
    token_for_secret,
    token_revoke,
)
from workspace.errors import InvalidInput

pytestmark = pytest.mark.django_db


def _secret_on(page: str) -> str:
    match = re.search(r'<code class="token-secret" data-token-secret>(haico_[A-Za-z0-9_-]+)</code>', page)
    assert match, page
    return match.group(1)


def test_a_new_token_is_shown_once_and_stored_as_a_digest(owner_client, owner):
    response = owner_client.post("/accounts/tokens/", {"name": "  Laptop   editor "})
    page = response.content.decode()
    assert response.status_code == 200 and "no-store" in response["Cache-Control"].split(", ")
    assert 'role="region" aria-label="New token"' in page
    secret = _secret_on(page)
    token = AccessToken.objects.get(user=owner)
    assert token.name == "Laptop editor" and token.secret_sha256 == digest(secret)
    assert secret not in str(AccessToken.objects.filter(pk=token.pk).values().get())
    again = owner_client.get("/accounts/tokens/").content.decode()
    assert secret not in again and "Laptop editor" in again and token.prefix in again and "Never" in again
    assert token_for_secret(secret).pk == token.pk
    assert AccessToken.objects.get(pk=token.pk).last_used_at is not None


def test_a_revoked_token_stops_working_at_once(owner_client, owner):
    token, secret = token_create(user=owner, name="Old laptop")
    response = owner_client.post(f"/accounts/tokens/{token.pk}/revoke/")
    assert response.status_code == 302
    assert token_for_secret(secret) is None
    assert "Revoked" in owner_client.get("/accounts/tokens/").content.decode()


def test_another_persons_token_can_be_neither_seen_nor_revoked(other_client, owner):
    token, secret = token_create(user=owner, name="Owner's token")
    assert "Owner's token" not in other_client.get("/accounts/tokens/").content.decode()
    assert other_client.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 404
    assert token_for_secret(secret) is not None


def test_a_deactivated_person_s_token_is_refused(owner):
    _token, secret = token_create(user=owner, name="x")
    owner.is_active = False
    owner.save()
    assert token_for_secret(secret) is None


@pytest.mark.parametrize("name, message", [("", "Name cannot be empty"), ("x" * 101, "Name is too long"), ("bad\x00", "NUL")])
def test_a_bad_name_is_refused_with_a_message(owner_client, owner, name, message):
    response = owner_client.post("/accounts/tokens/", {"name": name})
    assert response.status_code == 400 and message in response.content.decode()
    assert not AccessToken.objects.exists()


def test_the_number_of_live_tokens_is_capped(owner):
    for n in range(MAX_ACTIVE_TOKENS):
        token_create(user=owner, name=f"t{n}")
    with pytest.raises(Exception, match="revoke one"):
        token_create(user=owner, name="one too many")
    token_revoke(user=owner, token_id=AccessToken.objects.filter(user=owner).first().pk)
    token_create(user=owner, name="now fits")


def test_secrets_that_are_not_tokens_find_nothing():
    for secret in ("", "haico_", "not-a-token", "haico_" + "x" * 500, None, 5):
        assert token_for_secret(secret) is None


# --- expiry and read-only scope -------------------------------------------------------------


def test_a_token_made_to_expire_and_read_only_is_listed_so(owner_client, owner):
    response = owner_client.post("/accounts/tokens/", {"name": "Reader", "expires": "30", "read_only": "1"})
    assert response.status_code == 200
    page = response.content.decode()
    token = AccessToken.objects.get(user=owner)
    assert token.read_only and timedelta(days=29, hours=23) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert "(read-only)" in page and "valid until" in page
    listed = owner_client.get("/accounts/tokens/").content.decode()
    assert "Read-only" in listed and token.expires_at.strftime("%-d %b %Y") in listed


def test_a_token_by_default_never_expires_and_may_write(owner_client, owner):
    owner_client.post("/accounts/tokens/", {"name": "Writer"})
    token = AccessToken.objects.get(user=owner)
    assert token.expires_at is None and not token.read_only
    assert "Read and write" in owner_client.get("/accounts/tokens/").content.decode()


@pytest.mark.parametrize("expires", ["14", "", "never ", "-1", "9" * 30, "²"])
def test_an_expiry_not_offered_is_refused(owner_client, owner, expires):
    response = owner_client.post("/accounts/tokens/", {"name": "x", "expires": expires})
    assert response.status_code == 400 and "Choose when the token expires" in response.content.decode()
    assert not AccessToken.objects.exists()
    with pytest.raises(InvalidInput):
        token_create(user=owner, name="x", expires_in_days=14)


def test_an_expired_token_is_refused_saying_so_and_listed_as_expired(owner_client, owner):
    token, secret = token_create(user=owner, name="Short", expires_in_days=7)
    assert token_check(secret).pk == token.pk
    AccessToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(TokenRefused, match="This access token expired on .* UTC; make a new one at /accounts/tokens/"):
        token_check(secret)
    assert token_for_secret(secret) is None
    assert "Expired" in owner_client.get("/accounts/tokens/").content.decode()
