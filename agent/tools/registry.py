"""The one place the agent's tools are assembled.

Each domain module registers its `@workspace_tool` functions when imported.
`DOMAINS` gives the order the model sees them in (then definition order
inside each module): the order of docs/adr/0072, tables last. A new tool
in an existing module needs nothing here; a new domain module is one more
entry.
"""

from langchain_core.tools import BaseTool

from . import artifacts, charts, documents, objective, preferences, tables, todos
from .decorator import ToolSpec, as_langchain_tool, registered_specs

DOMAINS = (documents, objective, todos, preferences, charts, artifacts, tables)


def tool_specs() -> list[ToolSpec]:
    specs = registered_specs()
    return [spec for module in DOMAINS for spec in specs if spec.body.__module__ == module.__name__]


def build_tools() -> list[BaseTool]:
    """Every agent tool, in a stable order. Each acts on the thread of the
    run's context, so one list serves every thread."""
    return [as_langchain_tool(spec) for spec in tool_specs()]
