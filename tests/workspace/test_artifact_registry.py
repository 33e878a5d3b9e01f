"""The artifact renderer registry: every type renders, bad payloads and
unknown types fall back, and the chart config honours the chart tool's payload."""

import pytest
from django.template.loader import render_to_string

from workspace.artifact_registry import (
    CHART_KINDS,
    FALLBACK_TEMPLATE,
    PALETTES,
    REGISTRY,
    STYLE_KINDS,
    ChartStyle,
    artifact_view,
    option_label,
    register,
)
from workspace.models import Artifact
from workspace.services import artifacts as artifacts_services

pytestmark = pytest.mark.django_db

QUARTERS = [{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}]
REVENUE_AND_COST = [
    {"name": "Q1", "revenue": 120, "cost": 80},
    {"name": "Q2", "revenue": 180, "cost": 95},
    {"name": "Q3", "revenue": 150, "cost": 90},
]

# One valid payload per registered type, and the text each must show.
SAMPLES = {
    "line_chart": ({"title": "Trend", "description": "Up and to the right", "data": QUARTERS}, ["Trend", "Up and to the right"]),
    "bar_chart": (
        {"title": "Q1 vs Q2 revenue", "description": "Revenue per quarter", "data": QUARTERS},
        ["Q1 vs Q2 revenue", "Revenue per quarter"],
    ),
    "pie_chart": ({"title": "Share", "data": QUARTERS}, ["Share"]),
    "data_table": (
        {"title": "Sources", "columns": ["Paper", "Year"], "rows": [["Smith", 2020]]},
        ["Sources", "Paper", "Smith", "2020"],
    ),
    "document": (
        {"title": "Draft v1", "content": "# Findings\n\nAll **good**."},
        ["Draft v1", "<h1>Findings</h1>", "<strong>good</strong>"],
    ),
}


def _make(thread, artifact_type, payload, title="An artifact", turn_index=1):
    return artifacts_services.artifact_create(
        thread=thread, artifact_type=artifact_type, title=title, payload=payload, turn_index=turn_index
    )


def _render(view):
    return render_to_string(view.template, {"view": view})


def _config(thread, artifact_type, data=QUARTERS, **payload):
    return artifact_view(_make(thread, artifact_type, {"title": "C", "data": data, **payload})).data["config"]


def test_every_registered_type_has_a_sample_here():
    assert set(SAMPLES) == set(REGISTRY)


@pytest.mark.parametrize("artifact_type", sorted(SAMPLES))
def test_every_registered_type_renders_its_payload(thread, artifact_type):
    payload, expected = SAMPLES[artifact_type]
    view = artifact_view(_make(thread, artifact_type, payload))
    assert view.status == "ok"
    assert view.template == REGISTRY[artifact_type].template
    html = _render(view)
    for text in expected:
        assert text in html
    assert "Unknown artifact type" not in html


def test_unknown_type_falls_back_to_banner_and_formatted_json(thread):
    view = artifact_view(_make(thread, "gantt_chart", {"tasks": [{"name": "Write <b>intro</b>"}]}))
    assert view.status == "unknown"
    assert view.template == FALLBACK_TEMPLATE
    html = _render(view)
    assert "Unknown artifact type" in html and "gantt_chart" in html
    assert "&quot;tasks&quot;: [" in html  # indented JSON, escaped
    assert "Write &lt;b&gt;intro&lt;/b&gt;" in html
    assert "<b>intro</b>" not in html


@pytest.mark.parametrize(
    ("artifact_type", "payload", "problem"),
    [
        ("bar_chart", {"title": "No data"}, "no data points"),
        ("line_chart", {"title": "Empty", "data": []}, "no data points"),
        ("pie_chart", {"title": "Words", "data": [{"name": "a", "value": "lots"}]}, "no numeric values"),
        ("bar_chart", {"title": "Bad point", "data": ["Q1", 120]}, "Data point 1"),
        ("data_table", {"title": "T", "rows": [[1]]}, "no columns"),
        ("data_table", {"title": "T", "columns": ["a"], "rows": "1,2"}, "rows are not a list"),
        ("data_table", {"title": "T", "columns": ["a"], "rows": [[1], 2]}, "Row 2"),
        ("document", {"title": "D"}, "no text content"),
    ],
)
def test_payload_a_renderer_refuses_shows_the_problem_and_the_json(thread, artifact_type, payload, problem):
    view = artifact_view(_make(thread, artifact_type, payload))
    assert view.status == "invalid"
    assert problem in view.problem
    html = _render(view)
    assert "This artifact could not be displayed." in html
    assert problem in html
    assert "&quot;title&quot;:" in html


def test_payload_that_is_not_an_object_is_refused_not_crashed():
    # The service only stores objects; a row written some other way must still not break the panel.
    view = artifact_view(Artifact(pk=7, artifact_type="bar_chart", title="Odd", payload=[1, 2, 3], turn_index=2))
    assert view.status == "invalid"
    assert "could not be displayed" in _render(view)


def test_single_series_chart_has_one_dataset_named_after_the_value_axis(thread):
    config = _config(thread, "bar_chart", y_axis_title="Revenue (k$)", x_axis_title="Quarter")
    assert config["type"] == "bar"
    assert config["data"]["labels"] == ["Q1", "Q2"]
    assert [d["label"] for d in config["data"]["datasets"]] == ["Revenue (k$)"]
    assert config["data"]["datasets"][0]["data"] == [120, 180]
    assert config["options"]["plugins"]["legend"]["display"] is False
    assert config["options"]["scales"]["x"]["title"] == {"display": True, "text": "Quarter", "font": {"size": 12}}


def test_multi_series_is_detected_one_dataset_per_numeric_key_with_legend(thread):
    view = artifact_view(_make(thread, "line_chart", {"title": "Revenue vs cost", "data": REVENUE_AND_COST}))
    config = view.data["config"]
    assert view.data["is_multi_series"] is True
    assert [d["label"] for d in config["data"]["datasets"]] == ["revenue", "cost"]
    assert config["data"]["datasets"][1]["data"] == [80, 95, 90]
    assert config["options"]["plugins"]["legend"]["display"] is True
    assert config["data"]["datasets"][0]["borderColor"] != config["data"]["datasets"][1]["borderColor"]
    html = _render(view)
    assert '<th scope="col">revenue</th>' in html and '<th scope="col">cost</th>' in html
    assert '<td class="num">95</td>' in html


def test_series_missing_from_a_point_leaves_a_gap_and_quoted_labels_are_not_series(thread):
    data = [{"name": "2023", "year": "2023", "a": 1}, {"name": "2024", "year": "2024", "b": 2}]
    config = _config(thread, "line_chart", data=data)
    assert [(d["label"], d["data"]) for d in config["data"]["datasets"]] == [("a", [1, None]), ("b", [None, 2])]


# A 401-digit integer: valid JSON, kept by jsonb, too large for a float.
HUGE = 10**400


def test_a_chart_value_too_large_for_a_float_is_a_gap_and_its_digits_stay_in_the_payload(thread):
    """Stored before the chart tool refused it, or imported: the chart shows, that point is a gap."""
    view = artifact_view(
        _make(thread, "bar_chart", {"title": "Growth", "data": [{"name": "a", "value": 1}, {"name": "b", "value": HUGE}]})
    )
    assert view.status == "ok"
    assert view.data["config"]["data"]["datasets"][0]["data"] == [1, None]
    assert view.data["table_rows"] == [["a", "1"], ["b", ""]]
    assert str(HUGE) in view.payload_json


def test_a_style_label_size_too_large_for_a_float_keeps_the_default(thread):
    config = _config(thread, "bar_chart", style={"label_size": HUGE})
    assert config["options"]["scales"]["x"]["ticks"]["font"]["size"] == 12


def test_a_table_cell_too_large_for_a_float_is_shown_as_its_digits_and_sorts_as_a_number(thread):
    """A table of powers of two up to 2^1400 is exact integers, shown as the model wrote them."""
    view = artifact_view(_make(thread, "data_table", {"columns": ["n", "2^n"], "rows": [[1, 2], [1400, 2**1400]]}))
    assert view.status == "ok"
    assert view.data["rows"][1][1] == {"text": str(2**1400), "sort": str(2**1400)}
    assert f'<td class="num" data-sort-value="{2**1400}">{2**1400}</td>' in _render(view)


def test_style_soft_palette_no_grid_and_label_size_reach_the_chart_config(thread):
    config = _config(
        thread,
        "bar_chart",
        data=REVENUE_AND_COST,
        style={"palette": "soft", "show_grid": False, "label_size": 18, "stacked": True},
    )
    colours = [d["backgroundColor"] for d in config["data"]["datasets"]]
    assert colours == PALETTES["soft"][:2]
    scales = config["options"]["scales"]
    assert scales["x"]["grid"]["display"] is False and scales["y"]["grid"]["display"] is False
    assert scales["x"]["stacked"] is True and scales["y"]["stacked"] is True
    assert scales["x"]["ticks"]["font"]["size"] == 18
    assert config["options"]["plugins"]["legend"]["labels"]["font"]["size"] == 18


def test_style_stacked_line_stacks_its_values_and_fills_each_band(thread):
    config = _config(thread, "line_chart", data=REVENUE_AND_COST, style={"stacked": True})
    scales = config["options"]["scales"]
    assert scales["y"]["stacked"] is True and scales["x"]["stacked"] is False
    assert [d["fill"] for d in config["data"]["datasets"]] == ["origin", "-1"]
    unstacked = _config(thread, "line_chart", data=REVENUE_AND_COST)
    assert unstacked["options"]["scales"]["y"]["stacked"] is False
    assert [d["fill"] for d in unstacked["data"]["datasets"]] == [False, False]


def test_a_style_field_only_applies_to_the_kinds_style_kinds_names(thread):
    style = {"stacked": True, "smooth": True, "donut": True}
    for kind in CHART_KINDS.values():
        drawn = ChartStyle.from_payload(style).for_kind(kind, series_count=2)
        assert {name: getattr(drawn, name) for name in STYLE_KINDS} == {
            name: kind in kinds for name, kinds in STYLE_KINDS.items()
        }, kind
    assert _config(thread, "pie_chart", style=style)["data"]["datasets"][0].get("stack") is None


def test_style_donut_pie_has_a_cutout_and_one_colour_per_slice(thread):
    config = _config(thread, "pie_chart", style={"donut": True, "palette": "monochrome"})
    assert config["type"] == "pie"
    assert config["options"]["cutout"] == "55%"
    assert config["data"]["datasets"][0]["backgroundColor"] == PALETTES["monochrome"][:2]
    assert "scales" not in config["options"]
    assert _config(thread, "pie_chart")["options"]["cutout"] == 0


def test_style_smooth_line_and_explicit_legend(thread):
    config = _config(thread, "line_chart", style={"smooth": True, "show_legend": True})
    assert config["data"]["datasets"][0]["tension"] == 0.4
    assert config["options"]["plugins"]["legend"]["display"] is True
    assert _config(thread, "line_chart")["data"]["datasets"][0]["tension"] == 0


@pytest.mark.parametrize(
    ("style", "palette", "size"),
    [
        ({"palette": "neon", "label_size": 100}, "default", 24),
        ({"palette": "VIVID", "label_size": 2}, "vivid", 8),
        ({"label_size": "big", "show_grid": "no"}, "default", 12),
        ("soft", "default", 12),
    ],
)
def test_style_values_out_of_range_fall_back_or_clamp_instead_of_failing(thread, style, palette, size):
    config = _config(thread, "bar_chart", style=style)
    assert config["data"]["datasets"][0]["backgroundColor"] == PALETTES[palette][0]
    assert config["options"]["scales"]["x"]["ticks"]["font"]["size"] == size
    assert config["options"]["scales"]["x"]["grid"]["display"] is True


def test_data_table_cells_sort_keys_and_ragged_rows(thread):
    view = artifact_view(
        _make(
            thread,
            "data_table",
            {
                "title": "Papers",
                "description": "What we found",
                "columns": ["Title", "Citations"],
                "rows": [["A <i>study</i>", 1200], ["B", "35"], ["C", None, "extra"], {"Title": "D", "Citations": 7}],
            },
        )
    )
    assert view.status == "ok"
    assert view.data["columns"] == ["Title", "Citations", "Column 3"]
    assert [[c["text"] for c in row] for row in view.data["rows"]] == [
        ["A <i>study</i>", "1200", ""],
        ["B", "35", ""],
        ["C", "", "extra"],
        ["D", "7", ""],
    ]
    assert [row[1]["sort"] for row in view.data["rows"]] == ["1200", "35", None, "7"]
    html = _render(view)
    assert 'aria-sort="none"' in html and 'data-sort-column="1"' in html
    assert "A &lt;i&gt;study&lt;/i&gt;" in html
    assert 'data-sort-value="1200"' in html
    assert "What we found" in html


def test_chart_text_from_the_payload_is_escaped_everywhere(thread):
    evil = "<script>alert(1)</script>"
    view = artifact_view(
        _make(
            thread,
            "bar_chart",
            {
                "title": evil,
                "description": evil,
                "data": [{"name": evil, "value": 1}],
                "x_axis_title": evil,
            },
        )
    )
    html = _render(view)
    assert evil not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "\\u003Cscript\\u003E" in html  # inside the JSON config


def test_option_label_names_title_type_and_turn(thread):
    artifact = _make(thread, "bar_chart", {"title": "x", "data": QUARTERS}, title="Q1 vs Q2", turn_index=3)
    assert option_label(artifact) == "Q1 vs Q2 · bar chart · turn 3"
    unknown = _make(thread, "gantt", {}, title="", turn_index=4)
    assert option_label(unknown) == "Untitled · gantt · turn 4"


def test_registering_a_type_is_one_call(thread):
    register(
        "quote",
        label="quote",
        template="workspace/artifacts/document.html",
        build=lambda payload, artifact: {"title": payload["who"], "html": payload["text"]},
    )
    try:
        html = _render(artifact_view(_make(thread, "quote", {"who": "Ada", "text": "Notes"})))
        assert "Ada" in html and "Notes" in html
    finally:
        del REGISTRY["quote"]
