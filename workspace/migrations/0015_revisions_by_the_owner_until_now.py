"""Until now a thread had one person, its owner: the document and objective
revisions a person, the agent or an MCP client wrote, and the review
decisions, are recorded as the owner's (docs/adr/0085). A script's
revisions ("system") stay with no person. Reversing leaves the columns to
0014's reverse."""

from django.db import migrations
from django.db.models import OuterRef, Subquery

PEOPLE_KINDS = ("person", "agent", "mcp")


def owners_recorded(apps, schema_editor):
    Thread = apps.get_model("workspace", "Thread")
    DocumentRevision = apps.get_model("workspace", "DocumentRevision")
    ObjectiveRevision = apps.get_model("workspace", "ObjectiveRevision")
    DocumentReviewDecision = apps.get_model("workspace", "DocumentReviewDecision")

    Document = apps.get_model("workspace", "Document")

    # An update may not join, so the owner is looked up from the row's own column.
    def through_document(field: str):
        return Subquery(Document.objects.filter(pk=OuterRef("document_id")).values(f"thread__{field}")[:1])

    def through_thread(field: str):
        return Subquery(Thread.objects.filter(pk=OuterRef("thread_id")).values(field)[:1])

    for model, owner, kinds in (
        (DocumentRevision, through_document, PEOPLE_KINDS),
        (ObjectiveRevision, through_thread, PEOPLE_KINDS),
        (DocumentReviewDecision, through_document, None),
    ):
        rows = model.objects.filter(person__isnull=True, person_username="")
        if kinds is not None:
            rows = rows.filter(author__in=kinds)
        rows.update(person=owner("owner_id"), person_username=owner("owner__username"))


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0014_revisions_record_the_person"),
    ]

    operations = [migrations.RunPython(owners_recorded, migrations.RunPython.noop)]
