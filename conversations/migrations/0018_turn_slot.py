"""The running-turn columns move from the thread's row to a table of their
own (conversations.TurnSlot), carrying every claim as it is: a turn running
while the migration runs keeps its slot, its Stop request and its keepalive
time. Reversible: reversing puts them back on the thread."""

import django.db.models.deletion
from django.db import migrations, models


def copy_to_slots(apps, schema_editor):
    Thread = apps.get_model("workspace", "Thread")
    TurnSlot = apps.get_model("conversations", "TurnSlot")
    rows = Thread.objects.filter(models.Q(running_turn_index__isnull=False) | models.Q(cancel_requested=True))
    TurnSlot.objects.bulk_create(
        [
            TurnSlot(thread_id=pk, turn_index=index, since=since, cancel_requested=cancel)
            for pk, index, since, cancel in rows.values_list("pk", "running_turn_index", "running_since", "cancel_requested")
        ],
        batch_size=500,
    )


def copy_back(apps, schema_editor):
    Thread = apps.get_model("workspace", "Thread")
    TurnSlot = apps.get_model("conversations", "TurnSlot")
    for slot in TurnSlot.objects.all().iterator(chunk_size=500):
        Thread.objects.filter(pk=slot.thread_id).update(
            running_turn_index=slot.turn_index, running_since=slot.since, cancel_requested=slot.cancel_requested
        )


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0017_model_usage"),
        ("workspace", "0010_imports_keep_their_times"),
    ]
    # The thread's columns are dropped only once their values are here.
    run_before = [("workspace", "0011_thread_running_columns_moved")]

    operations = [
        migrations.CreateModel(
            name="TurnSlot",
            fields=[
                (
                    "thread",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="turn_slot",
                        serialize=False,
                        to="workspace.thread",
                    ),
                ),
                ("turn_index", models.PositiveIntegerField(blank=True, null=True)),
                ("since", models.DateTimeField(blank=True, null=True)),
                ("cancel_requested", models.BooleanField(default=False)),
            ],
            options={"verbose_name": "running-turn slot"},
        ),
        migrations.RunPython(copy_to_slots, copy_back),
    ]
