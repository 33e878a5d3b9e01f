"""Data tables: a typed artifact rendered in the centre panel, added as any new
artifact type is (a tool, a renderer, a line in the tool guide: docs/adr/0072).

Payload for artifact_type "data_table":
    {"title": str, "description": str, "columns": [str, ...], "rows": [[cell, ...], ...]}
with one cell (text, number, boolean or null) per column in every row.
"""

from .decorator import workspace_tool
from .schemas import DataTableArgs


@workspace_tool(
    name="data_table",
    description="Show structured data as a sortable table in the centre panel (columns plus rows of cells). "
    "Use when the user wants a table or data that does not suit a chart.",
    args_schema=DataTableArgs,
)
def data_table(thread, *, title: str, columns: list[str], rows: list[list], description: str | None = None):
    payload = {"title": title, "description": description or "", "columns": columns, "rows": rows}
    rows_noun = "row" if len(rows) == 1 else "rows"
    columns_noun = "column" if len(columns) == 1 else "columns"
    summary = f"Created a table titled '{title}' with {len(rows)} {rows_noun} and {len(columns)} {columns_noun}."
    return summary, {"artifact_type": "data_table", "title": title, "payload": payload}
