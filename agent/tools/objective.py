"""The objective: the agent's one-line understanding of the user's goal."""

from workspace.services import objective as objective_services

from ..context import AGENT_AUTHOR, Author, Seen
from .decorator import workspace_tool
from .schemas import SetObjectiveArgs


@workspace_tool(
    name="set_objective",
    description="Record or replace your one-line understanding of what the user is trying to achieve. "
    "Refine it whenever the goal becomes clearer.",
    args_schema=SetObjectiveArgs,
    uses_seen=True,
    authored=True,
    destructive=True,
    idempotent=True,
)
def set_objective(thread, *, text: str, seen: Seen | None = None, author: Author = AGENT_AUTHOR) -> str:
    objective = objective_services.objective_set(
        thread=thread,
        text=text,
        author=author.kind,
        token_name=author.token_name,
        person=author.person,
        known=seen.objective_known() if seen is not None else None,
    )
    if seen is not None:
        seen.objective_written.add(objective.text)
    return f"Objective set to: {objective.text}"
