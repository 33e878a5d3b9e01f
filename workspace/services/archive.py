"""Writing an imported archive's workspace into a new thread (docs/adr/0025).

The thread is brand new and shown only once the import has finished, so
nothing is announced: its page renders it whole when first opened. The data
was checked by workspace.archive.parse_workspace."""

from django.db import transaction

from ..models import (
    Artifact,
    Document,
    DocumentReviewDecision,
    DocumentRevision,
    Objective,
    ObjectiveRevision,
    Preference,
    Thread,
    Todo,
)
from .snapshots import snapshot_store


@transaction.atomic
def workspace_restore(*, thread: Thread, workspace: dict) -> None:
    if workspace["objective"] is not None:
        Objective.objects.create(thread=thread, text=workspace["objective"])
    ObjectiveRevision.objects.bulk_create(
        ObjectiveRevision(
            thread=thread, text=r["text"], author=r["author"], token_name=r["token"], turn_index=r["turn"]
        )
        for r in workspace["objective_history"]
    )
    Preference.objects.bulk_create(
        Preference(thread=thread, position=position, **preference)
        for position, preference in enumerate(workspace["preferences"])
    )
    Todo.objects.bulk_create(
        Todo(thread=thread, position=position, **step) for position, step in enumerate(workspace["plan"])
    )
    document = workspace["document"]
    if document is not None:
        row = Document.objects.create(
            thread=thread, title=document["title"], content=document["content"], version=document["version"]
        )
        DocumentRevision.objects.bulk_create(
            DocumentRevision(
                document=row, version=r["version"], title=r["title"], content=r["content"], author=r["author"],
                token_name=r["token"], turn_index=r["turn"],
            )
            for r in document["revisions"]
        )
        DocumentReviewDecision.objects.bulk_create(
            DocumentReviewDecision(document=row, turn_index=d["turn"], hunk=d["hunk"], decision=d["decision"])
            for d in document["review_decisions"]
        )
    Artifact.objects.bulk_create(
        Artifact(thread=thread, artifact_type=a["artifact_type"], title=a["title"], payload=a["payload"], turn_index=a["turn"])
        for a in workspace["artifacts"]
    )
    for snapshot in sorted(workspace["snapshots"], key=lambda s: s["turn"]):
        snapshot_store(
            thread=thread, turn_index=snapshot["turn"], user_message=snapshot["user_message"],
            document_title=snapshot["document_title"], document_content=snapshot["document_content"],
            objective_text=snapshot["objective"], preferences=snapshot["preferences"],
            todos=[
                {"text": step["text"], "done": step["done"], "position": position, "depth": step["depth"]}
                for position, step in enumerate(snapshot["plan"])
            ],
        )
