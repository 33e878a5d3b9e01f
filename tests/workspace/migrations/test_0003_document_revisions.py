"""workspace/0003: existing documents get a revision for their current version."""

import pytest

from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("workspace", "0002_thread_owned_by_workspace")]
AFTER = [("workspace", "0003_document_revisions")]


def test_the_current_version_of_each_existing_document_is_recorded(owner):
    apps = start_at(BEFORE, people=[owner])
    Thread, Document = apps.get_model("workspace", "Thread"), apps.get_model("workspace", "Document")
    first = Thread.objects.create(owner_id=owner.pk, title="One")
    second = Thread.objects.create(owner_id=owner.pk, title="Two")
    Document.objects.create(thread=first, title="Report", content="Seven versions in.", version=7)
    Document.objects.create(thread=second, title="Notes", content="", version=1)
    try:
        apps = migrate_to(AFTER)
        Revision = apps.get_model("workspace", "DocumentRevision")
        assert sorted(Revision.objects.values_list("document__thread__title", "version", "title", "content", "author")) == [
            ("One", 7, "Report", "Seven versions in.", "system"),
            ("Two", 1, "Notes", "", "system"),
        ]
    finally:
        newest_schema_restored()
