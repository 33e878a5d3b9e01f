"""The objective: the agent's one-line reading of the goal, which the person may edit."""

from django.db import transaction

from ..models import OBJECTIVE_MAX_CHARS, Objective, Thread
from ..text import clean_text
from .common import changed


@transaction.atomic
def objective_set(*, thread: Thread, text: str) -> Objective:
    text = clean_text(text, label="Objective", max_chars=OBJECTIVE_MAX_CHARS)
    objective, _ = Objective.objects.update_or_create(thread=thread, defaults={"text": text})
    changed(thread.pk, "objective")
    return objective
