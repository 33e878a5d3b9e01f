"""Past artifacts: an index, and one artifact's full payload by id (the
prompt shows only a pointer to the latest one: docs/adr/0072)."""

import json

from workspace import selectors
from workspace.errors import NotFound

from .decorator import workspace_tool
from .schemas import GetArtifactArgs, ListArtifactsArgs


@workspace_tool(
    name="list_artifacts",
    description="List the charts, tables and other artifacts made earlier in this conversation, newest first.",
    args_schema=ListArtifactsArgs,
    read_only=True,
)
def list_artifacts(thread, *, artifact_type: str | None = None, limit: int = 20) -> str:
    artifacts = selectors.artifacts_for(thread=thread, artifact_type=artifact_type, limit=limit)
    if not artifacts:
        return f"(no {artifact_type} artifacts yet)" if artifact_type else "(no artifacts yet)"
    return "\n".join(f"#{a.pk} [turn {a.turn_index}] {a.artifact_type}: {a.title}" for a in artifacts)


@workspace_tool(
    name="get_artifact",
    description="Fetch one past artifact by id (its type, title, turn and full payload). "
    "Refer to it by id afterwards rather than repeating its data.",
    args_schema=GetArtifactArgs,
    read_only=True,
)
def get_artifact(thread, *, artifact_id: int) -> str:
    # Ids beyond the database's integer range cannot exist; don't send them to the query.
    artifact = selectors.artifact_for(thread=thread, artifact_id=artifact_id) if 0 < artifact_id < 2**63 else None
    if artifact is None:
        raise NotFound(f"No artifact with id {artifact_id} in this conversation; call list_artifacts to see the ids.")
    return json.dumps(
        {
            "id": artifact.pk,
            "type": artifact.artifact_type,
            "title": artifact.title,
            "turn_index": artifact.turn_index,
            "payload": artifact.payload,
        },
        ensure_ascii=False,
    )
