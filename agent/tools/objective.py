"""The objective: the agent's one-line understanding of the user's goal."""

from workspace.services import objective as objective_services

from .decorator import workspace_tool
from .schemas import SetObjectiveArgs


@workspace_tool(
    name="set_objective",
    description="Record or replace your one-line understanding of what the user is trying to achieve. "
    "Refine it whenever the goal becomes clearer.",
    args_schema=SetObjectiveArgs,
)
def set_objective(thread, *, text: str) -> str:
    objective = objective_services.objective_set(thread=thread, text=text, author=objective_services.Author.AGENT)
    return f"Objective set to: {objective.text}"
