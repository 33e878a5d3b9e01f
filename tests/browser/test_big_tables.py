"""A big table the agent makes, in the browser: every open tab shows its
first rows and says how many it has, "Show all" brings the rest, and a sort
orders the rows by the column's meaning and puts them back in one go
(docs/adr/0141)."""

import random

import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply, tool_call

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, open_second_tab, send_message, wait_for_socket

ROWS = 10_000


def _rows():
    rnd = random.Random(7)
    return [
        [f"Item {i} ü 数据", rnd.choice(["North", "Süd", "東"]), round(rnd.uniform(0, 1e6), 2), '<script>alert("x")</script>']
        for i in range(ROWS)
    ]


@pytest.fixture
def model_server(model_server):
    # The table's arguments are about 700 KB of JSON: in the server's usual
    # 12-character pieces that is some 60 000 stream events, whose parsing in
    # the OpenAI client alone took 40 s of CPU, past this test's wait on a
    # loaded machine. What is tested here is the table in the tabs, not the
    # wire (tests/agent/test_model_wire.py streams arguments in small pieces).
    model_server.args_chunk_chars = 4096
    model_server.script(
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "data_table",
                        "Listing every item.",
                        title="All items",
                        columns=["Name", "Region", "Revenue", "Note"],
                        rows=_rows(),
                    )
                ]
            ),
            Reply(text="Here is the table."),
        ]
    )
    return model_server


def _sort(page, column_name):
    """Click the column's sort button; the tbody's DOM changes it made, and the column's cells after it."""
    return page.evaluate(
        """(name) => {
            const body = document.querySelector('#panel-centre table.data-table tbody');
            const observer = new MutationObserver(() => {});
            observer.observe(body, {childList: true});
            const button = [...document.querySelectorAll('#panel-centre .sort-button')].find(b => b.textContent.trim() === name);
            button.click();
            const changes = observer.takeRecords().length;
            observer.disconnect();
            const column = [...button.closest('tr').children].indexOf(button.closest('th'));
            const cells = [...body.rows].map(row => row.cells[column]);
            return {changes, texts: cells.map(c => c.textContent), values: cells.map(c => c.dataset.sortValue || null),
                    ariaSort: button.closest('th').getAttribute('aria-sort')};
        }""",
        column_name,
    )


def _revenues(values):
    return [float(v) for v in values]


def test_a_10000_row_table_shows_its_first_rows_in_every_tab_and_all_of_them_on_asking(page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    other = open_second_tab(page, url)
    send_message(page, "tabulate every item")
    for tab in (page, other):
        centre = tab.locator("#panel-centre")
        expect(centre.locator("table.data-table")).to_be_visible(timeout=TURN_WAIT_MS * 3)
        expect(centre.locator(".artifact-meta")).to_contain_text(f"{ROWS} rows")
        expect(centre.locator(".table-shown")).to_contain_text(f"Showing the first 500 of {ROWS} rows")
        assert centre.locator("tbody tr").count() == 500
    assert page.evaluate("() => typeof window.__xss") == "undefined"

    # Numbers sort as numbers, both ways; the body is emptied and filled once, not moved row by row.
    ascending = _sort(page, "Revenue")
    assert ascending["changes"] <= 2 and ascending["ariaSort"] == "ascending"
    assert _revenues(ascending["values"]) == sorted(_revenues(ascending["values"]))
    descending = _sort(page, "Revenue")
    assert descending["ariaSort"] == "descending"
    assert _revenues(descending["values"]) == sorted(_revenues(ascending["values"]), reverse=True)
    # Text by the collator: "Item 2" before "Item 10".
    names = _sort(page, "Name")["texts"]
    assert names[:3] == ["Item 0 ü 数据", "Item 1 ü 数据", "Item 2 ü 数据"] and names[10] == "Item 10 ü 数据"

    page.locator("#panel-centre").get_by_role("button", name=f"Show all {ROWS} rows").click()
    expect(page.locator("#panel-centre tbody tr")).to_have_count(ROWS, timeout=TURN_WAIT_MS)
    expect(page.locator("#panel-centre .table-shown")).to_have_count(0)
    every = _sort(page, "Revenue")
    assert every["changes"] <= 2 and len(every["values"]) == ROWS
    assert _revenues(every["values"]) == sorted(_revenues(every["values"]))
    # Stable: rows of the same region keep the order they had (by revenue).
    regions = _sort(page, "Region")
    assert regions["changes"] <= 2 and regions["texts"] == sorted(regions["texts"], key=["North", "Süd", "東"].index)
    revenues = _revenues(
        page.evaluate("() => [...document.querySelectorAll('#panel-centre tbody tr')].map(r => r.cells[2].dataset.sortValue)")
    )
    for region in ("North", "Süd", "東"):
        within = [value for value, name in zip(revenues, regions["texts"]) if name == region]
        assert within == sorted(within)
    assert page.evaluate("() => typeof window.__xss") == "undefined"
