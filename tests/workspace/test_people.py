"""workspace.people: the one name shown for a person (full name, else
username), the kept username when the user is gone, and which names an
imported archive links to an account (docs/adr/0085)."""

import pytest

from workspace import people
from workspace.models import DocumentRevision
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db


def test_the_name_shown_is_the_full_name_if_set_else_the_username(owner):
    assert people.display_name(owner) == "owner"
    owner.first_name, owner.last_name = "Ada", "Lovelace"
    assert people.display_name(owner) == "Ada Lovelace"
    owner.first_name, owner.last_name = "  ", ""
    assert people.display_name(owner) == "owner"
    assert people.display_name(None) == ""


def test_a_row_keeps_the_username_and_shows_it_once_the_user_is_gone(owner, thread):
    owner.first_name = "Ada"
    owner.save()
    document_services.document_save(thread=thread, content="by Ada", author="person", person=owner)
    revision = DocumentRevision.objects.get(document__thread=thread)
    assert (revision.person_name, revision.person_username) == ("Ada", "owner")
    # The user gone (the link is SET_NULL): the kept username names them.
    DocumentRevision.objects.filter(pk=revision.pk).update(person=None)
    assert DocumentRevision.objects.get(pk=revision.pk).person_name == "owner"


def test_nobody_is_recorded_for_an_anonymous_or_missing_user(owner):
    from django.contrib.auth.models import AnonymousUser

    assert people.by(None) == people.by(AnonymousUser()) == {"person": None, "person_username": ""}
    assert people.by(owner) == {"person": owner, "person_username": "owner"}


def test_an_import_links_only_the_importers_own_name_and_keeps_every_other_as_text(owner, other_user):
    assert people.imported("owner", importer=owner) == {"person": owner, "person_username": "owner"}
    # "intruder" has an account here, but an archive cannot make it the author of anything.
    assert people.imported("intruder", importer=owner) == {"person": None, "person_username": "intruder"}
    assert people.imported("nobody-here", importer=owner) == {"person": None, "person_username": "nobody-here"}
    assert people.imported("", importer=owner) == {"person": None, "person_username": ""}
