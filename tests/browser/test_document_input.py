"""How people type while another tab or the agent changes the document
(static/js/document_editor.js, workspace.merge): an input method's
composition is never broken by a push, a title's trailing space, the
selection to ask about and its direction survive a push, a NUL pasted from
a PDF is dropped instead of blocking every save, and typing on at the end
of a document without a final line break while the agent appends asks
nothing (docs/adr/0116)."""

import re
import threading
import time

import pytest
from playwright.sync_api import expect

from tests.support.fake_model import Reply, tool_call

from .helpers import (
    AUTOSAVE_WAIT_MS,
    TURN_WAIT_MS,
    document_status,
    document_text,
    model_env,
    new_thread_for,
    save_document_now,
    thread_id_from,
    type_after,
    wait_for_socket,
)

pytestmark = pytest.mark.browser
REPORT = "# Report\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"
SAVED = re.compile("^Saved")


def _stored(server, url):
    return server.query(
        "SELECT title, content FROM workspace_document WHERE thread_id = ?", (thread_id_from(url).replace("-", ""),)
    )[0]


def _wait_for(predicate, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.fixture
def tabs(owner_workspace, second_tab):
    first, url = owner_workspace
    save_document_now(first, REPORT)
    expect(document_text(second_tab)).to_have_value(REPORT)
    return first, second_tab, url


@pytest.mark.parametrize("longer_than_the_autosave", [False, True])
def test_a_push_during_an_input_method_s_composition_waits_for_it_and_keeps_only_what_it_commits(
    tabs, haico_server, longer_than_the_autosave
):
    """Typing Chinese with a pinyin input method: "nihao" is being composed
    when another tab's edit of another paragraph arrives; the person then
    commits "你好". The pinyin once stayed in the text beside it."""
    first, second, url = tabs
    type_after(first, "Intro paragraph.", " ")
    expect(document_status(first)).to_have_text(SAVED, timeout=AUTOSAVE_WAIT_MS)
    cdp = first.context.new_cdp_session(first)
    cdp.send("Input.imeSetComposition", {"text": "ni", "selectionStart": 2, "selectionEnd": 2})
    cdp.send("Input.imeSetComposition", {"text": "nihao", "selectionStart": 5, "selectionEnd": 5})
    if longer_than_the_autosave:
        first.wait_for_timeout(2500)  # past the autosave delay: the half-composed letters are not saved
        assert "nihao" not in _stored(haico_server, url)[1]
    theirs = REPORT.replace("Intro paragraph.", "Intro paragraph. ").replace("Methods paragraph.", "Methods from B.")
    save_document_now(second, theirs)
    first.wait_for_timeout(1500)  # the push has arrived, and waits
    cdp.send("Input.insertText", {"text": "你好"})  # the input method commits

    wanted = REPORT.replace("Intro paragraph.", "Intro paragraph. 你好").replace("Methods paragraph.", "Methods from B.")
    expect(document_text(first)).to_have_value(wanted, timeout=AUTOSAVE_WAIT_MS)
    expect(document_status(first)).to_have_text(SAVED, timeout=AUTOSAVE_WAIT_MS)
    assert _wait_for(lambda: _stored(haico_server, url)[1] == wanted), _stored(haico_server, url)
    expect(document_text(second)).to_have_value(wanted)


def test_a_space_typed_at_the_end_of_the_title_survives_a_push_to_the_body(tabs, haico_server):
    """The person types " Draft two" at the end of the title; after " Draft "
    another tab saves an edit of the body, which the first tab merges."""
    first, second, url = tabs
    title = first.get_by_role("region", name="Document").get_by_role("textbox", name="Document title")
    title.click()
    title.press("End")
    first.keyboard.type(" Draft ", delay=20)
    save_document_now(second, REPORT.replace("Methods paragraph.", "Methods from B."))
    expect(document_status(first)).to_have_text("Saved, merged with the latest changes", timeout=AUTOSAVE_WAIT_MS)
    first.keyboard.type("two", delay=20)
    expect(document_status(first)).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)

    assert title.input_value() == "Untitled Draft two"
    assert _wait_for(lambda: _stored(haico_server, url)[0] == "Untitled Draft two"), _stored(haico_server, url)


def test_the_selection_to_ask_about_survives_a_push_while_the_person_writes_the_message(tabs):
    """The person selects "Methods paragraph." in the document, clicks into
    the chat's Message box and writes a question; meanwhile another tab edits
    the intro. The selection (and the Ask about selection button) must stay."""
    first, second, url = tabs
    editor = document_text(first)
    editor.click()
    editor.evaluate("el => { const at = el.value.indexOf('Methods paragraph.'); el.setSelectionRange(at, at + 18); }")
    first.keyboard.press("Shift+ArrowRight")
    first.keyboard.press("Shift+ArrowLeft")  # a real selection made with keys
    chat = first.get_by_role("region", name="Chat")
    ask = chat.locator("[data-chat-ask-selection]")
    expect(ask).to_be_visible()
    chat.get_by_role("textbox", name="Message").click()
    first.keyboard.type("Is this clear", delay=10)

    save_document_now(second, REPORT.replace("Intro paragraph.", "Intro paragraph, edited in B."))
    expect(editor).to_have_value(REPORT.replace("Intro paragraph.", "Intro paragraph, edited in B."), timeout=AUTOSAVE_WAIT_MS)

    selected = editor.evaluate("el => el.value.slice(el.selectionStart, el.selectionEnd)")
    assert selected == "Methods paragraph."
    expect(ask).to_be_visible()


def test_a_selection_being_extended_backwards_with_shift_keeps_its_direction_across_a_push(tabs):
    """Shift+Left three times from the end of "Intro paragraph." selects
    "ph." backwards; another tab's edit of the methods comes in; one more
    Shift+Left must extend the selection to "aph.", not shrink it to "ph"."""
    first, second, url = tabs
    type_after(first, "Intro paragraph.", "")
    for _ in range(3):
        first.keyboard.press("Shift+ArrowLeft")
    editor = document_text(first)
    save_document_now(second, REPORT.replace("Methods paragraph.", "Methods from B."))
    expect(editor).to_have_value(REPORT.replace("Methods paragraph.", "Methods from B."), timeout=AUTOSAVE_WAIT_MS)
    first.keyboard.press("Shift+ArrowLeft")
    assert editor.evaluate("el => el.value.slice(el.selectionStart, el.selectionEnd)") == "aph."


def test_typing_at_the_end_of_a_document_without_a_final_newline_while_the_agent_appends_asks_nothing(
    new_page, start_haico_server, model_server
):
    """docs/adr/0116: the person typing at the end during an agent turn keeps
    typing and the agent's section lands after their paragraph, with no
    question. A document typed in the editor usually does not end with a
    newline (nobody presses Enter after the last sentence)."""
    go = threading.Event()

    def append_once_the_person_typed(body):
        go.wait(30)
        return Reply(tool_calls=[tool_call("append_to_document", "Appending.", text="## Agent appendix\n\nBy the agent.")])

    model_server.script([append_once_the_person_typed, Reply(text="Appended.")])
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "grace")
    wait_for_socket(page)
    base = REPORT.rstrip("\n")
    save_document_now(page, base)
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("Append an appendix")
    chat.get_by_role("button", name="Send").click()
    editor = document_text(page)
    editor.click()
    editor.evaluate("el => el.setSelectionRange(el.value.length, el.value.length)")
    page.keyboard.type(" They hold", delay=60)
    go.set()
    page.keyboard.type(" up well.", delay=60)

    expect(page.locator("#chat-messages .answer").first).to_have_text("Appended.", timeout=TURN_WAIT_MS)
    page.wait_for_timeout(3000)
    expect(page.get_by_role("region", name="Document conflict")).to_be_hidden()
    expect(document_status(page)).to_have_text(SAVED, timeout=AUTOSAVE_WAIT_MS)
    content = _stored(server, url)[1]
    assert "Results paragraph. They hold up well." in content and "By the agent." in content, content
    assert content.index("They hold up well.") < content.index("## Agent appendix")
    assert editor.input_value() == content


def test_an_invisible_nul_pasted_from_a_pdf_does_not_stop_saving_and_other_edits_coming_in(tabs, haico_server):
    """Text copied out of some PDFs and terminals carries a NUL character,
    which the textarea keeps but does not show. The server refuses it, so no
    save goes through and no other tab's edit comes in until the person
    finds a character they cannot see."""
    first, second, url = tabs
    type_after(first, "Intro paragraph.", "")
    cdp = first.context.new_cdp_session(first)
    cdp.send("Input.insertText", {"text": " from a pdf\x00 copy"})
    save_document_now(second, REPORT.replace("Methods paragraph.", "Methods from B."))
    first.wait_for_timeout(4000)
    assert "Methods from B." in document_text(first).input_value(), document_status(first).inner_text()
    content = _stored(haico_server, url)[1]
    assert "from a pdf" in content and "copy" in content, content


def test_a_selection_after_astral_characters_reaches_the_model_at_python_offsets(new_page, start_haico_server, model_server):
    from tests.support.unicode_text import PARAS, big_document

    model_server.script([Reply(text="Noted.")])
    server = start_haico_server(model_env(model_server))
    page = new_page()
    new_thread_for(page, server.url, "zoe")
    wait_for_socket(page)
    text = big_document(60_000)
    save_document_now(page, text)
    passage = "40. " + PARAS[40 % len(PARAS)]
    assert text.count(passage) == 1
    start = text.index(passage)  # in code points; the page counts UTF-16 units
    document_text(page).evaluate(
        "(el, passage) => { const at = el.value.indexOf(passage); el.focus(); el.setSelectionRange(at, at + passage.length); }",
        passage,
    )
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("button", name="Ask about selection").click()
    chat.get_by_role("textbox", name="Message").fill("Shorten this")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".answer").first).to_have_text("Noted.", timeout=TURN_WAIT_MS)
    assert f'<selection start="{start}" end="{start + len(passage)}">{passage}</selection>' in model_server.system_prompt(0)
