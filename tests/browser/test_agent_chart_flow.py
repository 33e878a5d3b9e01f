"""Issue 3 end to end in Chromium: a chart asked for in the chat.

The real app runs against a local OpenAI-compatible server (the real
ChatOpenAI client, real SSE streaming) scripted to answer "chart Q1 vs Q2
revenue: 120, 180" with a chart_generator tool call and then a short answer.
The person sees the reasoning sentence, the bar chart in the centre panel and
the answer streaming in, and after a reload all of it is still there.
"""

import pytest
from playwright.sync_api import Page, expect

from .helpers import (
    ANSWER,
    REASONING,
    REQUEST,
    TURN_WAIT_MS,
    chart_turn_script,
    expect_bar_chart,
    model_env,
    new_thread_for,
    thread_id_from,
    wait_for_socket,
)


@pytest.fixture
def model_server(model_server):
    model_server.script(chart_turn_script())
    return model_server


def watch_answer_text(page: Page) -> None:
    """Record every distinct text the assistant's answer shows, as it changes."""
    page.evaluate(
        """() => {
            window.__answerStates = [];
            const record = () => {
                const answer = document.querySelector("#chat-messages .answer");
                const text = answer ? answer.textContent.trim() : "";
                const states = window.__answerStates;
                if (text && states[states.length - 1] !== text) states.push(text);
            };
            new MutationObserver(record).observe(document.getElementById("chat-messages"),
                {subtree: true, childList: true, characterData: true});
        }"""
    )


def test_chart_request_shows_reasoning_chart_and_streamed_answer_and_survives_reload(page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    url = new_thread_for(page, server.url, "ada")
    thread_id = thread_id_from(url).replace("-", "")
    chat = page.get_by_role("region", name="Chat")
    wait_for_socket(page)
    watch_answer_text(page)

    chat.get_by_role("textbox", name="Message").fill(REQUEST)
    chat.get_by_role("button", name="Send").click()

    # The person's message, then the one reasoning sentence (never a tool name).
    expect(chat.locator(".bubble-text", has_text=REQUEST)).to_be_visible()
    reasoning = chat.get_by_role("group", name="Internal reasoning")
    expect(reasoning).to_contain_text(REASONING, timeout=TURN_WAIT_MS)
    expect(reasoning).not_to_contain_text("chart_generator")

    # The chart is drawn in the centre panel and listed in its selector.
    expect_bar_chart(page)
    show = page.get_by_role("region", name="Document").get_by_role("combobox", name="Show")
    expect(show.locator("option:checked")).to_contain_text("Q1 vs Q2 Revenue")

    # The answer streams in, then the turn completes.
    answer = chat.locator("#chat-messages .answer").first
    expect(answer).to_have_text(ANSWER, timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("textbox", name="Message")).to_have_value("")
    states = page.evaluate("window.__answerStates")
    partial = [s for s in states if s != ANSWER]
    assert len(partial) >= 3, f"the answer did not stream in token by token: {states}"
    assert all(ANSWER.startswith(s) for s in partial), states

    # The model saw the request once per step and the tool result in between.
    assert len(model_server.requests) == 2
    assert "chart_generator" in {t["function"]["name"] for t in model_server.requests[0]["tools"]}
    assert any(m.get("role") == "tool" for m in model_server.requests[1]["messages"])

    # The database holds the turn and the artifact tagged with it.
    assert server.query("SELECT turn_index FROM conversations_thread WHERE id = ?", (thread_id,)) == [(1,)]
    assert server.query("SELECT turn_index FROM conversations_turnslot WHERE thread_id = ?", (thread_id,)) == [(None,)]
    assert server.query("SELECT title, turn_index FROM workspace_artifact WHERE thread_id = ?", (thread_id,)) == [
        ("Q1 vs Q2 Revenue", 1)
    ]
    assert server.query(
        "SELECT user_message FROM workspace_workspacesnapshot WHERE thread_id = ? AND turn_index = 1", (thread_id,)
    ) == [(REQUEST,)]

    # --- Reload: the conversation, its reasoning and the chart are all still there.
    page.reload()
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator(".bubble-text", has_text=REQUEST)).to_be_visible()
    expect(chat.locator("#chat-messages .answer").first).to_have_text(ANSWER)
    reasoning = chat.get_by_role("group", name="Internal reasoning")
    reasoning.locator("summary").click()  # past turns show their reasoning collapsed
    expect(reasoning.get_by_text(REASONING)).to_be_visible()

    centre = page.get_by_role("region", name="Document")
    show = centre.get_by_role("combobox", name="Show")
    option = show.locator("option", has_text="Q1 vs Q2 Revenue")
    expect(option).to_have_count(1)
    show.select_option(option.get_attribute("value"))
    expect_bar_chart(page)
