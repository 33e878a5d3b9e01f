"""Nothing typed in the document is lost to a concurrent edit (docs/adr/0013),
in Chromium against the real server.

- Unsaved text in one tab is merged at once with a save from another tab
  (or the agent): both edits stay, the editor shows the merged text.
- Overlapping edits open one conflict view with both versions and the
  overlapping parts marked; "Keep both" writes both variants.
- Keys typed while a merged save is on its way are saved too.
- Leaving the page with unsaved or conflicting text asks first.
- A paragraph typed during an agent turn survives the agent's
  update_document; an agent edit of the same passage is refused and redone
  on the current text.
"""

import time

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import OpenAICompatibleServer

from .helpers import (
    AUTOSAVE_WAIT_MS,
    MODEL,
    TURN_WAIT_MS,
    create_thread,
    delay_document_saves,
    document_status,
    document_text,
    save_document_now,
    sign_up,
    thread_id_from,
    type_after,
    wait_for_socket,
)

REPORT = "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"
MERGED = "Saved, merged with the latest changes"


def _two_tabs(new_page, server) -> tuple[Page, Page, str]:
    """Two tabs of one person's thread, the report saved in the first and shown in both."""
    first = new_page()
    sign_up(first, server.url, "ada")
    url = create_thread(first, server.url)
    second = first.context.new_page()
    second.goto(url)
    wait_for_socket(first)
    wait_for_socket(second)
    save_document_now(first, REPORT)
    expect(document_text(second)).to_have_value(REPORT)
    return first, second, thread_id_from(url).replace("-", "")


def _stored(server, thread_id):
    return server.query(
        "SELECT d.content, d.version FROM workspace_document d WHERE d.thread_id = ?", (thread_id,)
    )[0]


def _revision_authors(server, thread_id):
    return [
        author
        for (author,) in server.query(
            "SELECT r.author FROM workspace_documentrevision r JOIN workspace_document d ON r.document_id = d.id"
            " WHERE d.thread_id = ? ORDER BY r.version",
            (thread_id,),
        )
    ]


def test_unsaved_text_is_merged_at_once_when_another_tab_saves_another_paragraph(new_page, haico_server):
    first, second, thread_id = _two_tabs(new_page, haico_server)

    type_after(first, "Intro paragraph.", " Typed in the first tab.")
    # Before the first tab's autosave: the second tab saves the methods.
    save_document_now(second, REPORT.replace("Methods paragraph.", "Methods from the second tab."))

    merged = REPORT.replace("Intro paragraph.", "Intro paragraph. Typed in the first tab.").replace(
        "Methods paragraph.", "Methods from the second tab."
    )
    expect(document_text(first)).to_have_value(merged, timeout=AUTOSAVE_WAIT_MS)
    expect(document_status(first)).to_have_text(MERGED)
    expect(document_text(second)).to_have_value(merged)
    # No banner and no conflict view: the merge needed nothing from the person.
    for page in (first, second):
        expect(page.get_by_role("region", name="Document conflict")).to_be_hidden()
        expect(page.locator("[data-agent-banner]")).to_be_hidden()
    # The caret is still just after what was typed.
    caret = document_text(first).evaluate("el => [el.selectionStart, document.activeElement === el]")
    assert caret == [merged.index(" Typed in the first tab.") + len(" Typed in the first tab."), True]
    assert _stored(haico_server, thread_id) == (merged, 3)
    assert _revision_authors(haico_server, thread_id) == ["person", "person", "person"]


def test_overlapping_edits_show_one_conflict_view_and_keep_both_writes_both_variants(new_page, haico_server):
    first, second, thread_id = _two_tabs(new_page, haico_server)
    mine = REPORT.replace("Methods paragraph.", "Methods by me.")

    document_text(first).click()  # a real click: the page now counts as used (beforeunload needs it)
    document_text(first).fill(mine)
    save_document_now(second, REPORT.replace("Methods paragraph.", "Methods by the second tab."))

    conflict = first.get_by_role("region", name="Document conflict")
    expect(conflict).to_be_visible(timeout=AUTOSAVE_WAIT_MS)
    expect(document_status(first)).to_have_text("Not saved: overlapping edits")
    # One view, one alert: never stacked banners.
    expect(first.locator("#panel-centre [role=alert]:visible")).to_have_count(1)
    expect(conflict.get_by_role("region", name="Your version").locator("mark")).to_have_text(["me"])
    expect(conflict.get_by_role("region", name="Latest saved version").locator("mark")).to_have_text(["the second tab"])
    expect(conflict.get_by_role("heading", name="Latest saved (version 2)")).to_be_visible()
    # The person's text is still in the editor, and nothing was written.
    expect(document_text(first)).to_have_value(mine)
    assert _stored(haico_server, thread_id)[1] == 2

    # Leaving now asks first; staying keeps everything.
    dialogs = []
    first.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    first.close(run_before_unload=True)
    _wait_for(lambda: dialogs, pump=first.context.cookies)
    assert dialogs == ["beforeunload"] and not first.is_closed()
    expect(document_text(first)).to_have_value(mine)

    conflict.get_by_role("button", name="Keep both").click()
    both = REPORT.replace("Methods paragraph.", "Methods by me the second tab.")
    expect(document_text(first)).to_have_value(both)
    expect(conflict).to_be_hidden()
    expect(document_status(first)).to_have_text(MERGED)
    assert document_text(first).evaluate("el => document.activeElement === el")  # back in the editor
    expect(document_text(second)).to_have_value(both)
    assert _stored(haico_server, thread_id) == (both, 3)

    # Everything is saved: leaving no longer asks.
    first.close(run_before_unload=True)
    _wait_for(first.is_closed, pump=second.context.cookies)
    assert dialogs == ["beforeunload"]


def test_keep_mine_and_keep_theirs_settle_the_overlap_each_way(new_page, haico_server):
    first, second, thread_id = _two_tabs(new_page, haico_server)
    text = REPORT
    # One word each ("mine1", not "mine-1": a shared "-1" -> "-2" would be the
    # same change on both sides, which merges cleanly).
    for round_, choice in ((1, "Keep mine"), (2, "Keep theirs")):
        old = "paragraph" if round_ == 1 else "mine1"
        document_text(first).fill(text.replace(f"Methods {old}.", f"Methods mine{round_}."))
        save_document_now(second, text.replace(f"Methods {old}.", f"Methods theirs{round_}."))
        conflict = first.get_by_role("region", name="Document conflict")
        expect(conflict).to_be_visible(timeout=AUTOSAVE_WAIT_MS)
        conflict.get_by_role("button", name=choice).click()
        expect(conflict).to_be_hidden()
        kept = f"mine{round_}" if choice == "Keep mine" else f"theirs{round_}"
        text = text.replace(f"Methods {old}.", f"Methods {kept}.")
        expect(document_text(first)).to_have_value(text)
        expect(document_text(second)).to_have_value(text)
        assert _stored(haico_server, thread_id)[0] == text


def test_keys_typed_while_a_merged_save_is_on_its_way_are_saved_too(new_page, haico_server):
    first, second, thread_id = _two_tabs(new_page, haico_server)
    delay_document_saves(first, 800)

    type_after(first, "Intro paragraph.", " One.")
    save_document_now(second, REPORT.replace("Results paragraph.", "Results from the second tab."))
    # The first tab is saving (merging) now; type on while it is on its way.
    expect(document_status(first)).to_have_text("Saving…")
    first.keyboard.type(" Two.", delay=5)

    merged = REPORT.replace("Intro paragraph.", "Intro paragraph. One. Two.").replace(
        "Results paragraph.", "Results from the second tab."
    )
    expect(document_status(first)).to_have_text(MERGED, timeout=AUTOSAVE_WAIT_MS)
    expect(document_text(first)).to_have_value(merged)
    expect(document_text(second)).to_have_value(merged, timeout=AUTOSAVE_WAIT_MS)
    _wait_for(lambda: _stored(haico_server, thread_id)[0] == merged)


def test_leaving_with_unsaved_text_asks_first(new_page, haico_server):
    page = new_page()
    sign_up(page, haico_server.url, "ada")
    create_thread(page, haico_server.url)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    editor = document_text(page)
    editor.click()
    page.keyboard.type("Not saved yet", delay=5)
    page.close(run_before_unload=True)  # within the autosave delay
    _wait_for(lambda: dialogs, pump=page.context.cookies)
    assert dialogs == ["beforeunload"] and not page.is_closed()
    expect(editor).to_have_value("Not saved yet")
    expect(document_status(page)).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
    page.close(run_before_unload=True)
    _wait_for(page.is_closed, pump=page.context.cookies)
    assert dialogs == ["beforeunload"]


def _wait_for(condition, timeout: float = 10.0, *, pump=None):
    """Poll `condition`. Playwright's sync API delivers events (a dialog)
    only while a call to it is running, so a test waiting for one passes
    `pump`, a cheap call to the browser (sleep alone would never see it)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the condition")
        time.sleep(0.05)
        if pump:
            pump()


# --- the agent and the person at once -----------------------------------------------------


def _document_version(server, thread_id) -> int:
    rows = server.query("SELECT version FROM workspace_document WHERE thread_id = ?", (thread_id,))
    return rows[0][0] if rows else 0


@pytest.fixture
def model_server():
    with OpenAICompatibleServer(models=[MODEL]) as server:
        yield server


def _start(new_page, start_haico_server, model_server):
    server = start_haico_server({"OPENAI_BASE_URL": model_server.base_url, "OPENAI_API_KEY": "test", "HAICO_MODEL": MODEL})
    page = new_page()
    sign_up(page, server.url, "grace")
    url = create_thread(page, server.url)
    wait_for_socket(page)
    save_document_now(page, REPORT)
    return server, page, thread_id_from(url).replace("-", "")


def _ask(page, text):
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send").click()


def _once_the_person_saved(holder, reply):
    """A model step that "thinks" until the person's next save is in (version 2)."""

    def step(body):
        _wait_for(lambda: _document_version(holder["server"], holder["thread"]) >= 2, timeout=15)
        return reply

    return step


def _tool_results(model_server, call: int) -> list[str]:
    return [m["content"] for m in model_server.requests[call]["messages"] if m.get("role") == "tool"]


def test_a_paragraph_typed_during_an_agent_turn_survives_its_update_document(new_page, start_haico_server, model_server):
    holder = {}
    rewrite = tool_call("update_document", "Rewriting the results.", content=REPORT.replace("Results paragraph.", "Results by the agent."))
    model_server.script([_once_the_person_saved(holder, Reply(tool_calls=[rewrite])), Reply(text="I rewrote the results.")])
    server, page, thread_id = _start(new_page, start_haico_server, model_server)
    holder.update(server=server, thread=thread_id)

    _ask(page, "Rewrite the results")
    type_after(page, "Intro paragraph.", "\n\nA paragraph I typed while the agent worked.")

    expect(page.locator("#chat-messages .answer").first).to_have_text("I rewrote the results.", timeout=TURN_WAIT_MS)
    merged = REPORT.replace("Intro paragraph.", "Intro paragraph.\n\nA paragraph I typed while the agent worked.").replace(
        "Results paragraph.", "Results by the agent."
    )
    expect(document_text(page)).to_have_value(merged)
    assert _stored(server, thread_id) == (merged, 3)
    assert _revision_authors(server, thread_id) == ["person", "person", "agent"]
    # The model wrote from version 1 and was told its text was merged.
    assert 'version="1"' in model_server.system_prompt(0)
    [result] = _tool_results(model_server, 1)
    assert "merged with the person's concurrent edits" in result


def test_an_agent_edit_overlapping_the_persons_is_refused_and_redone_on_the_current_text(
    new_page, start_haico_server, model_server
):
    holder = {}
    mine = REPORT.replace("Results paragraph.", "Results I wrote.")
    redo = mine.replace("Results I wrote.", "Results I wrote. The agent adds a caveat.")
    overlap = tool_call("update_document", "Rewriting the results.", content=REPORT.replace("Results paragraph.", "Results by the agent."))
    model_server.script(
        [
            _once_the_person_saved(holder, Reply(tool_calls=[overlap])),
            Reply(tool_calls=[tool_call("update_document", "Adding a caveat to your results.", content=redo)]),
            Reply(text="I added a caveat to your results."),
        ]
    )
    server, page, thread_id = _start(new_page, start_haico_server, model_server)
    holder.update(server=server, thread=thread_id)

    _ask(page, "Rewrite the results")
    document_text(page).fill(mine)  # autosaved as version 2 while the model thinks

    answer = page.locator("#chat-messages .answer").first
    expect(answer).to_have_text("I added a caveat to your results.", timeout=TURN_WAIT_MS)
    expect(document_text(page)).to_have_value(redo)
    assert _stored(server, thread_id) == (redo, 3)
    # The overlap was refused with the person's text shown, and the redo was
    # written from the version the next call was shown.
    [failure] = _tool_results(model_server, 1)
    assert '"success": false' in failure and "Nothing was written" in failure and "I wrote" in failure
    retry_prompt = model_server.system_prompt(1)
    assert 'version="2"' in retry_prompt and "Results I wrote." in retry_prompt
