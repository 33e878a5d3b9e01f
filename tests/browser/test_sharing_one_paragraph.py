"""Two people in one paragraph of a shared document, in Chromium against
the real server (docs/adr/0162).

- The owner's caret sits between her own words in a line the editor
  rewords on both sides of it: once the editor's save comes in, the
  owner's next words go where she was typing, not after the editor's.
- The editor selects a sentence the owner is typing inside and types over
  it: the owner is shown the overlap, never her words spliced into the
  middle of the editor's new sentence; Keep both keeps both.
"""

import re

from playwright.sync_api import expect

from .helpers import (
    AUTOSAVE_WAIT_MS,
    delay_document_saves,
    document_status,
    document_text,
    save_document_now,
    stored_document,
    thread_id_from,
    type_after,
)
from .test_sharing import _bea_editing

REPORT = (
    "# Report\n\nIntro paragraph.\n\n"
    "Paragraph 30.1 of the report says what was found in part 30. It goes on for a while.\n\n"
    "Results paragraph.\n"
)


def test_the_owners_next_words_stay_where_she_types_when_the_editor_rewords_both_sides_of_her_caret(
    owner_workspace, haico_server, new_page
):
    owner, url = owner_workspace
    editor = _bea_editing(owner, haico_server, new_page, url, REPORT)

    # Ada types in the middle of the paragraph; her words are saved and reach Bea.
    type_after(owner, "says what", " Ada's words")
    expect(document_status(owner)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    mine = REPORT.replace("says what", "says what Ada's words")
    expect(document_text(editor)).to_have_value(mine, timeout=AUTOSAVE_WAIT_MS)

    # Bea rewords the same line on both sides of Ada's caret, in one save.
    reworded = mine.replace("says what", "shows what").replace("was found in", "turned up in")
    save_document_now(editor, reworded)
    expect(document_text(owner)).to_have_value(reworded, timeout=AUTOSAVE_WAIT_MS)

    # Ada goes on typing without moving her caret: her words follow her own.
    owner.keyboard.type(" and more of Ada's", delay=5)
    both = reworded.replace("Ada's words", "Ada's words and more of Ada's")
    expect(document_text(owner)).to_have_value(both)
    expect(document_status(owner)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    expect(document_text(editor)).to_have_value(both, timeout=AUTOSAVE_WAIT_MS)
    assert stored_document(haico_server, thread_id_from(url)) == both


def _select(page, passage: str) -> None:
    editor = document_text(page)
    editor.click()
    editor.evaluate(
        "(el, passage) => { const at = el.value.indexOf(passage); el.setSelectionRange(at, at + passage.length); }", passage
    )


def test_words_typed_inside_a_sentence_the_editor_types_over_are_shown_as_an_overlap_and_both_kept(
    owner_workspace, haico_server, new_page
):
    owner, url = owner_workspace
    editor = _bea_editing(owner, haico_server, new_page, url, REPORT)

    # Ada types inside the sentence; her save is slow on its way.
    delay_document_saves(owner, 3_000)
    type_after(owner, "says what", " Ada's words")
    # Meanwhile Bea selects that sentence and types over it; hers is saved first.
    _select(editor, "says what was found in part 30.")
    editor.keyboard.type("is summed up by Bea.", delay=5)
    expect(document_status(editor)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    beas = REPORT.replace("says what was found in part 30.", "is summed up by Bea.")

    # Ada's words are not put inside Bea's sentence: Ada is shown the overlap.
    conflict = owner.get_by_role("region", name="Document conflict")
    expect(conflict).to_be_visible(timeout=AUTOSAVE_WAIT_MS)
    expect(document_text(owner)).to_have_value(REPORT.replace("says what", "says what Ada's words"))
    assert stored_document(haico_server, thread_id_from(url)) == beas

    conflict.get_by_role("button", name="Keep both").click()
    expect(conflict).to_be_hidden(timeout=AUTOSAVE_WAIT_MS)  # her saves are still slow
    expect(document_status(owner)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    kept = stored_document(haico_server, thread_id_from(url))
    assert "says what Ada's words was found in part 30" in kept and "is summed up by Bea" in kept
    expect(document_text(editor)).to_have_value(kept, timeout=AUTOSAVE_WAIT_MS)
    expect(document_text(owner)).to_have_value(kept)
