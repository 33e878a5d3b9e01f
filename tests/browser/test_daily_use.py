"""Small things a daily user trips on, in Chromium: the preview follows the
typing before anything is saved (task lists as checkboxes, scrolling with
the editor), a stacked line chart is drawn stacked, and the chat's model
choice survives a reload."""

import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import OpenAICompatibleServer

from .helpers import (
    TURN_WAIT_MS,
    delay_document_saves,
    document_status,
    document_text,
    model_env,
    new_thread_for,
    wait_for_socket,
)

pytestmark = pytest.mark.browser


def test_the_preview_follows_the_typing_before_any_save_and_scrolls_with_the_editor(owner_workspace, haico_server):
    page, _url = owner_workspace
    delay_document_saves(page, 60_000)  # no save reaches the server during this test
    preview = page.locator("#doc-preview")

    document_text(page).click()
    page.keyboard.type("# Shopping\n\n- [ ] milk\n- [x] bread\n", delay=10)

    expect(preview.get_by_role("heading", name="Shopping")).to_be_visible()
    boxes = preview.get_by_role("checkbox")
    expect(boxes).to_have_count(2)
    expect(boxes.nth(0)).not_to_be_checked()
    expect(boxes.nth(1)).to_be_checked()
    expect(boxes.nth(0)).to_be_disabled()
    expect(preview.locator("li", has=page.get_by_role("checkbox"))).to_have_text(["milk", "bread"])
    expect(document_status(page)).not_to_have_text("Saved")
    assert haico_server.query("SELECT content FROM workspace_document") in ([], [("",)])

    # A long text: scrolled to its end, the preview shows its end too.
    lines = "\n\n".join(f"Paragraph {n} of a long document." for n in range(1, 121))
    document_text(page).fill(lines)
    expect(preview).to_contain_text("Paragraph 120 of a long document.")
    document_text(page).evaluate("el => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); }")
    page.wait_for_function(
        "() => { const pane = document.querySelector('.doc-preview-pane');"
        " return pane.scrollHeight > pane.clientHeight && pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 2; }"
    )
    document_text(page).evaluate("el => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); }")
    page.wait_for_function("() => document.querySelector('.doc-preview-pane').scrollTop === 0")


STACKED = [{"name": "Jan", "rent": 900, "food": 300}, {"name": "Feb", "rent": 900, "food": 350}]


@pytest.fixture
def model_server():
    with OpenAICompatibleServer(models=["scripted-model", "scripted-other"]) as server:
        yield server


def test_a_stacked_line_chart_is_drawn_stacked(page, start_haico_server, model_server):
    model_server.script(
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "chart_generator",
                        "Drawing the costs stacked.",
                        chart_type="line",
                        title="Monthly costs",
                        data=STACKED,
                        style={"stacked": True},
                    )
                ]
            ),
            Reply(text="Here are the costs, stacked."),
        ]
    )
    server = start_haico_server(model_env(model_server))
    new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("chart my costs, stacked")
    chat.get_by_role("button", name="Send").click()

    canvas = page.get_by_role("region", name="Document").locator("canvas[data-chart-config]")
    expect(canvas).to_be_visible(timeout=TURN_WAIT_MS)
    page.wait_for_function("el => window.Chart && Chart.getChart(el)", arg=canvas.element_handle())
    drawn = canvas.evaluate(
        """el => { const chart = Chart.getChart(el);
            chart.update("none");  // the points where they end, not mid-animation
            return {type: chart.config.type, yStacked: chart.options.scales.y.stacked,
                    fills: chart.data.datasets.map(d => d.fill),
                    // Where Chart.js put the top series' first point: on top of the first one's.
                    top: chart.getDatasetMeta(1).data[0].y, bottom: chart.getDatasetMeta(0).data[0].y,
                    atTotal: chart.scales.y.getPixelForValue(1200)}; }"""
    )
    assert drawn["type"] == "line" and drawn["yStacked"] is True
    assert drawn["fills"] == ["origin", "-1"]
    assert abs(drawn["top"] - drawn["atTotal"]) < 1 and drawn["top"] < drawn["bottom"]


def test_the_model_chosen_in_a_thread_is_still_chosen_after_a_reload(page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server, HAICO_MODELS="scripted-model,scripted-other"))
    new_thread_for(page, server.url, "ada")
    model = page.get_by_role("region", name="Chat").get_by_role("combobox", name="Model")
    # The options' values name the provider too (agent.catalogue): the environment's here.
    expect(model).to_have_value("env:scripted-model")

    with page.expect_response(lambda r: r.url.endswith("/model/")):
        model.select_option(label="scripted-other")
    page.reload()

    expect(page.get_by_role("region", name="Chat").get_by_role("combobox", name="Model")).to_have_value("env:scripted-other")
    # Another thread has its own choice: the default until one is made there.
    page.goto(f"{server.url}/threads/")
    page.get_by_role("button", name="New thread", exact=True).click()
    expect(page).not_to_have_url(f"{server.url}/threads/")
    expect(page.get_by_role("region", name="Chat").get_by_role("combobox", name="Model")).to_have_value("env:scripted-model")


def test_the_rename_form_keeps_its_row_after_a_refused_title(owner_workspace, haico_server):
    page, _url = owner_workspace
    page.goto(f"{haico_server.url}/threads/")
    page.get_by_role("button", name="Rename thread New thread").click()
    form = page.locator(".thread-rename")

    def row_of(name):
        box = form.get_by_role("button", name=name).bounding_box()
        return box["y"], box["height"]

    title = form.get_by_role("textbox", name="Thread title")
    before = (title.bounding_box()["y"], row_of("Save")[0], row_of("Cancel")[0])
    title.fill(" ")
    title.evaluate("el => el.removeAttribute('required')")  # let the server refuse it
    form.get_by_role("button", name="Save").click()
    error = page.locator(".thread-rename").get_by_role("alert")
    expect(error).to_have_text("Title cannot be empty.")

    form = page.locator(".thread-rename")
    title = form.get_by_role("textbox", name="Thread title")
    after = (title.bounding_box()["y"], row_of("Save")[0], row_of("Cancel")[0])
    assert after == before
    # Title, Save and Cancel share one line; the message is on the line below.
    assert abs(after[1] - after[2]) < 2 and error.bounding_box()["y"] > after[1] + row_of("Save")[1] - 1


def test_a_preview_update_replaces_only_the_blocks_that_changed(owner_workspace):
    # A long document's preview is not built again whole for one paragraph (docs/adr/0042).
    page, _url = owner_workspace
    delay_document_saves(page, 60_000)
    preview = page.locator("#doc-preview")
    document_text(page).fill("\n\n".join(f"Paragraph {n} of the preview." for n in range(1, 41)))
    expect(preview).to_contain_text("Paragraph 40 of the preview.")
    # Marks that only live on the elements themselves (not attributes, which would make them differ).
    page.evaluate("() => document.querySelectorAll('#doc-preview p').forEach((p, n) => { p.__shownAs = n; })")

    document_text(page).evaluate(
        "el => { const at = el.value.indexOf('Paragraph 30 of the preview.') + 28; el.setSelectionRange(at, at); el.focus(); }"
    )
    page.keyboard.type(" Changed.", delay=10)
    expect(preview.locator("p").nth(29)).to_have_text("Paragraph 30 of the preview. Changed.")
    kept = page.evaluate("() => Array.from(document.querySelectorAll('#doc-preview p'), (p) => p.__shownAs ?? null)")
    assert kept == [*range(29), None, *range(30, 40)]
