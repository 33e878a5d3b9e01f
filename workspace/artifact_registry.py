"""How each typed artifact is shown in the centre panel: one registry keyed
by `artifact_type`, the single place to add a type.

A renderer is a template plus an optional `build(payload, artifact)` that
validates the payload and returns the template's data. `build` raises
`PayloadError` for a payload it cannot show; the panel then shows the
"could not be displayed" banner and the JSON instead of failing. Payloads are
written by the model, so nothing in them is trusted: builders return plain
data (strings, numbers) and the templates escape all of it; charts reach
Chart.js as a JSON config through `json_script`, never as markup or code.

To add a type:

    register("timeline", label="timeline", template="workspace/artifacts/timeline.html",
             build=build_timeline)
"""

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .markdown import render_markdown
from .models import Artifact
from .rows import chart_rows, table_rows
from .text import utf8_size

FALLBACK_TEMPLATE = "workspace/artifacts/fallback.html"


class PayloadError(Exception):
    """The payload does not have the shape its renderer needs."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Renderer:
    template: str
    label: str
    build: Callable[..., dict] | None = None
    # Whether `build` takes `rows_shown`: how many of its rows to build (None: all).
    bounded: bool = False


REGISTRY: dict[str, Renderer] = {}


def register(
    artifact_type: str, *, template: str, label: str, build: Callable[..., dict] | None = None, bounded: bool = False
) -> None:
    REGISTRY[artifact_type] = Renderer(template=template, label=label, build=build, bounded=bounded)


def type_label(artifact_type: str) -> str:
    renderer = REGISTRY.get(artifact_type)
    return renderer.label if renderer else artifact_type


def option_label(artifact: Artifact) -> str:
    """How the artifact is named in the centre panel's selector."""
    label = type_label(artifact.artifact_type)
    return f"{artifact.title or 'Untitled'} · {label} · turn {artifact.turn_index}"


@dataclass(frozen=True)
class ArtifactView:
    """Everything the centre panel needs to show one artifact."""

    artifact: Artifact
    template: str
    status: str  # "ok", "unknown" (no renderer) or "invalid" (payload rejected)
    data: dict = field(default_factory=dict)
    problem: str = ""

    @property
    def payload_json(self) -> str:
        return json.dumps(self.artifact.payload, indent=2, ensure_ascii=False, default=str)

    @property
    def type_label(self) -> str:
        return type_label(self.artifact.artifact_type)

    @property
    def table_rows_html(self) -> str:
        """A table's shown rows as HTML, written in Python (workspace.rows)."""
        return table_rows(self.data.get("rows") or ())

    @property
    def chart_rows_html(self) -> str:
        """A chart's shown points as its Data table's rows, written as a table's."""
        return chart_rows(self.data.get("table_rows") or ())


# How many of a table's rows the centre panel shows unless the person asks
# for all of them: a 10 000-row table (0.94 MB, under the payload limit) made
# 2.5 MB of HTML that took seconds to render, to push and to show (docs/adr/0141).
TABLE_ROWS_SHOWN = 500


def shown_rows(rows: list, rows_shown: int | None) -> tuple[list, dict]:
    """The first `rows_shown` of `rows` (None: all), and what the panel says
    of them (templates/workspace/artifacts/rows_shown.html): how many there
    are, how many are not shown, whether every one was asked for. A table's
    rows and a chart's points (its Data table) are bounded alike
    (docs/adr/0141)."""
    shown = rows if rows_shown is None else rows[:rows_shown]
    return shown, {
        "shown_count": len(shown),
        "row_count": len(rows),
        "rows_hidden": len(rows) - len(shown),
        "all_rows_asked": rows_shown is None and len(rows) > TABLE_ROWS_SHOWN,
    }


def artifact_view(artifact: Artifact, *, rows_shown: int | None = TABLE_ROWS_SHOWN) -> ArtifactView:
    """`rows_shown`: how many of a table's rows, or a chart's points in its
    Data table, to show (None: all)."""
    renderer = REGISTRY.get(artifact.artifact_type)
    if renderer is None:
        return ArtifactView(artifact=artifact, template=FALLBACK_TEMPLATE, status="unknown")
    payload = artifact.payload
    if not isinstance(payload, dict):
        return ArtifactView(
            artifact=artifact, template=FALLBACK_TEMPLATE, status="invalid", problem="The payload is not a JSON object."
        )
    try:
        if renderer.build is None:
            data = {"payload": payload}
        elif renderer.bounded:
            data = renderer.build(payload, artifact, rows_shown=rows_shown)
        else:
            data = renderer.build(payload, artifact)
    except PayloadError as exc:
        return ArtifactView(artifact=artifact, template=FALLBACK_TEMPLATE, status="invalid", problem=exc.message)
    return ArtifactView(artifact=artifact, template=renderer.template, status="ok", data=data)


def shown_size(view: ArtifactView) -> int:
    """Fewer UTF-8 bytes than the view rendered holds, told without rendering
    it: the text of the cells it shows (a table's, a chart's Data table) or
    the JSON it falls back to, counted as they are (escaping only lengthens
    them). A push of a new artifact surely over the limit is then not
    rendered (docs/adr/0141, as the document's in docs/adr/0043)."""
    if view.status != "ok":
        return utf8_size(view.payload_json)
    size = 0
    for row in view.data.get("rows") or ():
        size += sum(utf8_size(cell["text"]) for cell in row if isinstance(cell, dict))
    for row in view.data.get("table_rows") or ():
        size += sum(utf8_size(text) for text in row)
    return size


# --- shared helpers --------------------------------------------------------------


def _text(value) -> str | None:
    """Plain text from a payload field; anything else (lists, objects) is ignored."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _title(payload: dict, artifact: Artifact, default: str) -> str:
    return _text(payload.get("title")) or artifact.title or default


def _finite(value: int | float) -> bool:
    """Whether a JSON number is one a float holds: not NaN or infinite, and
    not an integer too large for one (math.isfinite raises OverflowError on
    those, and JSON and jsonb hold them: a table of powers of two up to
    2^1400). Such an integer is shown as its digits but is not plotted
    (docs/adr/0025)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number(value) -> float | int | None:
    """A finite number a float holds, or None. Numeric strings count: the model sometimes quotes numbers."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value if _finite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.replace(",", "").strip())
        except ValueError:
            return None
        if not math.isfinite(number):
            return None
        return int(number) if number.is_integer() and "." not in value else number
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


# --- charts -------------------------------------------------------------------------

PALETTES = {
    "default": ["#2563eb", "#f97316", "#16a34a", "#dc2626", "#9333ea", "#0891b2", "#ca8a04", "#db2777"],
    "soft": ["#a5c8f0", "#f7c59f", "#b5e3b5", "#f4a9a8", "#cdb4f0", "#a8dde6", "#f3dd9b", "#f2b5d4"],
    "vivid": ["#0050ff", "#ff3d00", "#00c853", "#ff0080", "#aa00ff", "#00b8d4", "#ffd600", "#ff6d00"],
    "monochrome": ["#1e3a5f", "#2f5d8a", "#4a7fb5", "#6f9fd0", "#9bbfe3", "#c3d9ef", "#0f2740", "#557a9e"],
}
LABEL_SIZE_DEFAULT = 12
LABEL_SIZE_MIN, LABEL_SIZE_MAX = 8, 24
CHART_KINDS = {"line_chart": "line", "bar_chart": "bar", "pie_chart": "pie"}


# Which chart kinds each kind-specific style field applies to. The one source
# of truth: the chart tool's schema describes it, the tool stores the style it
# gives (ChartStyle.for_kind), and chart_config draws it.
STYLE_KINDS = {"donut": ("pie",), "stacked": ("line", "bar"), "smooth": ("line",)}


@dataclass(frozen=True)
class ChartStyle:
    palette: str = "default"
    show_grid: bool | None = None  # None: drawn on line and bar charts (a pie has no grid)
    show_legend: bool | None = None  # None: shown when it tells something (several series, pie slices)
    donut: bool = False
    stacked: bool = False
    smooth: bool = False
    label_size: int = LABEL_SIZE_DEFAULT

    @classmethod
    def from_payload(cls, style) -> "ChartStyle":
        """Known fields with valid values are honoured; anything else keeps its default,
        so a slightly-off style never stops the chart from showing."""
        if not isinstance(style, dict):
            return cls()
        values: dict[str, Any] = {}
        palette = style.get("palette")
        if isinstance(palette, str) and palette.lower() in PALETTES:
            values["palette"] = palette.lower()
        for name in ("show_grid", "show_legend", "donut", "stacked", "smooth"):
            if isinstance(style.get(name), bool):
                values[name] = style[name]
        size = style.get("label_size")
        if isinstance(size, (int, float)) and not isinstance(size, bool) and _finite(size):
            values["label_size"] = int(min(max(round(size), LABEL_SIZE_MIN), LABEL_SIZE_MAX))
        return cls(**values)

    def for_kind(self, kind: str, *, series_count: int) -> "ChartStyle":
        """The complete style a chart of `kind` is drawn with: every default
        filled in, each kind-specific field off where it does not apply."""
        kind_specific: dict[str, Any] = {name: getattr(self, name) and kind in kinds for name, kinds in STYLE_KINDS.items()}
        return replace(
            self,
            show_grid=self.show_grid if self.show_grid is not None else kind != "pie",
            show_legend=self.show_legend if self.show_legend is not None else (series_count > 1 or kind == "pie"),
            **kind_specific,
        )

    def as_payload(self) -> dict:
        return asdict(self)


def _hex_with_alpha(colour: str, alpha: str) -> str:
    return f"{colour}{alpha}"


def chart_series(data, order=None) -> tuple[list[str], list[str], list[list]]:
    """(labels, series names, values per series) from the chart tool's `data`.

    Every key other than "name" holding a JSON number in some point is a
    series (a key holding only quoted numbers like "2024" is a label, not a
    series), in the order `order` gives (the payload's "series": PostgreSQL's
    jsonb does not keep a point's key order), then in order of first
    appearance; a point missing a series, or with a value that is not a
    number, gets a gap (None).
    """
    if not isinstance(data, list) or not data:
        raise PayloadError("The chart has no data points.")
    series: list[str] = []
    named = [key for key in order if isinstance(key, str)] if isinstance(order, list) else []
    for n, point in enumerate(data, start=1):
        if not isinstance(point, dict):
            raise PayloadError(f"Data point {n} is not an object with a name and values.")
        for key, value in point.items():
            if key != "name" and key not in series and _is_number(value):
                series.append(key)
    if not series:
        raise PayloadError("The chart's data has no numeric values to plot.")
    series = [key for key in named if key in series] + [key for key in series if key not in named]
    labels = [_cell_text(point.get("name")) or f"#{n}" for n, point in enumerate(data, start=1)]
    values = [[_number(point.get(key)) for point in data] for key in series]
    return labels, series, values


def _series_label(key: str, *, single: bool, payload: dict) -> str:
    if single and key == "value":
        return _text(payload.get("y_axis_title")) or "Value"
    return key


def chart_config(
    kind: str,
    *,
    labels: list[str],
    series_labels: list[str],
    values: list[list],
    style: ChartStyle,
    x_title: str | None,
    y_title: str | None,
) -> dict:
    """The Chart.js configuration: plain JSON, no callbacks, so it can be
    passed through json_script and checked in tests."""
    palette = PALETTES[style.palette]
    font = {"size": style.label_size}
    datasets = []
    for i, (label, data) in enumerate(zip(series_labels, values)):
        colour = palette[i % len(palette)]
        dataset: dict[str, Any] = {"label": label, "data": data}
        if kind == "pie":
            dataset["backgroundColor"] = [palette[j % len(palette)] for j in range(len(labels))]
            dataset["borderColor"] = "#ffffff"
            dataset["borderWidth"] = 2
        elif kind == "line":
            dataset.update(
                borderColor=colour,
                backgroundColor=_hex_with_alpha(colour, "33"),
                pointBackgroundColor=colour,
                tension=0.4 if style.smooth else 0,
                # Stacked lines fill down to the series below, so each band reads as its own share.
                fill=("origin" if i == 0 else "-1") if style.stacked else False,
                spanGaps=True,
            )
        else:
            dataset.update(backgroundColor=colour, borderColor=colour, borderWidth=1)
            if style.stacked:
                dataset["stack"] = "stack"
        datasets.append(dataset)

    style = style.for_kind(kind, series_count=len(series_labels))
    options: dict = {
        "responsive": True,
        "maintainAspectRatio": False,
        "font": font,
        "plugins": {
            "legend": {"display": style.show_legend, "position": "bottom", "labels": {"font": font}},
            "tooltip": {"titleFont": font, "bodyFont": font},
        },
    }
    if kind == "pie":
        options["cutout"] = "55%" if style.donut else 0
    else:

        def axis(title: str | None, *, stacked: bool, value_axis: bool) -> dict:
            spec = {
                "grid": {"display": style.show_grid},
                "ticks": {"font": font},
                "title": {"display": bool(title), "text": title or "", "font": font},
                "stacked": stacked,
            }
            if value_axis:
                spec["beginAtZero"] = True
            return spec

        # Bars stack along both axes (one column per label); lines stack their values only.
        options["scales"] = {
            "x": axis(x_title, stacked=style.stacked and kind == "bar", value_axis=False),
            "y": axis(y_title, stacked=style.stacked, value_axis=True),
        }
    return {"type": kind, "data": {"labels": labels, "datasets": datasets}, "options": options}


def build_chart(payload: dict, artifact: Artifact, *, rows_shown: int | None = None) -> dict:
    """The chart's config (every point), and its first `rows_shown` points
    (None: all) as its Data table's rows."""
    kind = CHART_KINDS[artifact.artifact_type]
    labels, keys, values = chart_series(payload.get("data"), payload.get("series"))
    single = len(keys) == 1
    series_labels = [_series_label(k, single=single, payload=payload) for k in keys]
    style = ChartStyle.from_payload(payload.get("style"))
    x_title = _text(payload.get("x_axis_title"))
    y_title = _text(payload.get("y_axis_title"))
    points, counts = shown_rows(labels, rows_shown)
    return {
        "title": _title(payload, artifact, "Untitled chart"),
        "description": _text(payload.get("description")),
        "kind": kind,
        "config": chart_config(
            kind, labels=labels, series_labels=series_labels, values=values, style=style, x_title=x_title, y_title=y_title
        ),
        "config_id": f"chart-config-{artifact.pk}",
        "is_multi_series": not single,
        # The same numbers as a table, for screen readers and for anyone without canvas.
        "table_columns": [x_title or "Name", *series_labels],
        "table_rows": [[label, *(_cell_text(v[i]) for v in values)] for i, label in enumerate(points)],
        **counts,
    }


# --- data table ------------------------------------------------------------------------


def _sort_key(value) -> str | None:
    """A number as plain text for the client-side sort (not localised), or None.
    An integer too large for a float is still a number: its digits, which the
    browser reads as a very large one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    number = _number(value)
    return None if number is None else str(number)


def build_data_table(payload: dict, artifact: Artifact, *, rows_shown: int | None = None) -> dict:
    """The table's first `rows_shown` rows (None: all) as cells, and how
    many it has: every row is checked, only those shown are built."""
    columns = payload.get("columns")
    if not isinstance(columns, list) or not columns:
        raise PayloadError("The table has no columns.")
    headers = [_cell_text(c) for c in columns]
    rows = payload.get("rows", [])
    if not isinstance(rows, list):
        raise PayloadError("The table's rows are not a list.")
    table = []
    for n, row in enumerate(rows, start=1):
        if isinstance(row, dict):
            row = [row.get(c) for c in columns]
        if not isinstance(row, list):
            raise PayloadError(f"Row {n} is not a list of cells.")
        table.append(row)
    width = max([len(headers), *(len(r) for r in table)])
    # A row longer than the header would otherwise lose data silently.
    headers += [f"Column {i}" for i in range(len(headers) + 1, width + 1)]
    shown, counts = shown_rows(table, rows_shown)
    cells = []
    for row in shown:
        padded = list(row) + [None] * (width - len(row))
        cells.append([{"text": _cell_text(v), "sort": _sort_key(v)} for v in padded])
    return {
        "title": _title(payload, artifact, "Untitled table"),
        "description": _text(payload.get("description")),
        "columns": headers,
        "rows": cells,
        **counts,
    }


# --- read-only document ----------------------------------------------------------------


def build_document(payload: dict, artifact: Artifact) -> dict:
    content = payload.get("content")
    if not isinstance(content, str):
        raise PayloadError("The document has no text content.")
    return {"title": _title(payload, artifact, "Untitled document"), "html": render_markdown(content)}


register("line_chart", label="line chart", template="workspace/artifacts/chart.html", build=build_chart, bounded=True)
register("bar_chart", label="bar chart", template="workspace/artifacts/chart.html", build=build_chart, bounded=True)
register("pie_chart", label="pie chart", template="workspace/artifacts/chart.html", build=build_chart, bounded=True)
register("data_table", label="table", template="workspace/artifacts/data_table.html", build=build_data_table, bounded=True)
register("document", label="document", template="workspace/artifacts/document.html", build=build_document)
