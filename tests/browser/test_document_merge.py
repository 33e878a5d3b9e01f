"""Nothing typed in the document is lost to a concurrent edit (docs/adr/0013),
in Chromium against the real server.

- Unsaved text in one tab is merged at once with a save from another tab
  (or the agent): both edits stay, the editor shows the merged text; so
  do two paragraphs added at the same place (docs/adr/0116).
- Overlapping edits open one conflict view with both versions and the
  overlapping parts marked; "Keep both" writes both variants.
- Keys typed while a merged save is on its way are saved too.
- Leaving the page with unsaved or conflicting text asks first.
- A paragraph typed during an agent turn survives the agent's
  update_document; an agent edit of the same passage is refused and redone
  on the current text.
"""

import re
import threading
import time

import pytest
from playwright.sync_api import Page, expect

from tests.support.fake_model import Reply, tool_call

from .helpers import (
    AUTOSAVE_WAIT_MS,
    TURN_WAIT_MS,
    delay_document_saves,
    document_status,
    document_text,
    long_document,
    model_env,
    new_thread_for,
    save_document_now,
    save_through_service,
    thread_id_from,
    type_after,
    wait_for_socket,
)

REPORT = "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"
MERGED = "Saved, merged with the latest changes"


@pytest.fixture
def two_tabs(owner_workspace, second_tab) -> tuple[Page, Page, str]:
    """Two tabs of one person's thread, the report saved in the first and shown
    in both: (first, second, the thread's id)."""
    first, url = owner_workspace
    save_document_now(first, REPORT)
    expect(document_text(second_tab)).to_have_value(REPORT)
    return first, second_tab, thread_id_from(url).replace("-", "")


def _stored(server, thread_id):
    return server.query("SELECT d.content, d.version FROM workspace_document d WHERE d.thread_id = ?", (thread_id,))[0]


def _revision_authors(server, thread_id):
    return [
        author
        for (author,) in server.query(
            "SELECT r.author FROM workspace_documentrevision r JOIN workspace_document d ON r.document_id = d.id"
            " WHERE d.thread_id = ? ORDER BY r.version",
            (thread_id,),
        )
    ]


def test_unsaved_text_is_merged_at_once_when_another_tab_saves_another_paragraph(two_tabs, haico_server):
    first, second, thread_id = two_tabs

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


def test_a_paragraph_typed_at_the_end_while_another_tab_adds_a_section_there_keeps_both(two_tabs, haico_server):
    first, second, thread_id = two_tabs

    type_after(first, "Results paragraph.\n", "\nMy own aims.")
    # Before the first tab's autosave: the second tab (or the agent) adds a section at the end.
    save_document_now(second, REPORT + "\n## Method\n\nWe sampled ten sites.\n")

    # Nothing of the report was changed twice: both additions stay, with no question.
    merged = REPORT + "\nMy own aims.\n\n## Method\n\nWe sampled ten sites.\n"
    expect(document_text(first)).to_have_value(merged, timeout=AUTOSAVE_WAIT_MS)
    expect(document_status(first)).to_have_text(MERGED)
    expect(first.get_by_role("region", name="Document conflict")).to_be_hidden()
    expect(document_text(second)).to_have_value(merged)
    caret = document_text(first).evaluate("el => [el.selectionStart, document.activeElement === el]")
    assert caret == [merged.index("My own aims.") + len("My own aims."), True]
    assert _stored(haico_server, thread_id) == (merged, 3)


def test_overlapping_edits_show_one_conflict_view_and_keep_both_writes_both_variants(two_tabs, haico_server):
    first, second, thread_id = two_tabs
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


def test_keep_mine_and_keep_theirs_settle_the_overlap_each_way(two_tabs, haico_server):
    first, second, thread_id = two_tabs
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


def test_keys_typed_while_a_merged_save_is_on_its_way_are_saved_too(two_tabs, haico_server):
    first, second, thread_id = two_tabs
    delay_document_saves(first, 800)

    type_after(first, "Intro paragraph.", " One.")
    save_document_now(second, REPORT.replace("Results paragraph.", "Results from the second tab."))
    # The first tab is saving (merging) now; type on while it is on its way.
    expect(document_status(first)).to_have_text("Saving…")
    first.keyboard.type(" Two.", delay=5)

    merged = REPORT.replace("Intro paragraph.", "Intro paragraph. One. Two.").replace(
        "Results paragraph.", "Results from the second tab."
    )
    # The answer's merged text goes in under " Two." at once (docs/adr/0040);
    # " Two." is then saved on top of the merged version, a plain save.
    expect(document_text(first)).to_have_value(merged, timeout=AUTOSAVE_WAIT_MS)
    expect(document_status(first)).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
    expect(document_text(second)).to_have_value(merged, timeout=AUTOSAVE_WAIT_MS)
    expect(first.get_by_role("region", name="Document conflict")).to_be_hidden()
    _wait_for(lambda: _stored(haico_server, thread_id) == (merged, 4))


def test_leaving_with_unsaved_text_asks_first(owner_workspace):
    page, _url = owner_workspace
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


def _start(new_page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "grace")
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
    rewrite = tool_call(
        "update_document", "Rewriting the results.", content=REPORT.replace("Results paragraph.", "Results by the agent.")
    )
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
    overlap = tool_call(
        "update_document", "Rewriting the results.", content=REPORT.replace("Results paragraph.", "Results by the agent.")
    )
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


# --- a save's base moves on with the tab's own acknowledged saves (docs/adr/0040) ----------

# Counts every time the conflict view is shown, however briefly.
WATCH_CONFLICTS = """() => {
    window.__conflictsShown = 0;
    const view = document.getElementById("doc-conflict");
    new MutationObserver(() => { if (!view.hidden) window.__conflictsShown += 1; })
        .observe(view, { attributes: true, attributeFilter: ["hidden"], childList: true, subtree: true });
}"""


def test_typing_on_while_a_save_is_merged_never_conflicts_with_the_tabs_own_text(two_tabs, haico_server):
    first, second, thread_id = two_tabs
    second.evaluate(WATCH_CONFLICTS)
    delay_document_saves(second, 3000)

    type_after(second, "Intro paragraph.", " Wor")
    expect(document_status(second)).to_have_text("Saving…", timeout=AUTOSAVE_WAIT_MS)  # held in the browser
    # The first tab saves another paragraph before the second tab's save gets there...
    save_document_now(first, REPORT.replace("Results paragraph.", "Results from the first tab."))
    # ...and the second tab finishes the word while its save is on its way.
    second.keyboard.type("dy", delay=5)

    final = REPORT.replace("Intro paragraph.", "Intro paragraph. Wordy").replace(
        "Results paragraph.", "Results from the first tab."
    )
    expect(document_text(second)).to_have_value(final, timeout=AUTOSAVE_WAIT_MS)
    expect(document_status(second)).to_have_text("Saved", timeout=3 * AUTOSAVE_WAIT_MS)
    expect(document_text(first)).to_have_value(final, timeout=AUTOSAVE_WAIT_MS)
    assert second.evaluate("() => window.__conflictsShown") == 0
    expect(second.get_by_role("region", name="Document conflict")).to_be_hidden()
    # The caret stayed after what was typed.
    caret = document_text(second).evaluate("el => el.selectionStart")
    assert caret == final.index(" Wordy") + len(" Wordy")
    assert _stored(haico_server, thread_id) == (final, 4)


REBASE_SENT = "One.\n\nTwo.\n\nThree.\n"
REBASE_CASES = """() => {
    const rebase = window.HAICO.rebaseDocument;
    const out = {};
    const sent = "One.\\n\\nTwo.\\n\\nThree.\\n";
    // Typed in the first paragraph; another tab changed the third.
    let r = rebase(sent, sent.replace("One.", "One more."), sent.replace("Three.", "Three, theirs."));
    out.disjoint = [r.text, r.map("One more".length)];
    // Changes before and after the typing, far apart (one envelope around it).
    r = rebase(sent, sent.replace("Two.", "Two too."), "Zero.\\n\\n" + sent.replace("Three.", "Three, theirs."));
    out.around = [r.text, r.map("One.\\n\\nTwo too".length)];
    // The same words changed on both sides: left to the server.
    out.overlap = rebase(sent, sent.replace("Two.", "Two mine."), sent.replace("Two.", "Two theirs."));
    // Nothing typed meanwhile: the merged text as it is.
    out.nothing = rebase(sent, sent, sent.replace("Three.", "3.")).text;
    // A paragraph being typed at the end, where new lines were added: the typing goes on before them.
    const half = sent + "\\nMy clos";
    r = rebase(half, half + "ing words", half + "\\n\\n## Appendix\\n");
    out.endOfLine = [r.text, r.map((half + "ing words").length)];
    // Words put in at the very place inside a line: left to the server.
    out.sameWord = rebase(sent, sent.replace("Two.", "Two mine."), sent.replace("Two.", "Two theirs."));
    return out;
}"""


def test_keys_typed_meanwhile_are_put_on_the_merged_text_where_they_land(owner_workspace):
    page, _url = owner_workspace
    page.wait_for_function("() => window.HAICO && window.HAICO.rebaseDocument")
    out = page.evaluate(REBASE_CASES)
    assert out["disjoint"] == ["One more.\n\nTwo.\n\nThree, theirs.\n", len("One more")]
    assert out["around"] == ["Zero.\n\nOne.\n\nTwo too.\n\nThree, theirs.\n", len("Zero.\n\nOne.\n\nTwo too")]
    assert out["overlap"] is None
    assert out["nothing"] == "One.\n\nTwo.\n\n3.\n"
    assert out["endOfLine"] == [REBASE_SENT + "\nMy closing words\n\n## Appendix\n", len(REBASE_SENT + "\nMy closing words")]
    assert out["sameWord"] is None


def _slowly(seconds, reply):
    def step(body):
        time.sleep(seconds)
        return reply

    return step


@pytest.mark.parametrize("typing_delay_ms", [40, 110])
def test_the_person_typing_while_the_agent_makes_several_targeted_edits_sees_no_conflict(
    new_page, start_haico_server, model_server, typing_delay_ms
):
    edits = [
        tool_call("replace_in_document", "Editing the methods.", old_text="Methods paragraph.", new_text="Methods, edit one."),
        tool_call("replace_in_document", "Editing the results.", old_text="Results paragraph.", new_text="Results, edit two."),
        tool_call(
            "replace_in_document", "Editing the methods again.", old_text="Methods, edit one.", new_text="Methods, edit three."
        ),
        tool_call("insert_in_document", "Adding to the results.", after_text="Results, edit two.", text=" Edit four."),
    ]
    model_server.script([_slowly(0.6, Reply(tool_calls=[edit])) for edit in edits] + [Reply(text="Four edits made.")])
    server, page, thread_id = _start(new_page, start_haico_server, model_server)
    page.evaluate(WATCH_CONFLICTS)

    _ask(page, "Edit the methods and the results")
    typed = " I keep typing here while the agent edits the other paragraphs, four times in a row."
    type_after(page, "Intro paragraph.", "")
    page.keyboard.type(typed, delay=typing_delay_ms)

    expect(page.locator("#chat-messages .answer").first).to_have_text("Four edits made.", timeout=TURN_WAIT_MS)
    final = (
        REPORT.replace("Intro paragraph.", "Intro paragraph." + typed)
        .replace("Methods paragraph.", "Methods, edit three.")
        .replace("Results paragraph.", "Results, edit two. Edit four.")
    )
    expect(document_text(page)).to_have_value(final, timeout=AUTOSAVE_WAIT_MS)
    expect(document_status(page)).to_have_text(re.compile(r"^Saved"), timeout=AUTOSAVE_WAIT_MS)
    assert page.evaluate("() => window.__conflictsShown") == 0
    _wait_for(lambda: _stored(server, thread_id)[0] == final)
    # Every agent edit went through (none refused as an overlap).
    failures = [m for call in range(1, 5) for m in _tool_results(model_server, call) if '"success": false' in m]
    assert failures == []
    assert _revision_authors(server, thread_id).count("agent") == 4


def test_a_paragraph_typed_at_the_end_while_the_agent_appends_a_section_keeps_both_without_a_question(
    new_page, start_haico_server, model_server
):
    """The agent's section lands while the person is half-way through a
    closing paragraph at the end, typed at a person's speed: the page saves
    the half-typed line at once, and the rest of it goes on that line, before
    the agent's section, with no conflict to settle (docs/adr/0116)."""
    appendix = "\n## Agent appendix\n\nAppended by the agent at the end.\n"
    go = threading.Event()

    def append_once_the_person_typed(body):
        go.wait(30)
        return Reply(tool_calls=[tool_call("append_to_document", "Appending the appendix.", text=appendix)])

    model_server.script([append_once_the_person_typed, Reply(text="Appended.")])
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "grace")
    thread_id = thread_id_from(url).replace("-", "")
    save_through_service(server, thread_id_from(url), long_document(2_000), author="person")
    page.reload()
    wait_for_socket(page)
    _ask(page, "Append an appendix")
    editor = document_text(page)
    editor.click()
    editor.evaluate("el => el.setSelectionRange(el.value.length, el.value.length)")
    closing = "\nMy closing paragraph says the results hold up well.\n"
    page.keyboard.type(closing[:20], delay=60)
    go.set()
    page.keyboard.type(closing[20:], delay=60)

    expect(page.locator("#chat-messages .answer").first).to_have_text("Appended.", timeout=TURN_WAIT_MS)
    expect(document_status(page)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    expect(page.get_by_role("region", name="Document conflict")).to_be_hidden()
    content, _version = _stored(server, thread_id)
    assert content.count("My closing paragraph says the results hold up well.") == 1
    assert content.index("My closing paragraph") < content.index("## Agent appendix")
    assert content.count("Appended by the agent at the end.") == 1
    assert document_text(page).input_value() == content


# --- characters made of several UTF-16 units (docs/adr/0128) -------------------------

GRAPHEME_REBASE_CASES = """() => {
    const rebase = window.HAICO.rebaseDocument;
    const text = (r) => r && r.text;
    const sent = "Team: 🇫🇷 wins.\\n\\nMood: 🔍 ok.\\n\\nFamily: 👩\\u200d👩\\u200d👧, cafe, 👍.\\n";
    return {
        flag: text(rebase(sent, sent.replace("🇫🇷", "🇫🇮"), sent.replace("🇫🇷", "🇬🇷"))),
        astral: text(rebase(sent, sent.replace("🔍", "🔎"), sent.replace("🔍", "🤍"))),
        family: text(rebase(sent, sent.replace("👧", "👦"), sent.replace("👩\\u200d👩", "👨\\u200d👩"))),
        accent: text(rebase(sent, sent.replace("cafe", "cafe\\u0301"), sent.replace("cafe", "tea"))),
        skinTone: text(rebase(sent, sent.replace("👍", "👍🏽"), sent.replace("👍", "👎"))),
        beside: text(rebase(sent, sent.replace("wins", "won"), sent.replace("🇫🇷", "🇬🇷"))),
        accentBeside: text(rebase(sent, sent.replace("cafe", "cafe\\u0301"), sent.replace("ok", "fine"))),
    };
}"""


def _grapheme_rebase_cases(page, *, segmenter: bool) -> dict:
    page.wait_for_function("() => window.HAICO && window.HAICO.rebaseDocument")
    if not segmenter:
        # A browser without Intl.Segmenter: the code-point rules instead.
        page.evaluate("() => { window.keptSegmenter = Intl.Segmenter; delete Intl.Segmenter; }")
    try:
        return page.evaluate(GRAPHEME_REBASE_CASES)
    finally:
        if not segmenter:
            page.evaluate("() => { Intl.Segmenter = window.keptSegmenter; }")


@pytest.mark.parametrize("segmenter", [True, False], ids=["intl-segmenter", "code-point-rules"])
def test_typing_meanwhile_on_an_emoji_the_others_changed_goes_to_the_server_never_spliced_into_a_third(
    owner_workspace, segmenter
):
    page, _url = owner_workspace
    out = _grapheme_rebase_cases(page, segmenter=segmenter)
    # Both changed one character: left to the server, which reports the overlap.
    assert {name: out[name] for name in ("flag", "astral", "family", "accent", "skinTone")} == dict.fromkeys(
        ("flag", "astral", "family", "accent", "skinTone")
    )
    # Changes beside a character the others changed still go on the merged text.
    assert out["beside"] == "Team: 🇬🇷 won.\n\nMood: 🔍 ok.\n\nFamily: 👩\u200d👩\u200d👧, cafe, 👍.\n"
    assert out["accentBeside"] == "Team: 🇫🇷 wins.\n\nMood: 🔍 fine.\n\nFamily: 👩\u200d👩\u200d👧, cafe\u0301, 👍.\n"


def test_two_tabs_changing_one_flag_end_with_one_of_theirs_or_a_conflict_never_a_third_flag(two_tabs, haico_server):
    first, second, thread_id = two_tabs
    report = "Team: 🇫🇷 wins.\n\nIntro paragraph.\n"
    save_document_now(first, report)
    expect(document_text(second)).to_have_value(report)
    delay_document_saves(second, 3000)
    type_after(second, "Intro paragraph.", " More")
    expect(document_status(second)).to_have_text("Saving…", timeout=AUTOSAVE_WAIT_MS)
    save_document_now(first, report.replace("🇫🇷", "🇬🇷"))
    # B replaces the flag while its save is on its way.
    document_text(second).evaluate(
        "el => { const at = el.value.indexOf('🇫🇷'); el.focus(); el.setSelectionRange(at, at + '🇫🇷'.length); }"
    )
    second.keyboard.insert_text("🇫🇮")
    conflict = second.locator("#doc-conflict")
    expect(conflict).to_be_visible(timeout=4 * AUTOSAVE_WAIT_MS)
    stored = _stored(haico_server, thread_id)[0]
    shown = document_text(second).evaluate("el => el.value")
    assert "🇬🇮" not in stored and "🇬🇮" not in shown, (stored, shown)
    assert stored == "Team: 🇬🇷 wins.\n\nIntro paragraph. More\n"  # A's flag, B's words
    assert shown == "Team: 🇫🇮 wins.\n\nIntro paragraph. More\n"  # B's own text stays in B's editor
