"""workspace/0012 + 0013: existing revisions keep their texts, now stored by
content, each a delta against the version before it; reversing gives the
column back."""

import pytest

from tests.support.migrations import migrate_to, migrate_to_latest, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("workspace", "0011_thread_running_columns_moved")]
LONG = "".join(f"Paragraph {i} of a document that is long enough.\n" for i in range(300))


def _latest():
    migrate_to_latest()


def _old_rows(apps, owner):
    Thread = apps.get_model("workspace", "Thread")
    Document = apps.get_model("workspace", "Document")
    Revision = apps.get_model("workspace", "DocumentRevision")
    texts = {
        "One": ["", LONG, LONG.replace("Paragraph 7 ", "Paragraph seven "), "naïve 🌍\r\nkept\r", LONG],
        "Two": [LONG.replace("Paragraph 7 ", "Paragraph seven ")],
    }
    expected = []
    for title, versions in texts.items():
        thread = Thread.objects.create(owner_id=owner.pk, title=title)
        document = Document.objects.create(thread=thread, title="Doc", content=versions[-1], version=len(versions))
        for version, content in enumerate(versions, start=1):
            Revision.objects.create(document=document, version=version, title=f"Doc v{version}", content=content, author="person")
            expected.append((title, version, f"Doc v{version}", content))
    return expected


def test_existing_revisions_read_back_as_they_were_each_a_delta_against_the_one_before(owner):
    try:
        expected = _old_rows(start_at(BEFORE, people=[owner]), owner)
        _latest()
        from workspace.models import DocumentRevision

        revisions = DocumentRevision.objects.order_by("document__thread__title", "version").select_related("document__thread")
        assert [(r.document.thread.title, r.version, r.title, r.content) for r in revisions] == expected
        one = {r.version: r for r in revisions.filter(document__thread__title="One").select_related("body")}
        assert one[3].body.text is None and one[3].body.base_id == one[2].body_id and len(one[3].body.delta) < 100
        assert one[5].body_id == one[2].body_id  # the same text is stored once
        two = revisions.get(document__thread__title="Two")
        assert two.body_id == one[3].body_id  # whichever document holds it
    finally:
        newest_schema_restored()


@pytest.mark.heavy  # walks back over every later migration
def test_reversing_gives_the_column_back(owner):
    try:
        expected = _old_rows(start_at(BEFORE, people=[owner]), owner)
        _latest()
        apps = migrate_to(BEFORE)
        Revision = apps.get_model("workspace", "DocumentRevision")
        rows = Revision.objects.order_by("document__thread__title", "version").values_list(
            "document__thread__title", "version", "title", "content"
        )
        assert [tuple(row) for row in rows] == expected
    finally:
        newest_schema_restored()
