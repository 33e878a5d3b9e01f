"""Charts: typed artifacts rendered in the centre panel.

Payload (what the centre-panel renderer reads), for artifact_type
"line_chart" / "bar_chart" / "pie_chart":

    {"title": str, "description": str, "data": [{"name": str, <series>: number, ...}, ...],
     "series": [str, ...], "x_axis_title": str, "y_axis_title": str,
     "style": {"palette": "default"|"soft"|"vivid"|"monochrome", "show_grid": bool,
               "show_legend": bool, "donut": bool, "stacked": bool, "smooth": bool,
               "label_size": int}}

Every point has the same series keys; "series" lists them in the order the
model gave (PostgreSQL's jsonb does not keep an object's key order); strings
are "" when not given; every style field is filled in.
"""

from workspace.artifact_registry import ChartStyle

from .decorator import workspace_tool
from .schemas import ChartGeneratorArgs


def chart_style(style: dict | None, *, chart_type: str, series_count: int) -> dict:
    """The complete style, as the renderer draws it (workspace.artifact_registry
    decides which field applies to which kind): what was asked for, defaults
    for the rest."""
    return ChartStyle.from_payload(style).for_kind(chart_type, series_count=series_count).as_payload()


@workspace_tool(
    name="chart_generator",
    description="Draw a line, bar or pie chart in the centre panel when the user asks for a chart or to see "
    "data. Always give a short description; use style for requested looks (palette, grid, donut, label size).",
    args_schema=ChartGeneratorArgs,
)
def chart_generator(
    thread,
    *,
    chart_type: str,
    title: str,
    data: list[dict],
    description: str | None = None,
    x_axis_title: str | None = None,
    y_axis_title: str | None = None,
    style: dict | None = None,
):
    series = [k for k in data[0] if k != "name"]
    payload = {
        "title": title,
        "description": description or "",
        "data": data,
        "series": series,
        "x_axis_title": x_axis_title or "",
        "y_axis_title": y_axis_title or "",
        "style": chart_style(style, chart_type=chart_type, series_count=len(series)),
    }
    noun = "point" if len(data) == 1 else "points"
    summary = f"Created a {chart_type} chart titled '{title}' with {len(data)} {noun}"
    if len(series) > 1:
        summary += f" across {len(series)} series ({', '.join(series)})"
    artifact = {"artifact_type": f"{chart_type}_chart", "title": title, "payload": payload}
    return summary + ".", artifact
