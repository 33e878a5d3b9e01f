"""Thread.chat_model and Turn.model_name name a provider as well as a model
(agent.catalogue, docs/adr/0062): a model name stored before the catalogue
was one of the environment's models, so it becomes `env:<name>`. Backwards,
the prefix goes again, and a catalogue model (which did not exist before)
becomes the default ("")."""

from django.db import migrations
from django.db.models import Q, Value
from django.db.models.functions import Concat, Substr

ENV, CATALOGUE = "env:", "catalogue:"


def _unprefixed(field):
    return Q(**{f"{field}__gt": ""}) & ~Q(**{f"{field}__startswith": ENV}) & ~Q(**{f"{field}__startswith": CATALOGUE})


def forwards(apps, schema_editor):
    for label, field in (("workspace.Thread", "chat_model"), ("conversations.Turn", "model_name")):
        model = apps.get_model(label)
        model.objects.filter(_unprefixed(field)).update(**{field: Concat(Value(ENV), field)})


def backwards(apps, schema_editor):
    for label, field in (("workspace.Thread", "chat_model"), ("conversations.Turn", "model_name")):
        model = apps.get_model(label)
        model.objects.filter(**{f"{field}__startswith": CATALOGUE}).update(**{field: ""})
        model.objects.filter(**{f"{field}__startswith": ENV}).update(**{field: Substr(field, len(ENV) + 1)})


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0015_accounts_invites_token_scopes"),
        ("workspace", "0008_thread_chat_model"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
