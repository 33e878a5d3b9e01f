"""Charts, tables and past artifacts: payloads, persistence, turn tagging, failures."""

import json
import random
import re

import pytest

from agent.tools.schemas import ARTIFACT_READ_MAX_ITEMS, DOCUMENT_READ_MAX_CHARS
from conversations.services import thread_create
from tests.agent.tools.helpers import call, db
from workspace import selectors
from workspace.artifact_registry import artifact_view
from workspace.models import Artifact
from workspace.services import artifacts as artifacts_services

pytestmark = pytest.mark.django_db(transaction=True)

Q1_Q2 = [{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}]


def _stored_payload(result):
    return Artifact.objects.get(pk=result["artifact_id"]).payload


def _artifacts(thread):
    return list(
        Artifact.objects.filter(thread=thread).order_by("id").values("id", "artifact_type", "title", "payload", "turn_index")
    )


async def test_bar_chart_is_persisted_and_named_in_the_envelope(thread):
    result = await call(
        thread,
        "chart_generator",
        turn_index=7,
        chart_type="bar",
        title="Q1 vs Q2",
        description="Revenue per quarter",
        data=Q1_Q2,
        y_axis_title="Revenue (k€)",
    )
    assert result["success"] is True
    assert result["summary"] == "Created a bar chart titled 'Q1 vs Q2' with 2 points."
    payload = {
        "title": "Q1 vs Q2",
        "description": "Revenue per quarter",
        "data": Q1_Q2,
        "series": ["value"],
        "x_axis_title": "",
        "y_axis_title": "Revenue (k€)",
        "style": {
            "palette": "default",
            "show_grid": True,
            "show_legend": False,
            "donut": False,
            "stacked": False,
            "smooth": False,
            "label_size": 12,
        },
    }
    assert result["artifact"] == {"artifact_type": "bar_chart", "title": "Q1 vs Q2"}
    rows = await db(_artifacts, thread)
    assert rows == [
        {"id": result["artifact_id"], "artifact_type": "bar_chart", "title": "Q1 vs Q2", "payload": payload, "turn_index": 7}
    ]


async def test_artifact_is_tagged_with_the_turn_of_its_run(thread):
    await call(thread, "data_table", turn_index=3, title="Inside", columns=["a"], rows=[[1]])
    await call(thread, "data_table", title="Outside", columns=["a"], rows=[[1]])
    assert [(r["title"], r["turn_index"]) for r in await db(_artifacts, thread)] == [("Inside", 3), ("Outside", 0)]


async def test_multi_series_line_chart_with_style(thread):
    data = [{"name": "Jan", "revenue": 10, "cost": 7.5}, {"name": "Feb", "cost": 8, "revenue": 12}]
    result = await call(
        thread,
        "chart_generator",
        chart_type="line",
        title="Revenue and cost",
        data=data,
        style={"palette": "soft", "show_grid": False, "smooth": True, "label_size": 16},
    )
    assert result["success"] is True
    assert result["summary"] == "Created a line chart titled 'Revenue and cost' with 2 points across 2 series (revenue, cost)."
    payload = await db(_stored_payload, result)
    # Every point carries the series in the first point's order.
    assert payload["data"] == [{"name": "Jan", "revenue": 10, "cost": 7.5}, {"name": "Feb", "revenue": 12, "cost": 8}]
    assert payload["style"] == {
        "palette": "soft",
        "show_grid": False,
        "show_legend": True,
        "donut": False,
        "stacked": False,
        "smooth": True,
        "label_size": 16,
    }
    assert result["artifact"]["artifact_type"] == "line_chart"


async def test_stacked_line_chart_is_stored_stacked_and_drawn_stacked(thread):
    data = [{"name": "Jan", "revenue": 10, "cost": 7}, {"name": "Feb", "revenue": 12, "cost": 8}]
    made = await call(thread, "chart_generator", chart_type="line", title="Stacked", data=data, style={"stacked": True})
    artifact = await db(lambda t: t.artifacts.get(), thread)
    assert made["success"] is True
    assert artifact.payload["style"]["stacked"] is True
    config = artifact_view(artifact).data["config"]
    assert config["options"]["scales"]["y"]["stacked"] is True


async def test_pie_chart_as_donut(thread):
    result = await call(
        thread,
        "chart_generator",
        chart_type="pie",
        title="Share",
        data=[{"name": 2024, "value": 3}, {"name": "Other", "value": 0}],
        style={"donut": True},
    )
    assert result["success"] is True
    payload = await db(_stored_payload, result)
    assert payload["data"][0]["name"] == "2024"
    assert payload["style"]["donut"] is True and payload["style"]["show_legend"] is True
    assert result["artifact"]["artifact_type"] == "pie_chart"


@pytest.mark.parametrize(
    "args, message",
    [
        ({"chart_type": "bar", "title": "T", "data": []}, "data: List should have at least 1 item"),
        ({"chart_type": "bar", "title": "T", "data": [{"value": 1}]}, "data point 1 needs a 'name'"),
        ({"chart_type": "bar", "title": "T", "data": [{"name": "Q1"}]}, "data point 1 ('Q1') has no numeric value"),
        ({"chart_type": "bar", "title": "T", "data": [{"name": "Q1", "value": "120"}]}, "'value' must be a number"),
        (
            {"chart_type": "line", "title": "T", "data": [{"name": "A", "x": 1}, {"name": "B", "y": 2}]},
            "every point must use the same series keys",
        ),
        (
            {"chart_type": "pie", "title": "T", "data": [{"name": "A", "x": 1, "y": 2}]},
            "a pie chart takes one series, not 2",
        ),
        ({"chart_type": "pie", "title": "T", "data": [{"name": "A", "value": -1}]}, "is negative"),
        (
            {"chart_type": "bar", "title": "T", "data": [{"name": "A", "value": 10**400}]},
            "data point 1 ('A'): 'value' is a 401-digit number, too large to draw",
        ),
        ({"chart_type": "radar", "title": "T", "data": Q1_Q2}, "chart_type: Input should be 'line', 'bar' or 'pie'"),
        ({"chart_type": "bar", "title": "T", "data": Q1_Q2, "style": {"label_size": 40}}, "style → label_size"),
        ({"chart_type": "bar", "data": Q1_Q2}, "title: Field required"),
    ],
)
async def test_invalid_chart_arguments_fail_without_an_artifact(thread, args, message):
    result = await call(thread, "chart_generator", **args)
    assert result["success"] is False
    assert message in result["error"]
    assert result["error"].startswith("Invalid arguments for chart_generator: ")
    assert await db(_artifacts, thread) == []


def test_a_chart_value_too_large_for_a_float_is_a_validation_error_the_model_reads():
    """As the model's JSON arrives: a 400-digit value is refused with where it is, not an OverflowError."""
    from pydantic import ValidationError

    from agent.tools.schemas import ChartGeneratorArgs

    raw = '{"chart_type": "bar", "title": "Big", "data": [{"name": "a", "value": 1' + "0" * 400 + "}]}"
    with pytest.raises(ValidationError) as caught:
        ChartGeneratorArgs.model_validate_json(raw)
    assert "'value' is a 401-digit number, too large to draw" in str(caught.value)


async def test_data_table_persists_columns_and_rows(thread):
    rows = [["CRISPR", 2012, True, None], ["TALEN", 2011, False, 3.5]]
    result = await call(
        thread,
        "data_table",
        title="Methods",
        description="Gene editing tools",
        columns=["Name", "Year", "Used", "Score"],
        rows=rows,
    )
    assert result["success"] is True
    assert result["summary"] == "Created a table titled 'Methods' with 2 rows and 4 columns."
    payload = {
        "title": "Methods",
        "description": "Gene editing tools",
        "columns": ["Name", "Year", "Used", "Score"],
        "rows": rows,
    }
    assert result["artifact"] == {"artifact_type": "data_table", "title": "Methods"}
    stored = await db(_artifacts, thread)
    assert stored[0]["payload"] == payload and stored[0]["id"] == result["artifact_id"]


async def test_the_model_is_not_sent_a_tables_rows_back(thread):
    # The rows are in the call the model just wrote; echoed in its result as
    # well, every later model call of the thread would carry them twice.
    rows = [[f"Sample {i}", i * 0.5, f"site {i % 9}"] for i in range(2_000)]
    result = await call(thread, "data_table", title="Samples", columns=["Name", "Value", "Site"], rows=rows)
    envelope = json.dumps(result)
    assert len(envelope) < 400 and "Sample 1999" not in envelope
    assert result["summary"] == "Created a table titled 'Samples' with 2000 rows and 3 columns."
    fetched = await call(thread, "get_artifact", artifact_id=result["artifact_id"], start=1999)
    assert json.loads(fetched["summary"])["payload"]["rows"] == [["Sample 1999", 999.5, "site 1"]]


@pytest.mark.parametrize(
    "args, message",
    [
        ({"title": "T", "columns": ["a", "b"], "rows": [[1, 2], [3]]}, "row 2 has 1 cells but there are 2 columns"),
        ({"title": "T", "columns": [], "rows": [[1]]}, "columns: List should have at least 1 item"),
        ({"title": "T", "columns": ["a"], "rows": []}, "rows: List should have at least 1 item"),
        ({"title": "T", "columns": [" "], "rows": [[1]]}, "column 1 has an empty heading"),
        ({"title": "T", "columns": ["a"], "rows": [[{"nested": 1}]]}, "rows → item 1 → item 1"),
    ],
)
async def test_invalid_tables_fail_without_an_artifact(thread, args, message):
    result = await call(thread, "data_table", **args)
    assert result["success"] is False
    assert message in result["error"]
    assert await db(_artifacts, thread) == []


async def test_list_artifacts_newest_first_with_filter_and_limit(thread):
    assert (await call(thread, "list_artifacts"))["summary"] == "(no artifacts yet)"
    first = await call(thread, "chart_generator", turn_index=3, chart_type="line", title="Q1 vs Q2", data=Q1_Q2)
    second = await call(thread, "data_table", turn_index=4, title="Raw numbers", columns=["q", "v"], rows=[["Q1", 120]])
    result = await call(thread, "list_artifacts")
    assert result["summary"] == (
        f"#{second['artifact_id']} [turn 4] data_table: Raw numbers\n#{first['artifact_id']} [turn 3] line_chart: Q1 vs Q2"
    )
    only_charts = await call(thread, "list_artifacts", artifact_type="line_chart")
    assert only_charts["summary"] == f"#{first['artifact_id']} [turn 3] line_chart: Q1 vs Q2"
    assert (await call(thread, "list_artifacts", limit=1))["summary"].count("\n") == 0
    assert (await call(thread, "list_artifacts", artifact_type="pie_chart"))["summary"] == "(no pie_chart artifacts yet)"
    too_many = await call(thread, "list_artifacts", limit=51)
    assert too_many["success"] is False and "limit" in too_many["error"]


async def test_get_artifact_returns_metadata_and_payload(thread):
    made = await call(thread, "chart_generator", turn_index=2, chart_type="bar", title="Q1 vs Q2", data=Q1_Q2)
    result = await call(thread, "get_artifact", artifact_id=made["artifact_id"])
    assert result["success"] is True
    assert json.loads(result["summary"]) == {
        "id": made["artifact_id"],
        "type": "bar_chart",
        "title": "Q1 vs Q2",
        "turn_index": 2,
        "payload": await db(_stored_payload, made),
    }


async def test_get_artifact_wrong_id_or_other_thread_fails(thread, other_user):
    other = await db(thread_create, owner=other_user, title="Theirs")
    theirs = await db(
        artifacts_services.artifact_create,
        thread=other,
        artifact_type="bar_chart",
        title="Secret",
        payload={"x": 1},
        turn_index=1,
    )
    for artifact_id in (theirs.pk, 999_999, 2**70):
        result = await call(thread, "get_artifact", artifact_id=artifact_id)
        assert result == {
            "success": False,
            "error": f"No artifact with id {artifact_id} in this conversation; call list_artifacts to see the ids.",
        }
    assert (await call(thread, "list_artifacts"))["summary"] == "(no artifacts yet)"
    assert await db(lambda: selectors.artifact_for(thread=other, artifact_id=theirs.pk).title) == "Secret"


def _big_rows(n):
    rnd = random.Random(2)
    return [
        [f'Item {i} ü "q"', rnd.choice(["North", "Süd", "東"]), round(rnd.uniform(0, 1e6), 2), rnd.random(), i % 2 == 0]
        for i in range(n)
    ]


async def _read_all(thread, artifact_id, key):
    """Read an artifact part by part as the model is told to; the items, the
    parts and the largest result the model was sent."""
    items, parts, largest, start = [], [], 0, 0
    while True:
        result = await call(thread, "get_artifact", artifact_id=artifact_id, start=start)
        assert result["success"] is True, result
        largest = max(largest, len(json.dumps(result, ensure_ascii=False)))
        body = json.loads(result["summary"])
        items += body["payload"][key]
        parts.append(body.get("part"))
        following = re.search(r"call get_artifact with start=(\d+)\.$", body.get("part") or "")
        if following is None:
            return items, parts, largest
        start = int(following.group(1))


async def test_a_10000_row_table_is_read_back_in_parts_of_a_document_reads_size(thread):
    # Whole, it was some 650 000 characters (~160k tokens) in one tool result,
    # which the context budget never trims from the turn that asked for it.
    rows = _big_rows(10_000)
    made = await call(thread, "data_table", title="All items", columns=["Name", "Region", "Revenue", "Share", "Even"], rows=rows)
    items, parts, largest = await _read_all(thread, made["artifact_id"], "rows")
    assert items == rows
    assert largest <= DOCUMENT_READ_MAX_CHARS + 500
    assert 20 <= len(parts) <= 40
    first = int(re.match(r"Rows 0 to (\d+) of 10000 \(counting from 0\)\. ", parts[0]).group(1))
    assert parts[0].endswith(f"{9999 - first} more follow: call get_artifact with start={first + 1}.")
    assert parts[-1].endswith("of 10000 (counting from 0). That is the last.")
    first_part = json.loads((await call(thread, "get_artifact", artifact_id=made["artifact_id"]))["summary"])
    assert {k: v for k, v in first_part["payload"].items() if k != "rows"} == {
        "title": "All items",
        "description": "",
        "columns": ["Name", "Region", "Revenue", "Share", "Even"],
    }


async def test_a_long_chart_is_read_back_in_parts_and_a_limit_asks_for_fewer(thread):
    data = [{"name": f"t{i}", "a": i * 0.5, "b": (-1) ** i * i} for i in range(5000)]
    made = await call(thread, "chart_generator", chart_type="line", title="Trend", data=data)
    items, parts, largest = await _read_all(thread, made["artifact_id"], "data")
    assert items == data and len(parts) > 1 and largest <= DOCUMENT_READ_MAX_CHARS + 500
    assert parts[0].startswith("Points 0 to ")

    some = json.loads((await call(thread, "get_artifact", artifact_id=made["artifact_id"], start=10, limit=3))["summary"])
    assert some["payload"]["data"] == data[10:13]
    assert some["payload"]["series"] == ["a", "b"]
    assert some["part"] == "Points 10 to 12 of 5000 (counting from 0). 4987 more follow: call get_artifact with start=13."
    last = json.loads((await call(thread, "get_artifact", artifact_id=made["artifact_id"], start=4999, limit=5))["summary"])
    assert last["payload"]["data"] == data[4999:]
    assert last["part"] == "Points 4999 to 4999 of 5000 (counting from 0). That is the last."


@pytest.mark.parametrize(
    "args, message",
    [
        ({"start": 3}, "start=3 is past the end: the table has 3 rows (0 to 2)."),
        ({"start": 2**70}, f"start={2**70} is past the end: the table has 3 rows (0 to 2)."),
        ({"start": -1}, "start: Input should be greater than or equal to 0"),
        ({"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ({"limit": ARTIFACT_READ_MAX_ITEMS + 1}, f"limit: Input should be less than or equal to {ARTIFACT_READ_MAX_ITEMS}"),
        ({"start": "second"}, "start: Input should be a valid integer"),
    ],
)
async def test_a_part_past_the_end_or_a_wrong_start_or_limit_is_a_clear_error(thread, args, message):
    made = await call(thread, "data_table", title="T", columns=["a"], rows=[[1], [2], [3]])
    result = await call(thread, "get_artifact", artifact_id=made["artifact_id"], **args)
    assert result["success"] is False
    assert message in result["error"]
    assert "Traceback" not in result["error"]


async def test_an_imported_artifact_of_another_kind_is_read_whole_or_its_first_part(thread):
    small = await db(
        artifacts_services.artifact_create, thread=thread, artifact_type="timeline", title="S", payload={"x": 1}, turn_index=1
    )
    big = await db(
        artifacts_services.artifact_create,
        thread=thread,
        artifact_type="document",
        title="Notes",
        payload={"content": "Zeile ü\n" * 20_000},
        turn_index=1,
    )
    assert json.loads((await call(thread, "get_artifact", artifact_id=small.pk))["summary"])["payload"] == {"x": 1}
    result = await call(thread, "get_artifact", artifact_id=big.pk)
    body = json.loads(result["summary"])
    assert len(json.dumps(result, ensure_ascii=False)) <= DOCUMENT_READ_MAX_CHARS + 500
    assert body["payload_text"].startswith('{"content": "Zeile ü\\nZeile ü')
    assert body["part"].startswith(f"The first {len(body['payload_text'])} of 180015 characters of the payload's JSON")
    refused = await call(thread, "get_artifact", artifact_id=big.pk, start=5)
    assert refused["success"] is False and "only a table's rows and a chart's points are read in parts" in refused["error"]


@pytest.mark.parametrize(
    "content",
    ['say "yes" ' * 8_000, "C:\\path\\to\\file " * 8_000, "line\n" * 30_000, "bell \x07 " * 10_000, "x" + 'say "yes" ' * 8_000],
    ids=["quotes", "backslashes", "line breaks", "control characters", "quotes one character on"],
)
async def test_an_imported_artifact_full_of_quotes_or_line_breaks_is_read_within_a_reads_size(thread, content):
    # Its JSON is escaped twice more on its way to the model: the first part
    # was cut at 22 500 characters of it, up to 45 000 and more as sent.
    big = await db(
        artifacts_services.artifact_create,
        thread=thread,
        artifact_type="document",
        title="Notes",
        payload={"content": content},
        turn_index=1,
    )
    result = await call(thread, "get_artifact", artifact_id=big.pk)
    assert result["success"] is True
    assert DOCUMENT_READ_MAX_CHARS - 500 <= len(json.dumps(result, ensure_ascii=False)) <= DOCUMENT_READ_MAX_CHARS + 500
    shown = json.loads(result["summary"])["payload_text"]
    assert json.dumps({"content": content}, ensure_ascii=False).startswith(shown)
    # Cut between whole escapes: no lone backslash, no half of a \u escape.
    assert not re.search(r"(?<!\\)(\\\\)*\\$", shown)
    assert not re.search(r"\\u[0-9a-f]{0,3}$", shown)
