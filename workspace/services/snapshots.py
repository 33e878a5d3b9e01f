"""Per-turn snapshots: the workspace as the agent saw it at the start of a turn."""

from django.db import transaction

from .. import selectors
from ..models import Thread, WorkspaceSnapshot


@transaction.atomic
def snapshot_capture(*, thread: Thread, turn_index: int, user_message: str) -> WorkspaceSnapshot:
    """Record the workspace as the agent will see it at the start of this turn. Write-once."""
    document = selectors.document_for(thread=thread)
    return WorkspaceSnapshot.objects.create(
        thread=thread,
        turn_index=turn_index,
        user_message=user_message,
        document_title=document.title,
        document_content=document.content,
        objective_text=selectors.objective_text_for(thread=thread),
        preferences_json=[
            {"title": p.title, "subtitle": p.subtitle, "kind": p.kind, "locked": p.locked}
            for p in selectors.preferences_for(thread=thread)
        ],
        todos_json=[
            {"text": t.text, "done": t.done, "position": t.position, "depth": t.depth}
            for t in selectors.todos_for(thread=thread)
        ],
    )
