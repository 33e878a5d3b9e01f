"""The objective: the agent's one-line understanding of the user's goal."""

from workspace.services import objective as objective_services

from ..context import AGENT_AUTHOR, Author
from .decorator import workspace_tool
from .schemas import SetObjectiveArgs


@workspace_tool(
    name="set_objective",
    description="Record or replace your one-line understanding of what the user is trying to achieve. "
    "Refine it whenever the goal becomes clearer.",
    args_schema=SetObjectiveArgs,
    authored=True,
    destructive=True,
    idempotent=True,
)
def set_objective(thread, *, text: str, author: Author = AGENT_AUTHOR) -> str:
    objective = objective_services.objective_set(
        thread=thread, text=text, author=author.kind, token_name=author.token_name, person=author.person
    )
    return f"Objective set to: {objective.text}"
