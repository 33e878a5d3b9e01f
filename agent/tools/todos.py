"""The plan: the agent's execution ledger, a nested list of steps addressed by
1-based index in outline (pre-order) order. Each writing call is one entry
of the plan's history, recorded as its author's (the agent on the turn's
person's behalf, or the person through MCP: docs/adr/0090)."""

from workspace import selectors
from workspace.services import plan as plan_services

from ..context import AGENT_AUTHOR, Author, Seen
from ..workspace_lines import plan_line
from .decorator import workspace_tool
from .schemas import AddTodosArgs, TodoIndicesArgs, UpdateTodosArgs
from .text import Summary, batch_summary


def _shown(seen: Seen | None) -> tuple[int, ...] | None:
    """The plan as the model call was shown it, which its indices refer to."""
    return seen.plan_shown if seen is not None else None


def _steps_shown(seen: Seen | None) -> dict[int, tuple[str, bool]] | None:
    """Each step's text and mark as the model call was shown them."""
    return seen.plan_steps_shown if seen is not None else None


def _written(result, seen: Seen | None) -> Summary:
    """The batch's summary, the steps it changed noted as the run's own
    (Seen.plan_steps_written). A removal needs no note: its steps are gone."""
    if seen is not None:
        seen.plan_steps_written(result.updated)
    return batch_summary(result)


def _recorded(author: Author) -> dict:
    """Whom the plan's history records the call as."""
    return {"author": author.kind, "token_name": author.token_name, "person": author.person}


@workspace_tool(
    name="add_todos",
    description="Add plan steps as an outline (each with a depth). Pass parent_index to nest them under an "
    "existing step; a single step is a one-element list.",
    args_schema=AddTodosArgs,
    uses_seen=True,
    authored=True,
)
def add_todos(
    thread, *, steps: list[dict], parent_index: int | None = None, seen: Seen | None = None, author: Author = AGENT_AUTHOR
) -> str:
    created = plan_services.todos_add_outline(
        thread=thread, steps=steps, parent_index=parent_index, shown=_shown(seen), **_recorded(author)
    )
    if seen is not None:
        seen.plan_steps_added({todo.pk: (todo.text, todo.done) for todo in created})
    # Positions are dense and 0-based, so position + 1 is the index the other tools take.
    listed = ", ".join(f"#{todo.position + 1} '{todo.text}'" for todo in created)
    where = f" under step #{parent_index}" if parent_index is not None else ""
    noun = "step" if len(created) == 1 else "steps"
    return f"Added {len(created)} {noun}{where}: {listed}."


@workspace_tool(
    name="toggle_todos",
    description="Flip the done mark of plan steps (list of their #N indices; one step is a one-element list).",
    args_schema=TodoIndicesArgs,
    uses_seen=True,
    authored=True,
    destructive=True,
)
def toggle_todos(thread, *, indices: list[int], seen: Seen | None = None, author: Author = AGENT_AUTHOR) -> Summary:
    return _written(
        plan_services.todos_toggle_by_index(
            thread=thread, indices=indices, shown=_shown(seen), steps_shown=_steps_shown(seen), **_recorded(author)
        ),
        seen,
    )


@workspace_tool(
    name="update_todos",
    description="Rewrite the text of plan steps (list of {index, text}, index being the step's #N).",
    args_schema=UpdateTodosArgs,
    uses_seen=True,
    authored=True,
    destructive=True,
    idempotent=True,
)
def update_todos(thread, *, updates: list[dict], seen: Seen | None = None, author: Author = AGENT_AUTHOR) -> Summary:
    return _written(
        plan_services.todos_update_by_index(
            thread=thread, updates=updates, shown=_shown(seen), steps_shown=_steps_shown(seen), **_recorded(author)
        ),
        seen,
    )


@workspace_tool(
    name="remove_todos",
    description="Delete plan steps by their #N index; removing a step also removes its sub-steps.",
    args_schema=TodoIndicesArgs,
    uses_seen=True,
    authored=True,
    destructive=True,
)
def remove_todos(thread, *, indices: list[int], seen: Seen | None = None, author: Author = AGENT_AUTHOR) -> Summary:
    return batch_summary(
        plan_services.todos_remove_by_index(
            thread=thread, indices=indices, shown=_shown(seen), steps_shown=_steps_shown(seen), **_recorded(author)
        )
    )


@workspace_tool(
    name="list_todos",
    description="Read the plan with each step's index. Rarely needed: the plan is in your context every turn.",
    read_only=True,
)
def list_todos(thread) -> str:
    steps = selectors.plan_steps(thread=thread)
    if not steps:
        return "(no plan yet)"
    return "\n".join(plan_line(i, step) for i, step in enumerate(steps, start=1))
