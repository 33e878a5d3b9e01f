"""Until now a thread had one person, its owner: every turn was sent by
the owner and every activity entry came from the owner's turns, MCP
clients or answers, so they are recorded as the owner's (docs/adr/0085).
Reversing leaves the columns to 0019's reverse."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def owners_recorded(apps, schema_editor):
    Thread = apps.get_model("workspace", "Thread")

    def owner(field: str):
        return Subquery(Thread.objects.filter(pk=OuterRef("thread_id")).values(field)[:1])

    for name in ("Turn", "ActivityLogEntry"):
        rows = apps.get_model("conversations", name).objects.filter(person__isnull=True, person_username="")
        rows.update(person=owner("owner_id"), person_username=owner("owner__username"))


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0019_turns_and_activity_record_the_person"),
        ("workspace", "0015_revisions_by_the_owner_until_now"),
    ]

    operations = [migrations.RunPython(owners_recorded, migrations.RunPython.noop)]
