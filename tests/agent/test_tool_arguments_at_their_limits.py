"""The agent's tool calls with arguments at and just over each limit, at the
sizes a real model produces: each is stored whole or refused with a message
naming the limit or the item, never half-written. The real compiled agent
with a scripted model (tests/agent/scripted_turn.py)."""

import pytest
from asgiref.sync import sync_to_async

from tests.agent.scripted_turn import document_stored, envelopes_of, preferences_stored, steps_stored, tool_results_of_a_turn
from tests.support.fake_model import Reply, tool_call
from workspace.models import Artifact, DocumentRevision, PlanChange
from workspace.services import document as document_services
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db(transaction=True)


def _chapter(chars: int) -> str:
    text, n = "", 0
    while len(text) < chars:
        n += 1
        text += f"Paragraph {n} of the chapter, with the reasoning that belongs to it.\n\n"
    return text[:chars]


async def test_a_whole_document_write_at_and_just_over_the_limit(thread, settings):
    limit = settings.HAICO_DOCUMENT_MAX_CHARS
    big = _chapter(limit)
    over = _chapter(limit + 1)
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(tool_calls=[tool_call("update_document", "Writing the full draft.", content=big, title="Thesis")]),
            Reply(tool_calls=[tool_call("update_document", "Adding one more character.", content=over)]),
        ],
    )
    ok, refused = envelopes_of(results)
    assert ok["success"] is True
    assert refused["success"] is False and f"{limit:,}" in refused["error"], refused
    content, version = await document_stored(thread)
    assert content == big and version == 1


async def test_an_append_that_would_pass_the_limit_is_refused_clearly(thread, settings):
    limit = settings.HAICO_DOCUMENT_MAX_CHARS
    await sync_to_async(document_services.document_save)(
        thread=thread, title="Thesis", content=_chapter(limit - 10), author=DocumentRevision.Author.PERSON
    )
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[tool_call("append_to_document", "Adding the conclusion.", text="Conclusion: yes, the results hold.")]
            )
        ],
    )
    [refused] = envelopes_of(results)
    assert refused["success"] is False and "internal error" not in refused["error"].lower(), refused
    content, version = await document_stored(thread)
    assert len(content) == limit - 10 and version == 1


async def test_a_plan_of_2000_nested_steps_in_one_call(thread):
    depths = [i % 8 for i in range(2000)]
    steps = [{"text": f"Step {i} " + "x" * 40, "depth": d} for i, d in enumerate(depths)]
    results = await tool_results_of_a_turn(
        thread, [Reply(tool_calls=[tool_call("add_todos", "Laying out the full plan.", steps=steps)])]
    )
    [ok] = envelopes_of(results)
    assert ok["success"] is True, ok
    stored = await steps_stored(thread)
    assert [(t, d) for t, _done, d in stored] == [(s["text"], s["depth"]) for s in steps]
    summaries = await sync_to_async(lambda: list(PlanChange.objects.filter(thread=thread).values_list("summary", flat=True)))()
    assert len(summaries) == 1 and len(summaries[0]) <= 4000


async def test_a_preference_batch_with_one_item_over_the_limit_writes_none(thread):
    items = [{"title": f"Rule {i}", "kind": "soft"} for i in range(10)]
    items.append({"title": "Tone", "subtitle": "y" * 5000, "kind": "hard"})
    results = await tool_results_of_a_turn(
        thread, [Reply(tool_calls=[tool_call("add_preferences", "Noting your rules.", items=items)])]
    )
    [refused] = envelopes_of(results)
    assert refused["success"] is False and "Item 11" in refused["error"] and "500" in refused["error"], refused
    assert await preferences_stored(thread) == []


async def test_a_step_batch_update_with_one_text_over_the_limit_writes_none(thread):
    await sync_to_async(plan_services.todos_add_outline)(thread=thread, steps=[{"text": f"S{i}"} for i in range(5)])
    updates = [{"index": i, "text": f"Renamed {i}"} for i in range(1, 5)] + [{"index": 5, "text": "z" * 1001}]
    results = await tool_results_of_a_turn(
        thread, [Reply(tool_calls=[tool_call("update_todos", "Renaming the steps.", updates=updates)])]
    )
    [refused] = envelopes_of(results)
    assert refused["success"] is False and "Update 5" in refused["error"], refused
    assert [t for t, _d, _x in await steps_stored(thread)] == [f"S{i}" for i in range(5)]


async def test_a_table_of_20000_rows_is_stored_whole_or_refused_clearly(thread):
    columns = ["id", "name", "value", "ok", "note"]
    rows = [[i, f"Item {i}", i * 1.5, i % 2 == 0, None] for i in range(20_000)]
    results = await tool_results_of_a_turn(
        thread, [Reply(tool_calls=[tool_call("data_table", "Tabulating every item.", title="Items", columns=columns, rows=rows)])]
    )
    [result] = envelopes_of(results)
    stored = await sync_to_async(lambda: list(Artifact.objects.filter(thread=thread)))()
    if result["success"]:
        assert len(stored) == 1 and len(stored[0].payload["rows"]) == 20_000
    else:
        assert stored == [] and "too large" in result["error"] and "internal error" not in result["error"].lower(), result


async def test_a_table_of_200_columns(thread):
    columns = [f"c{i}" for i in range(200)]
    rows = [[r * 200 + c for c in range(200)] for r in range(300)]
    results = await tool_results_of_a_turn(
        thread,
        [Reply(tool_calls=[tool_call("data_table", "Tabulating the wide data.", title="Wide", columns=columns, rows=rows)])],
    )
    [result] = envelopes_of(results)
    assert result["success"] is True, result
    stored = await sync_to_async(lambda: Artifact.objects.get(thread=thread))()
    assert stored.payload["columns"] == columns and stored.payload["rows"][-1][-1] == 299 * 200 + 199


async def test_a_chart_of_50000_points_is_stored_whole_or_refused_clearly(thread):
    data = [{"name": f"t{i}", "value": i % 97} for i in range(50_000)]
    results = await tool_results_of_a_turn(
        thread,
        [Reply(tool_calls=[tool_call("chart_generator", "Plotting the series.", chart_type="line", title="Series", data=data)])],
    )
    [result] = envelopes_of(results)
    stored = await sync_to_async(lambda: list(Artifact.objects.filter(thread=thread)))()
    if result["success"]:
        assert len(stored) == 1 and len(stored[0].payload["data"]) == 50_000
    else:
        assert stored == [] and "internal error" not in result["error"].lower(), result


async def test_a_chart_with_a_wrong_type_deep_inside_names_the_point(thread):
    data = [{"name": f"t{i}", "value": i} for i in range(5000)]
    data[4321]["value"] = "12"
    results = await tool_results_of_a_turn(
        thread,
        [Reply(tool_calls=[tool_call("chart_generator", "Plotting the series.", chart_type="line", title="Series", data=data)])],
    )
    [result] = envelopes_of(results)
    assert result["success"] is False and "4322" in result["error"], result
    assert len(result["error"]) < 3000, len(result["error"])
