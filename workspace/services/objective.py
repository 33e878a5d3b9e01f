"""The objective: the agent's one-line reading of the goal, which the person may edit.

Every change is kept with who made it (ObjectiveRevision), so its history
shows each value once, by whom and when, not only what a turn started with."""

from collections.abc import Collection

from django.db import transaction

from .. import people
from ..errors import ObjectiveChanged
from ..models import OBJECTIVE_MAX_CHARS, Objective, ObjectiveRevision, Thread
from ..text import as_a_page_reads_it, clean_text
from .common import changed, turn_counter

Author = ObjectiveRevision.Author


@transaction.atomic
def objective_set(
    *,
    thread: Thread,
    text: str,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
    known: Collection[str] | None = None,
) -> Objective:
    """Write the objective. `author`: the person's edit, the agent's
    `set_objective`, the person through MCP (with the token's name), or a
    script (the default), as for the document. `person`: the user who
    wrote it, or whose turn or token it was (docs/adr/0085). `known`: the
    values the caller knows the objective to hold (what the agent's prompt
    showed, and what its run wrote since; "" for none); when it now holds
    another, someone wrote it meanwhile, and it is kept (ObjectiveChanged,
    docs/adr/0114)."""
    text = clean_text(text, label="Objective", max_chars=OBJECTIVE_MAX_CHARS)
    # At most one row (a one-to-one): `.first()`'s ORDER BY and LIMIT were a
    # third of this read's cost, to pick among none (docs/adr/0127).
    objective = next(iter(Objective.objects.select_for_update().filter(thread=thread)), None)
    if objective is not None and objective.text == text:
        return objective  # the same value again is not a change
    current = objective.text if objective is not None else ""
    if known is not None and as_a_page_reads_it(current) not in {as_a_page_reads_it(value) for value in known}:
        raise ObjectiveChanged(_changed_meanwhile(thread, current, author), base={"was": current})
    if objective is None:
        objective = Objective.objects.create(thread=thread, text=text)
    else:
        objective.text = text
        objective.save(update_fields=["text", "updated_at"])
    # The counter as it is now (the caller's row may be older): during
    # turn N, or after it, as the write's own counting statement returns it.
    counted = changed(thread.pk, "objective")
    ObjectiveRevision.objects.create(
        thread=thread,
        text=text,
        author=author,
        token_name=token_name,
        turn_index=turn_counter(thread.pk, counted),
        **people.by(person),
    )
    return objective


def _changed_meanwhile(thread: Thread, current: str, author: str) -> str:
    """The refusal, naming who wrote the objective it keeps: for the agent,
    or for a person whose form showed an older one (docs/adr/0125)."""
    latest = ObjectiveRevision.objects.filter(thread=thread).order_by("-created_at", "-pk").first()
    who = (latest.person_name if latest is not None else "") or "Someone"
    if latest is not None and latest.author == Author.AGENT:
        who = "Another turn of the agent" if author == Author.AGENT else "The agent"
    if author == Author.PERSON:
        return (
            f"{who} changed the objective meanwhile: it now reads “{current}”. Your text was not saved and is still "
            "in the form: Save again to replace theirs, or Cancel to keep it."
        )
    return (
        f"Nothing was changed: {who} set the objective to “{current}” after you were shown it, so theirs stays. "
        "If yours is still better, propose it to the person in your answer instead."
    )
