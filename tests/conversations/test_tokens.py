"""Personal access tokens: made on the account page and shown once, stored
only as a digest, revoked at once, and only ever the person's own."""

import re

import pytest

from conversations.models import AccessToken
from conversations.tokens import (
    MAX_ACTIVE_TOKENS,
    digest,
    token_create,
    token_for_secret,
    token_revoke,
)

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


@pytest.mark.parametrize("name, message", [("", "Name cannot be empty"), ("x" * 101, "Name is too long"),
                                           ("bad\x00", "NUL")])
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
