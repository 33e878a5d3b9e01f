"""The one place the agent's tools are assembled.

Importing a domain module registers its `@workspace_tool` functions; the order
of the imports below (then definition order inside each module) is the order
the model sees. A new tool in an existing module needs nothing here; a new
domain module is one more import.
"""

from langchain_core.tools import BaseTool

from conversations.models import Thread

# Imported for their registrations, in the seed's §5.2 order; tables (§10.3) last.
from . import documents, objective, todos, preferences, charts, artifacts, tables  # noqa: F401, I001
from .decorator import bind_tool, registered_specs


def build_tools(thread: Thread) -> list[BaseTool]:
    """Every agent tool, bound to `thread`, in a stable order."""
    return [bind_tool(spec, thread) for spec in registered_specs()]


def tool_names() -> tuple[str, ...]:
    return tuple(spec.name for spec in registered_specs())


# Tool name -> the workspace panels a successful call may change ("objective",
# "preferences", "plan", "centre"); () for read-only tools. For "centre", an
# envelope carrying `artifact_id` means that artifact should be selected.
TOOL_PANELS: dict[str, tuple[str, ...]] = {spec.name: spec.panels for spec in registered_specs()}


def panels_affected_by(name: str) -> tuple[str, ...]:
    """Panels to refresh after a successful call of tool `name` (() if unknown)."""
    return TOOL_PANELS.get(name, ())
