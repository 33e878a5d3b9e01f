"""conversations/0019-0020 + workspace/0014-0015: until then a thread had
one person, so its turns, activity entries, review answers and the
person's, the agent's and MCP's revisions are recorded as its owner's; a
script's ("system") revision stays with nobody (docs/adr/0085)."""

import pytest

from tests.support.migrations import migrate_to, newest_schema_restored, start_at

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("conversations", "0018_turn_slot"), ("workspace", "0013_document_revision_copies_dropped")]
AFTER = [
    ("conversations", "0020_turns_and_activity_by_the_owner_until_now"),
    ("workspace", "0015_revisions_by_the_owner_until_now"),
]


def test_existing_rows_are_recorded_as_their_threads_owners(owner, other_user):
    apps = start_at(BEFORE, people=[owner, other_user])
    Thread = apps.get_model("workspace", "Thread")
    ContentBlob = apps.get_model("workspace", "ContentBlob")
    mine = Thread.objects.create(owner_id=owner.pk, title="Mine", turn_index=1)
    theirs = Thread.objects.create(owner_id=other_user.pk, title="Theirs", turn_index=1)
    blob = ContentBlob.objects.create(sha256="0" * 64, length=0, text="")
    for thread in (mine, theirs):
        apps.get_model("conversations", "Turn").objects.create(thread=thread, index=1, user_message="hi")
        apps.get_model("conversations", "ActivityLogEntry").objects.create(thread=thread, message="Retried once.")
        document = apps.get_model("workspace", "Document").objects.create(thread=thread, version=4)
        for version, author in enumerate(("person", "agent", "mcp", "system"), start=1):
            apps.get_model("workspace", "DocumentRevision").objects.create(
                document=document, version=version, title="T", body=blob, author=author
            )
        apps.get_model("workspace", "ObjectiveRevision").objects.create(thread=thread, text="Goal", author="agent")
        apps.get_model("workspace", "DocumentReviewDecision").objects.create(
            document=document, turn_index=1, hunk=0, decision="kept"
        )
    try:
        apps = migrate_to(AFTER)

        def recorded(app, model, **filters):
            rows = apps.get_model(app, model).objects.filter(**filters)
            return sorted(rows.values_list("person_id", "person_username"), key=str)

        for thread_id, user in ((mine.pk, owner), (theirs.pk, other_user)):
            owner_of_it = [(user.pk, user.username)]
            assert recorded("conversations", "Turn", thread_id=thread_id) == owner_of_it
            assert recorded("conversations", "ActivityLogEntry", thread_id=thread_id) == owner_of_it
            assert recorded("workspace", "ObjectiveRevision", thread_id=thread_id) == owner_of_it
            assert recorded("workspace", "DocumentReviewDecision", document__thread_id=thread_id) == owner_of_it
            revisions = apps.get_model("workspace", "DocumentRevision").objects.filter(document__thread_id=thread_id)
            assert sorted(revisions.values_list("version", "person_id", "person_username")) == [
                (1, user.pk, user.username),
                (2, user.pk, user.username),
                (3, user.pk, user.username),
                (4, None, ""),  # a script's
            ]
    finally:
        newest_schema_restored()
