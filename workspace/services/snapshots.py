"""Per-turn snapshots: the workspace as the agent saw it at the start of a turn."""

from django.db import transaction

from .. import selectors
from ..models import Thread, WorkspaceSnapshot


@transaction.atomic
def snapshot_capture(*, thread: Thread, turn_index: int, user_message: str) -> WorkspaceSnapshot:
    """Record the workspace as the agent will see it at the start of this turn.
    Write-once. Read with the prompt's own light reads (selectors.workspace_reading_for):
    the same values, hard preferences first and the plan in pre-order."""
    reading = selectors.workspace_reading_for(thread=thread)
    title, content, _updated_at, _version = reading.document or ("Untitled", "", None, 0)
    return WorkspaceSnapshot.objects.create(
        thread=thread,
        turn_index=turn_index,
        user_message=user_message,
        document_title=title,
        document_content=content,
        objective_text=reading.objective_text,
        preferences_json=[
            {"title": title_, "subtitle": subtitle, "kind": kind, "locked": locked}
            for kind, title_, subtitle, locked in reading.preferences
        ],
        todos_json=[
            {"text": text, "done": done, "position": position, "depth": depth}
            for position, (text, done, depth) in enumerate(reading.todos)
        ],
    )
