"""The flush that ends each test with `transaction=True`, as tests/conftest.py
changes it (docs/adr/0165): every table emptied but the content types and
permissions the migrations made, which stay as they were, and are made again
when a test removed some."""

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command

from workspace.models import Thread


def _flush_as_after_a_test():
    # What django.test.TransactionTestCase runs after each such test.
    call_command(
        "flush",
        verbosity=0,
        interactive=False,
        database="default",
        reset_sequences=False,
        allow_cascade=False,
        inhibit_post_migrate=False,
    )


@pytest.mark.django_db(transaction=True)
def test_the_flush_empties_the_tables_and_keeps_the_migrated_permissions(owner, thread):
    permissions = sorted(Permission.objects.values_list("pk", "codename"))
    assert ("add_thread" in {codename for _, codename in permissions}) and len(permissions) > 50
    _flush_as_after_a_test()
    assert not Thread.objects.exists()
    assert not type(owner).objects.exists()
    assert sorted(Permission.objects.values_list("pk", "codename")) == permissions


@pytest.mark.django_db(transaction=True)
def test_a_content_type_a_test_removed_is_made_again_with_its_permissions():
    _flush_as_after_a_test()  # the first flush of a run counts what it leaves
    ContentType.objects.filter(app_label="workspace", model="thread").delete()
    assert not Permission.objects.filter(codename="add_thread").exists()
    _flush_as_after_a_test()
    assert ContentType.objects.filter(app_label="workspace", model="thread").exists()
    assert Permission.objects.filter(codename="add_thread", content_type__model="thread").exists()
