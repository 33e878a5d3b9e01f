"""The centre panel's selector view: the live document or one artifact,
rendered through the registry. Method, access, and what the person sees."""

import json
import re
import uuid

import pytest

from conversations.services import thread_create
from tests.support.web import HTMX, answered_as_missing, ws_url
from workspace.panels import render_panel
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db


def _artifact(thread, artifact_type, payload, *, title="", turn_index=1):
    return artifacts_services.artifact_create(
        thread=thread, artifact_type=artifact_type, title=title, payload=payload, turn_index=turn_index
    )


def _bar(thread, **kwargs):
    return _artifact(
        thread,
        "bar_chart",
        {
            "title": "Q1 vs Q2 revenue",
            "description": "Revenue per quarter, in k$",
            "data": [{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}],
            "x_axis_title": "Quarter",
            "y_axis_title": "Revenue",
            "style": {"palette": "soft"},
        },
        title="Q1 vs Q2 revenue",
        **kwargs,
    )


def _chart_configs(html):
    return [json.loads(m) for m in re.findall(r'<script id="chart-config-\d+" type="application/json">(.*?)</script>', html)]


def _get(client, thread, query=""):
    return client.get(ws_url(thread, "centre/") + query, **HTMX)


def test_centre_panel_without_selection_shows_the_live_document_editor(owner_client, thread):
    document_services.document_save(thread=thread, title="Literature review", content="## Scope\n\nPapers since 2015.")
    response = _get(owner_client, thread)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="panel-centre"')
    assert 'role="region" aria-label="Document"' in html
    assert 'value="Literature review"' in html
    assert "Papers since 2015.</textarea>" in html
    assert "<h2>Scope</h2>" in html  # the preview
    assert '<option value="" selected>Document (live)</option>' in html
    assert 'name="base_version" value="1"' in html


def test_centre_selector_lists_artifacts_newest_first_with_type_and_turn(owner_client, thread):
    _bar(thread, turn_index=1)
    _artifact(thread, "data_table", {"title": "Sources", "columns": ["a"], "rows": []}, title="Sources", turn_index=2)
    html = _get(owner_client, thread).content.decode()
    older = html.index("Q1 vs Q2 revenue · bar chart · turn 1")
    newer = html.index("Sources · table · turn 2")
    assert newer < older
    assert 'aria-label="Show"' in html


def test_centre_shows_selected_bar_chart_with_title_subtitle_canvas_and_data(owner_client, thread):
    chart = _bar(thread, turn_index=3)
    response = _get(owner_client, thread, f"?artifact={chart.pk}")
    html = response.content.decode()
    assert response.status_code == 200
    assert '<h2 class="artifact-title">Q1 vs Q2 revenue</h2>' in html
    assert '<p class="artifact-subtitle">Revenue per quarter, in k$</p>' in html
    assert f'<canvas data-chart-config="chart-config-{chart.pk}"' in html
    assert f'<option value="{chart.pk}" selected>' in html
    assert '<th scope="row">Q2</th><td class="num">180</td>' in html  # the Data table fallback
    assert 'name="content"' not in html  # no editor while an artifact is shown
    [config] = _chart_configs(html)
    assert config["type"] == "bar"
    assert config["data"]["datasets"][0]["data"] == [120, 180]


def test_centre_multi_series_line_chart_has_one_dataset_per_series(owner_client, thread):
    chart = _artifact(
        thread,
        "line_chart",
        {
            "title": "Revenue and cost",
            "description": None,
            "data": [{"name": "Q1", "revenue": 120, "cost": 80}, {"name": "Q2", "revenue": 180, "cost": 95}],
            "series": ["revenue", "cost"],  # as chart_generator writes it: jsonb keeps no key order
            "style": {"smooth": True, "show_grid": False},
        },
    )
    html = _get(owner_client, thread, f"?artifact={chart.pk}").content.decode()
    [config] = _chart_configs(html)
    assert [d["label"] for d in config["data"]["datasets"]] == ["revenue", "cost"]
    assert config["options"]["plugins"]["legend"]["display"] is True
    assert config["options"]["scales"]["y"]["grid"]["display"] is False
    assert "artifact-subtitle" not in html  # no description, no empty subtitle


def test_centre_shows_data_table_with_sortable_headers(owner_client, thread):
    table = _artifact(
        thread,
        "data_table",
        {
            "title": "Candidate papers",
            "description": "Shortlist",
            "columns": ["Paper", "Citations"],
            "rows": [["Smith 2020", 35], ["Lee 2019", 1200]],
        },
    )
    html = _get(owner_client, thread, f"?artifact={table.pk}").content.decode()
    assert "Candidate papers" in html and "Shortlist" in html
    assert '<th scope="col" aria-sort="none"><button type="button" class="sort-button" data-sort-column="0">Paper' in html
    assert "<td>Smith 2020</td>" in html
    assert '<td class="num" data-sort-value="1200">1200</td>' in html


def test_centre_shows_document_artifact_read_only_and_sanitised(owner_client, thread):
    doc = _artifact(thread, "document", {"title": "Draft", "content": "**Bold** <script>alert(1)</script>"})
    html = _get(owner_client, thread, f"?artifact={doc.pk}").content.decode()
    assert "<strong>Bold</strong>" in html
    assert "<script>alert(1)</script>" not in html
    assert "<textarea" not in html


def test_centre_unknown_type_shows_banner_and_json(owner_client, thread):
    odd = _artifact(thread, "mind_map", {"nodes": ["<b>root</b>", 2]}, title="Ideas")
    response = _get(owner_client, thread, f"?artifact={odd.pk}")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Unknown artifact type" in html and "mind_map" in html
    assert '<pre class="artifact-json"><code>{\n  &quot;nodes&quot;: [\n    &quot;&lt;b&gt;root&lt;/b&gt;&quot;,' in html


def test_centre_chart_with_bad_payload_explains_instead_of_failing(owner_client, thread):
    broken = _artifact(thread, "pie_chart", {"title": "Share"})
    response = _get(owner_client, thread, f"?artifact={broken.pk}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "This artifact could not be displayed." in html
    assert "The chart has no data points." in html


def test_centre_escapes_payload_text(owner_client, thread):
    evil = '<img src=x onerror="alert(1)">'
    chart = _artifact(thread, "bar_chart", {"title": evil, "data": [{"name": evil, "value": 1}]}, title=evil)
    html = _get(owner_client, thread, f"?artifact={chart.pk}").content.decode()
    assert "<img" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html


def test_centre_artifact_of_another_thread_is_404(owner_client, owner, thread):
    elsewhere = thread_create(owner=owner, title="Other work")
    foreign = _bar(elsewhere)
    assert answered_as_missing(_get(owner_client, thread, f"?artifact={foreign.pk}"))
    assert answered_as_missing(_get(owner_client, thread, "?artifact=999999"))


@pytest.mark.parametrize("artifact_id", ["abc", "²", "-1", "1.5"])
def test_centre_artifact_id_that_is_not_a_number_is_refused_with_a_message(owner_client, thread, artifact_id):
    # htmx: 200 and the page's flash line, the page left as it is; a plain request: 400.
    response = _get(owner_client, thread, f"?artifact={artifact_id}")
    assert response.status_code == 200 and response["HX-Reswap"] == "none"
    assert "must be a number" in response["HX-Trigger"]
    plain = owner_client.get(ws_url(thread, "centre/") + f"?artifact={artifact_id}")
    assert plain.status_code == 400 and b"must be a number" in plain.content


def test_centre_other_users_thread_is_404(other_client, thread):
    chart = _bar(thread)
    assert answered_as_missing(_get(other_client, thread))
    assert answered_as_missing(_get(other_client, thread, f"?artifact={chart.pk}"))


def test_centre_unknown_thread_is_404(owner_client):
    assert owner_client.get(f"/threads/{uuid.uuid4()}/workspace/centre/").status_code == 404


def test_centre_anonymous_is_sent_to_login(client, thread):
    response = client.get(ws_url(thread, "centre/"))
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_centre_refuses_post(owner_client, thread):
    assert owner_client.post(ws_url(thread, "centre/"), **HTMX).status_code == 405


def test_render_panel_push_selects_the_new_artifact_out_of_band(thread):
    # What the agent turn sends over the socket when a tool created an artifact.
    chart = _bar(thread)
    html = render_panel("centre", thread=thread, oob=True, selected_artifact_id=chart.pk)
    assert 'id="panel-centre"' in html and 'hx-swap-oob="true"' in html
    assert 'data-view="artifact"' in html and f'data-artifact-id="{chart.pk}"' in html
    assert "Q1 vs Q2 revenue" in html
    assert "csrfmiddlewaretoken" not in html  # rendered without a request; the page's hx-headers carry CSRF


def test_render_panel_page_include_shows_document_and_no_oob(thread):
    html = render_panel("centre", thread=thread)
    assert "hx-swap-oob" not in html
    assert 'data-view="document"' in html
    assert "New document" in html


def _long_table(thread, rows):
    payload = {"title": "Sales", "columns": ["Item", "Amount"], "rows": [[f"Item {n}", n] for n in range(rows)]}
    return _artifact(thread, "data_table", payload, title="Sales")


def test_a_long_table_shows_its_first_rows_and_says_how_many_it_has(owner_client, thread):
    """The owner opens a 1 200-row table: its first 500 rows, the count, a
    way to see every row; what is stored is the whole table (docs/adr/0141)."""
    table = _long_table(thread, 1200)
    html = _get(owner_client, thread, f"?artifact={table.pk}").content.decode()
    assert html.count("<tr><td") == 500
    assert "<td>Item 499</td>" in html and "<td>Item 500</td>" not in html
    assert "Showing the first 500 of 1200 rows; sorting orders these." in html
    assert "Table · 1200 rows · turn 1" in html
    assert f'hx-get="/threads/{thread.pk}/workspace/centre/?artifact={table.pk}&amp;rows=all"' in html
    assert ">Show all 1200 rows</button>" in html
    table.refresh_from_db()
    assert len(table.payload["rows"]) == 1200


def test_show_all_rows_gives_every_row_of_a_long_table(owner_client, thread):
    table = _long_table(thread, 1200)
    html = _get(owner_client, thread, f"?artifact={table.pk}&rows=all").content.decode()
    assert html.count("<tr><td") == 1200 and "<td>Item 1199</td>" in html
    assert "Showing the first" not in html and "Table · 1200 rows · turn 1" in html


def test_a_table_of_500_rows_or_fewer_is_shown_whole_without_a_note(owner_client, thread):
    table = _long_table(thread, 500)
    html = _get(owner_client, thread, f"?artifact={table.pk}").content.decode()
    assert html.count("<tr><td") == 500 and "Showing the first" not in html and "Show all" not in html


def test_another_user_cannot_ask_for_every_row_of_a_table(other_client, thread):
    table = _long_table(thread, 1200)
    assert answered_as_missing(_get(other_client, thread, f"?artifact={table.pk}&rows=all"))


def _long_chart(thread, points):
    payload = {"title": "Readings", "data": [{"name": f"Day {n}", "value": n} for n in range(points)]}
    return _artifact(thread, "line_chart", payload, title="Readings")


def test_a_long_charts_data_table_shows_its_first_points_and_says_how_many_it_has(owner_client, thread):
    """The owner opens a chart of 1 200 points: the chart draws every point,
    its Data table lists the first 500 and says how many there are, with a
    way to see every one, as a long table does (docs/adr/0141)."""
    chart = _long_chart(thread, 1200)
    html = _get(owner_client, thread, f"?artifact={chart.pk}").content.decode()
    assert html.count('<tr><th scope="row">') == 500
    assert '<th scope="row">Day 499</th>' in html and '<th scope="row">Day 500</th>' not in html
    assert "Showing the first 500 of 1200 points." in html
    assert f'hx-get="/threads/{thread.pk}/workspace/centre/?artifact={chart.pk}&amp;rows=all"' in html
    assert ">Show all 1200 points</button>" in html
    assert len(_chart_configs(html)[0]["data"]["labels"]) == 1200


def test_show_all_points_lists_every_point_of_a_long_charts_data_table_open(owner_client, thread):
    chart = _long_chart(thread, 1200)
    html = _get(owner_client, thread, f"?artifact={chart.pk}&rows=all").content.decode()
    assert html.count('<tr><th scope="row">') == 1200 and '<th scope="row">Day 1199</th>' in html
    assert "Showing the first" not in html
    # Asked for from inside the Data table, which stays open.
    assert '<details class="artifact-data" open>' in html


def test_a_chart_of_500_points_or_fewer_lists_them_all_without_a_note(owner_client, thread):
    chart = _long_chart(thread, 500)
    html = _get(owner_client, thread, f"?artifact={chart.pk}").content.decode()
    assert html.count('<tr><th scope="row">') == 500 and "Showing the first" not in html and "Show all" not in html
    assert '<details class="artifact-data">' in html
