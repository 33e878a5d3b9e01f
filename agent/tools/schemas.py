"""Argument schemas of the agent tools (docs/adr/0072). The model reads the
field descriptions, so they say what to pass, in plain words. The decorator
adds `action_and_reasoning` to each; do not declare it here."""

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from workspace.artifact_registry import STYLE_KINDS

Index = Annotated[int, Field(ge=1, description="The #N before the row in the workspace block (not an outline number).")]


# --- document ------------------------------------------------------------------------


class UpdateDocumentArgs(BaseModel):
    content: str = Field(description="The complete new document body (Markdown). Replaces everything that is there.")
    title: str | None = Field(default=None, description="A new document title; omit to keep the current one.")


class AppendToDocumentArgs(BaseModel):
    text: str = Field(description="Markdown to add at the end of the document.")


Passage = Annotated[
    str,
    Field(
        min_length=1,
        description="A passage copied exactly from the <document> block (same spelling, spaces and line "
        "breaks), long enough to occur only once in the document.",
    ),
]


class ReplaceInDocumentArgs(BaseModel):
    old_text: Passage
    new_text: str = Field(description="The text that takes its place (Markdown); empty to delete the passage.")


class InsertInDocumentArgs(BaseModel):
    after_text: Passage
    text: str = Field(
        min_length=1,
        description="Markdown to insert right after that passage, as it should read there "
        "(start it with a line break to begin a new line or paragraph).",
    )


# The most read_document returns at once: what the <document> block shows.
DOCUMENT_READ_MAX_CHARS = 30_000


class ReadDocumentArgs(BaseModel):
    start: int = Field(default=0, ge=0, description="Where to start reading: a character position, 0 for the beginning.")
    length: int = Field(
        default=DOCUMENT_READ_MAX_CHARS,
        ge=1,
        le=DOCUMENT_READ_MAX_CHARS,
        description=f"How many characters to read, at most {DOCUMENT_READ_MAX_CHARS}.",
    )


# --- objective -----------------------------------------------------------------------


class SetObjectiveArgs(BaseModel):
    text: str = Field(description="Your one-line understanding of what the user is trying to achieve.")


# --- plan --------------------------------------------------------------------------


class TodoStep(BaseModel):
    text: str = Field(description="What the step does.")
    depth: int = Field(
        default=0,
        ge=0,
        description="Nesting level within this outline: 0 for a top-level step, 1 for its sub-step, and so on.",
    )


class AddTodosArgs(BaseModel):
    steps: list[TodoStep] = Field(
        min_length=1,
        description="The steps in outline order; the first has depth 0 and each is at most one level deeper "
        "than the one before. A single step is a one-element list.",
    )
    parent_index: int | None = Field(
        default=None,
        ge=1,
        description="The #N of an existing step to nest the whole outline under; omit to add at the end.",
    )


class TodoIndicesArgs(BaseModel):
    indices: list[Index] = Field(min_length=1, description="The #N of each plan step.")


class TodoUpdate(BaseModel):
    index: Index
    text: str = Field(description="The step's new text.")


class UpdateTodosArgs(BaseModel):
    updates: list[TodoUpdate] = Field(min_length=1, description="One entry per step to rewrite.")


# --- preferences -------------------------------------------------------------------


PreferenceKind = Literal["hard", "soft"]


class PreferenceItem(BaseModel):
    title: str = Field(description="The rule in a few words, e.g. 'British English'.")
    subtitle: str | None = Field(default=None, description="Optional detail or rationale.")
    kind: PreferenceKind = Field(description="'hard' for a non-negotiable constraint, 'soft' for a preference.")


class AddPreferencesArgs(BaseModel):
    items: list[PreferenceItem] = Field(min_length=1, description="One entry per preference the user stated.")


class PreferenceUpdate(BaseModel):
    index: Index
    title: str | None = Field(default=None, description="New title; omit to keep it.")
    subtitle: str | None = Field(default=None, description="New detail; omit to keep it.")
    kind: PreferenceKind | None = Field(default=None, description="New kind; omit to keep it.")


class UpdatePreferencesArgs(BaseModel):
    updates: list[PreferenceUpdate] = Field(min_length=1, description="One entry per preference to edit.")


class PreferenceIndicesArgs(BaseModel):
    indices: list[Index] = Field(min_length=1, description="The #N of each preference.")


# --- charts ------------------------------------------------------------------------


def _style_kinds(name: str) -> str:
    """ "Line and bar charts": the kinds the renderer applies a style field to
    (workspace.artifact_registry.STYLE_KINDS), so the schema never promises
    what the chart does not draw."""
    return " and ".join(STYLE_KINDS[name]).capitalize() + " charts"


class ChartStyle(BaseModel):
    palette: Literal["default", "soft", "vivid", "monochrome"] | None = Field(default=None, description="Colour palette.")
    show_grid: bool | None = Field(default=None, description="Draw grid lines (default on).")
    show_legend: bool | None = Field(default=None, description="Show the legend (default on for several series and pies).")
    donut: bool | None = Field(default=None, description=f"{_style_kinds('donut')} only: draw as a donut.")
    stacked: bool | None = Field(default=None, description=f"{_style_kinds('stacked')} with several series: stack them.")
    smooth: bool | None = Field(default=None, description=f"{_style_kinds('smooth')} only: smooth curves.")
    label_size: int | None = Field(default=None, ge=8, le=24, description="Label font size in pixels (8 to 24).")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _too_large(value: int | float) -> bool:
    """A number no float holds (an integer of hundreds of digits, which JSON
    allows) or NaN/infinity: a chart cannot draw it (docs/adr/0025)."""
    try:
        return not math.isfinite(value)
    except OverflowError:
        return True


class ChartGeneratorArgs(BaseModel):
    chart_type: Literal["line", "bar", "pie"] = Field(description="'line', 'bar' or 'pie'.")
    title: str = Field(min_length=1, description="Chart title.")
    description: str | None = Field(default=None, description="One concise sentence shown as a subtitle under the title.")
    data: list[dict[str, Any]] = Field(
        min_length=1,
        description="The points, in order. Each is an object with a 'name' (the category or x label) and one "
        "or more numeric series values: {'name': 'Q1', 'value': 120} for one series, "
        "{'name': 'Q1', 'revenue': 120, 'cost': 80} for several. Every point uses the same series keys.",
    )
    x_axis_title: str | None = Field(default=None, description="Label of the horizontal axis.")
    y_axis_title: str | None = Field(default=None, description="Label of the vertical axis.")
    style: ChartStyle | None = Field(default=None, description="Visual styling the user asked for.")

    @field_validator("data")
    @classmethod
    def _check_points(cls, data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        series: list[str] | None = None
        cleaned = []
        for n, point in enumerate(data, start=1):
            name = point.get("name")
            if isinstance(name, (int, float)) and not isinstance(name, bool):
                name = str(name)  # years and other numeric labels
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"data point {n} needs a 'name' (the category or x label)")
            keys = [k for k in point if k != "name"]
            if not keys:
                raise ValueError(f"data point {n} ('{name}') has no numeric value; add e.g. \"value\": 42")
            for key in keys:
                value = point[key]
                if not _is_number(value):
                    raise ValueError(f"data point {n} ('{name}'): '{key}' must be a number, not {value!r}")
                if _too_large(value) and not isinstance(value, int):
                    raise ValueError(f"data point {n} ('{name}'): '{key}' must be a finite number, not {value!r}")
                if _too_large(value):
                    raise ValueError(
                        f"data point {n} ('{name}'): '{key}' is a {len(str(abs(value)))}-digit number, too large to "
                        "draw; scale the values (e.g. in millions, or their logarithm) and say so in the axis title"
                    )
            if series is None:
                series = keys
            elif set(keys) != set(series):
                raise ValueError(
                    f"data point {n} ('{name}') has series {sorted(keys)} but the first point has "
                    f"{sorted(series)}; every point must use the same series keys"
                )
            cleaned.append({"name": name, **{key: point[key] for key in series}})
        return cleaned

    @model_validator(mode="after")
    def _check_pie(self):
        if self.chart_type == "pie":
            if len(self.series) != 1:
                raise ValueError(f"a pie chart takes one series, not {len(self.series)} ({', '.join(self.series)})")
            key = self.series[0]
            for n, point in enumerate(self.data, start=1):
                if point[key] < 0:
                    raise ValueError(f"data point {n} ('{point['name']}') is negative; a pie chart needs values of 0 or more")
        return self

    @property
    def series(self) -> list[str]:
        return [k for k in self.data[0] if k != "name"] if self.data else []


# --- tables ------------------------------------------------------------------------


Cell = str | int | float | bool | None


class DataTableArgs(BaseModel):
    title: str = Field(min_length=1, description="Table title.")
    description: str | None = Field(default=None, description="One concise sentence shown under the title.")
    columns: list[str] = Field(min_length=1, description="Column headings, left to right.")
    rows: list[list[Cell]] = Field(
        min_length=1,
        description="The rows; each is a list with exactly one cell (text, number, true/false or null) per column.",
    )

    @field_validator("columns")
    @classmethod
    def _check_columns(cls, columns: list[str]) -> list[str]:
        for n, column in enumerate(columns, start=1):
            if not column.strip():
                raise ValueError(f"column {n} has an empty heading")
        return columns

    @model_validator(mode="after")
    def _check_rows(self):
        width = len(self.columns)
        for n, row in enumerate(self.rows, start=1):
            if len(row) != width:
                raise ValueError(f"row {n} has {len(row)} cells but there are {width} columns; give one cell per column")
            for cell in row:
                if isinstance(cell, float) and not math.isfinite(cell):
                    raise ValueError(f"row {n} has a number that is not finite")
        return self


# --- past artifacts ----------------------------------------------------------------


class ListArtifactsArgs(BaseModel):
    artifact_type: str | None = Field(
        default=None, description="Only this type, e.g. 'line_chart', 'bar_chart', 'pie_chart', 'data_table'."
    )
    limit: int = Field(default=20, ge=1, le=50, description="How many to list, newest first (1 to 50).")


# The most rows or points one get_artifact call asks for; what it returns
# is bounded by characters anyway (DOCUMENT_READ_MAX_CHARS, as a document read).
ARTIFACT_READ_MAX_ITEMS = 10_000


class GetArtifactArgs(BaseModel):
    artifact_id: int = Field(description="The artifact's id, as shown by list_artifacts or the latest-artifact line.")
    start: int = Field(
        default=0,
        ge=0,
        description="A table's first row or a chart's first point to return, counting from 0; "
        "0 for the beginning, or the start the previous part named.",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        le=ARTIFACT_READ_MAX_ITEMS,
        description=f"How many rows or points at most (1 to {ARTIFACT_READ_MAX_ITEMS}); omit to get as many as "
        f"fit in one read of about {DOCUMENT_READ_MAX_CHARS} characters.",
    )
