"""The running-turn columns leave the thread's row: the conversation layer
keeps them in a table of its own, which its migration fills from these
columns before this one runs (it declares so)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("workspace", "0010_imports_keep_their_times")]

    operations = [
        migrations.RemoveField(model_name="thread", name="running_turn_index"),
        migrations.RemoveField(model_name="thread", name="running_since"),
        migrations.RemoveField(model_name="thread", name="cancel_requested"),
    ]
