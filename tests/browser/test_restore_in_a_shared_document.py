"""A restore in a shared document, in Chromium against the real server
(docs/adr/0164). Bea's saved words leave the text when Ada restores the
version before them: Ada is told whose saves her restore undid, Bea's page
says whose restore it was and where her words are kept, and the words Bea
had typed but not yet saved stay, saved on the restored text. A page
showing an artifact when the restore comes says it once the document is
shown again, and one whose connection was down says it once it is back."""

import re
import types

import pytest
from playwright.sync_api import expect

from tests.support.network import Wire

from .conftest import OWNER
from .helpers import (
    AUTOSAVE_WAIT_MS,
    delay_document_saves,
    document_status,
    document_text,
    stored_document,
    thread_id_from,
    type_after,
)
from .test_network_drops import network_back, network_down
from .test_sharing import _bea_editing

SEED_TABLE = """
from workspace.models import Thread
from workspace.services.artifacts import artifact_create
artifact_create(thread=Thread.objects.get(pk="{thread_id}"), artifact_type="data_table", title="Budget",
                payload={{"columns": ["Day", "Cost"], "rows": [["Monday", 120]]}}, turn_index=0)
"""
REPORT = "# Report\n\nIntro paragraph.\n\nResults paragraph.\n"
HELD_MS = 8_000


def test_an_editors_saved_words_undone_by_the_owners_restore_are_told_to_both_and_her_unsaved_words_stay(
    owner_workspace, haico_server, new_page
):
    owner, url = owner_workspace
    editor = _bea_editing(owner, haico_server, new_page, url, REPORT)  # version 1, Ada's

    type_after(editor, "Intro paragraph.", " Bea's saved words.")
    expect(document_status(editor)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    with_beas = REPORT.replace("Intro paragraph.", "Intro paragraph. Bea's saved words.")
    expect(document_text(owner)).to_have_value(with_beas, timeout=AUTOSAVE_WAIT_MS)  # version 2, Bea's

    # Bea goes on typing; her next save is still on its way when Ada restores
    # (held long enough for a busy machine to open the history and restore).
    delay_document_saves(editor, HELD_MS)
    type_after(editor, "Results paragraph.", " Bea's unsaved words.")

    document = owner.get_by_role("region", name="Document")
    document.get_by_role("button", name="History", exact=True).click()
    history = owner.get_by_role("region", name="Document history")
    history.get_by_role("button", name="Restore version 1").click()
    expect(history).to_contain_text(
        "Version 1 restored as version 3. It undid what bea (version 2) saved after version 1; the history keeps every version."
    )

    notice = editor.get_by_role("region", name="Document").locator("[data-doc-restored]")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(
        f"{OWNER} restored version 1 of the document as version 3, which undid the changes saved after version 1. "
        "The history keeps every version."
    )
    expect(owner.locator("[data-doc-restored]")).to_be_hidden()  # Ada did it, and was told in her history

    # Bea's words not yet saved when the restore came are saved on the restored text.
    final = REPORT.replace("Results paragraph.", "Results paragraph. Bea's unsaved words.")
    expect(document_text(editor)).to_have_value(final, timeout=AUTOSAVE_WAIT_MS + HELD_MS)
    expect(document_status(editor)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS + HELD_MS)
    expect(document_text(owner)).to_have_value(final, timeout=AUTOSAVE_WAIT_MS)
    assert stored_document(haico_server, thread_id_from(url)) == final

    # Where her undone words are: the history, which names the restore.
    notice.get_by_role("button", name="Show the history").click()
    expect(notice).to_be_hidden()
    versions = editor.get_by_role("region", name="Document history").get_by_role("list", name="Versions, newest first")
    expect(versions.get_by_role("listitem").filter(has_text="Version 3")).to_contain_text(f"{OWNER}, restored version 1")
    expect(versions.get_by_role("listitem").filter(has_text="Version 2")).to_contain_text("bea")


def _restore_version_1(owner) -> None:
    document = owner.get_by_role("region", name="Document")
    document.get_by_role("button", name="History", exact=True).click()
    history = owner.get_by_role("region", name="Document history")
    history.get_by_role("button", name="Restore version 1").click()
    expect(history).to_contain_text("Version 1 restored as version 3. It undid what bea (version 2) saved after version 1")


def test_an_editor_looking_at_an_artifact_when_her_words_are_undone_is_told_when_she_goes_back_to_the_document(
    owner_workspace, haico_server, new_page
):
    owner, url = owner_workspace
    haico_server.manage("shell", "-c", SEED_TABLE.format(thread_id=thread_id_from(url)))
    editor = _bea_editing(owner, haico_server, new_page, url, REPORT)  # version 1, Ada's
    type_after(editor, "Intro paragraph.", " Bea's saved words.")
    expect(document_status(editor)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    with_beas = REPORT.replace("Intro paragraph.", "Intro paragraph. Bea's saved words.")
    expect(document_text(owner)).to_have_value(with_beas, timeout=AUTOSAVE_WAIT_MS)  # version 2

    centre = editor.get_by_role("region", name="Document")
    centre.get_by_role("combobox", name="Show").select_option(index=1)
    back = centre.get_by_role("button", name="Back to the document")
    expect(back).to_be_visible()
    _restore_version_1(owner)

    # Her page has no editor now; the restore waits for the document.
    expect(editor.locator("[data-doc-restored]")).to_have_count(0)
    back.click()
    expect(document_text(editor)).to_have_value(REPORT)
    notice = centre.locator("[data-doc-restored]")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(
        f"{OWNER} restored version 1 of the document as version 3, which undid the changes saved after version 1."
    )
    notice.get_by_role("button", name="Dismiss").click()
    expect(notice).to_be_hidden()
    # Said once: the artifact and back again does not repeat it.
    centre.get_by_role("combobox", name="Show").select_option(index=1)
    centre.get_by_role("button", name="Back to the document").click()
    expect(document_text(editor)).to_have_value(REPORT)
    expect(centre.locator("[data-doc-restored]")).to_have_count(0)


@pytest.fixture
def wire(haico_server):
    """Bea's way to the server, which the test can cut like a dropped Wi-Fi."""
    relay = Wire(haico_server.port)
    yield relay
    relay.close()


def test_an_editor_whose_connection_was_down_when_her_words_were_undone_is_told_once_it_is_back(
    owner_workspace, haico_server, new_page, wire
):
    owner, url = owner_workspace
    through_the_wire = types.SimpleNamespace(url=wire.url, create_user=haico_server.create_user)
    editor = _bea_editing(owner, through_the_wire, new_page, url.replace(haico_server.url, wire.url), REPORT)
    type_after(editor, "Intro paragraph.", " Bea's saved words.")
    expect(document_status(editor)).to_have_text(re.compile("^Saved"), timeout=AUTOSAVE_WAIT_MS)
    with_beas = REPORT.replace("Intro paragraph.", "Intro paragraph. Bea's saved words.")
    expect(document_text(owner)).to_have_value(with_beas, timeout=AUTOSAVE_WAIT_MS)  # version 2

    network_down(editor, wire)
    _restore_version_1(owner)
    expect(document_text(editor)).to_have_value(with_beas)  # nothing reached her page
    network_back(editor, wire)

    # Her page reads the workspace again once its socket is back: the restore is in it.
    expect(document_text(editor)).to_have_value(REPORT, timeout=30_000)
    notice = editor.get_by_role("region", name="Document").locator("[data-doc-restored]")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(
        f"{OWNER} restored version 1 of the document as version 3, which undid the changes saved after version 1."
    )
