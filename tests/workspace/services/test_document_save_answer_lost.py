"""workspace.services.document: a save whose answer never reached the
person's page (docs/adr/0139). The page names its saves still unanswered in
its next one; a named save that was written is merged against as what it
carried, so what the person rewrote or deleted since never comes back, in
whichever order the server got the two."""

import pytest

from workspace.errors import DocumentConflict, InvalidInput
from workspace.models import Document, DocumentPageSave, PageSave
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db

REPORT = "# Soil carbon\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"
FIRST_TRY = REPORT + "\nOwner's paragraph, first try.\n"
REWRITTEN = REPORT + "\nA better paragraph by the owner.\n"
PAGE = "a1b2c3d4e5f60718293a4b5c6d7e8f90"


def _stored(thread):
    document = Document.objects.get(thread=thread)
    return document.content, document.version


def _report(thread, owner):
    document_services.document_save(thread=thread, title="Report", content=REPORT, person=owner)  # version 1


def _owner_saves(thread, owner, content, number, unanswered_from, *, base_version=1, page=PAGE, **fields):
    return document_services.document_save(
        thread=thread,
        title="Report",
        content=content,
        base_version=base_version,
        author="person",
        person=owner,
        page_save=PageSave(page=page, number=number, unanswered_from=unanswered_from),
        **fields,
    )


@pytest.mark.parametrize("now", [REWRITTEN, REPORT], ids=["rewrites-her-paragraph", "deletes-her-paragraph"])
def test_a_save_written_whose_answer_was_lost_is_merged_against_as_what_it_carried(thread, owner, now):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)  # written; its answer never came
    # The owner's page still stands on version 1, and names save 1 as unanswered.
    saved = _owner_saves(thread, owner, now, number=2, unanswered_from=1)
    assert _stored(thread) == (now, 3)
    # Written as sent: nothing of anyone else's came in, so the page is told "Saved".
    assert not saved.merged


def test_before_this_change_a_lost_answer_brought_back_what_she_rewrote(thread, owner):
    """What the save did without the page's save numbers (a page from before
    them): her own paragraph counted as someone else's change, kept beside
    her new one (docs/adr/0116). Pins why the numbers are sent."""
    _report(thread, owner)
    document_services.document_save(thread=thread, title="Report", content=FIRST_TRY, base_version=1, person=owner)
    document_services.document_save(thread=thread, title="Report", content=REWRITTEN, base_version=1, person=owner)
    assert "first try" in _stored(thread)[0]


def test_an_unanswered_save_not_written_yet_is_never_written_after_a_later_one(thread, owner):
    _report(thread, owner)
    # Her next save gets in first (the lost one still waits for the document's lock) ...
    _owner_saves(thread, owner, REPORT, number=2, unanswered_from=1)
    assert _stored(thread) == (REPORT, 2)
    # ... and the one she deleted the paragraph of arrives after it: refused, nothing written.
    with pytest.raises(InvalidInput, match="A later save from this page was written already"):
        _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)
    assert _stored(thread) == (REPORT, 2)


def test_an_unanswered_save_never_written_leaves_the_next_merged_against_its_base(thread, owner):
    _report(thread, owner)
    other_tab = REPORT.replace("Methods paragraph.", "Methods from the other tab.")
    document_services.document_save(thread=thread, content=other_tab, base_version=1)  # version 2
    saved = _owner_saves(thread, owner, REWRITTEN, number=2, unanswered_from=1)
    assert _stored(thread) == (other_tab + "\nA better paragraph by the owner.\n", 3)
    assert saved.merged


def test_what_others_saved_after_the_lost_save_is_kept_and_her_rewrite_wins(thread, owner, other_user):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)  # version 2, answer lost
    theirs = FIRST_TRY.replace("Intro paragraph.", "Intro by the other person.")
    document_services.document_save(thread=thread, content=theirs, base_version=2, person=other_user)  # version 3
    saved = _owner_saves(thread, owner, REWRITTEN, number=2, unanswered_from=1)
    assert _stored(thread) == (REWRITTEN.replace("Intro paragraph.", "Intro by the other person."), 4)
    assert saved.merged


def test_a_lost_save_that_was_itself_merged_is_merged_against_as_she_sent_it(thread, owner, other_user):
    _report(thread, owner)
    theirs = REPORT.replace("Methods paragraph.", "Methods by the other person.")
    document_services.document_save(thread=thread, content=theirs, base_version=1, person=other_user)  # version 2
    # Her save, based on version 1, merged as version 3; its answer lost.
    assert _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1).merged
    assert DocumentPageSave.objects.get(page=PAGE).sent_delta  # what it carried differs from version 3
    _owner_saves(thread, owner, REWRITTEN, number=2, unanswered_from=1)
    assert _stored(thread) == (REWRITTEN.replace("Methods paragraph.", "Methods by the other person."), 4)


def test_several_lost_answers_merge_against_the_last_written_of_them(thread, owner):
    _report(thread, owner)
    second = FIRST_TRY.replace("first try", "second try")
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)  # version 2, answer lost
    _owner_saves(thread, owner, second, number=2, unanswered_from=1)  # version 3, answer lost
    _owner_saves(thread, owner, REPORT, number=3, unanswered_from=1)  # she deletes it all
    assert _stored(thread) == (REPORT, 4)


def test_an_answered_save_is_not_merged_against_again(thread, owner, other_user):
    """Save 1 was answered (the page's base moved to its version); save 2
    names none unanswered, so it merges against its base as usual: the
    other person's change made since is kept, not undone."""
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)  # version 2, answered
    theirs = FIRST_TRY.replace("Intro paragraph.", "Intro by the other person.")
    document_services.document_save(thread=thread, content=theirs, base_version=2, person=other_user)  # version 3
    _owner_saves(thread, owner, REWRITTEN, number=2, unanswered_from=2, base_version=2)
    assert _stored(thread) == (REWRITTEN.replace("Intro paragraph.", "Intro by the other person."), 4)


def test_a_conflict_after_a_lost_answer_is_settled_against_what_the_lost_save_carried(thread, owner, other_user):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)  # version 2, answer lost
    theirs = FIRST_TRY.replace("Owner's paragraph, first try.", "The other person's words there.")
    document_services.document_save(thread=thread, content=theirs, base_version=2, person=other_user)  # version 3
    with pytest.raises(DocumentConflict):
        _owner_saves(thread, owner, REWRITTEN, number=2, unanswered_from=1)
    assert _stored(thread) == (theirs, 3)
    _owner_saves(thread, owner, REWRITTEN, number=3, unanswered_from=1, resolve="ours")
    assert _stored(thread) == (REWRITTEN, 4)


def test_the_same_save_arriving_twice_is_written_once_and_answered_as_written(thread, owner):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)
    again = _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)
    assert (again.document.version, again.merged) == (2, False)
    assert _stored(thread) == (FIRST_TRY, 2)


def test_the_same_save_arriving_again_after_others_wrote_is_answered_with_what_is_there_now(thread, owner, other_user):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)  # version 2
    theirs = FIRST_TRY.replace("Intro paragraph.", "Intro by the other person.")
    document_services.document_save(thread=thread, content=theirs, base_version=2, person=other_user)  # version 3
    again = _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)
    # Her page takes version 3 (her words and theirs); nothing is written over the other person's.
    assert (again.document.version, again.merged) == (3, True)
    assert _stored(thread) == (theirs, 3)


def test_a_save_numbered_as_the_last_written_but_with_other_words_is_still_refused(thread, owner):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=1, unanswered_from=1)
    with pytest.raises(InvalidInput, match="A later save from this page was written already"):
        _owner_saves(thread, owner, REWRITTEN, number=1, unanswered_from=1)
    assert _stored(thread) == (FIRST_TRY, 2)


# --- a page that took over the unanswered saves of the page the tab left (a reload) ---

LEFT_PAGE = "1eff7a9e1eff7a9e1eff7a9e1eff7a9e"
TAB_ONE = "7ab0000000000000000000000000000e"
TAB_TWO = "7ab0000000000000000000000000002e"
# The left page's last save was number 4, and it was never answered.
LEFT = PageSave(page=LEFT_PAGE, number=4, unanswered_from=4)


def _going_on_from_the_left_page(thread, owner, content, *, page, number, unanswered_from, base_version=1):
    return document_services.document_save(
        thread=thread,
        title="Report",
        content=content,
        base_version=base_version,
        author="person",
        person=owner,
        page_save=PageSave(page=page, number=number, unanswered_from=unanswered_from, took_over=LEFT),
    )


@pytest.mark.parametrize("left_save", ["written-before", "never-written"])
def test_two_tabs_going_on_from_one_left_page_never_refuse_or_undo_each_other(thread, owner, left_save):
    """A tab duplicated while it held what a page left (the browser copies
    the tab's storage): both tabs take the left page's unanswered save over,
    each as a page of its own."""
    _report(thread, owner)
    if left_save == "written-before":
        _owner_saves(thread, owner, FIRST_TRY, number=4, unanswered_from=4, page=LEFT_PAGE)  # version 2, answer lost
    before = FIRST_TRY if left_save == "written-before" else REPORT
    one = before + "\nTab one's paragraph.\n"
    two = before + "\nTab two's paragraph.\n"
    _going_on_from_the_left_page(thread, owner, one, page=TAB_ONE, number=1, unanswered_from=1)
    _going_on_from_the_left_page(thread, owner, two, page=TAB_TWO, number=1, unanswered_from=1)
    # Tab two types on; its first answer was lost too, so it still names the left page.
    _going_on_from_the_left_page(thread, owner, two + "More from tab two.\n", page=TAB_TWO, number=2, unanswered_from=1)
    content = _stored(thread)[0]
    assert "Tab one's paragraph." in content
    assert "Tab two's paragraph.\nMore from tab two." in content
    assert content.count("Owner's paragraph, first try.") == (1 if left_save == "written-before" else 0)


def test_after_a_reload_the_left_pages_save_written_first_is_merged_against(thread, owner):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=4, unanswered_from=4, page=LEFT_PAGE)  # version 2, answer lost
    # The new page, standing on version 1, saves her deletion.
    saved = _going_on_from_the_left_page(thread, owner, REPORT, page=TAB_ONE, number=1, unanswered_from=1)
    assert _stored(thread) == (REPORT, 3)
    assert not saved.merged


def test_after_a_reload_the_left_pages_save_arriving_late_is_refused(thread, owner):
    _report(thread, owner)
    _going_on_from_the_left_page(thread, owner, REPORT + "\nHer new words.\n", page=TAB_ONE, number=1, unanswered_from=1)
    with pytest.raises(InvalidInput, match="A later save from this page was written already"):
        _owner_saves(thread, owner, FIRST_TRY, number=4, unanswered_from=4, page=LEFT_PAGE)
    assert _stored(thread) == (REPORT + "\nHer new words.\n", 2)
    # The row that bars it carries nothing a later page could merge against.
    assert not DocumentPageSave.objects.get(page=LEFT_PAGE).carried


def test_a_left_pages_answered_save_is_never_merged_against_by_a_page_going_on_from_it(thread, owner, other_user):
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=3, unanswered_from=3, page=LEFT_PAGE)  # version 2, answered
    theirs = FIRST_TRY.replace("Intro paragraph.", "Intro by the other person.")
    document_services.document_save(thread=thread, content=theirs, base_version=2, person=other_user)  # version 3
    # Save 4 never reached the server; the new page stands on version 2.
    _going_on_from_the_left_page(thread, owner, REWRITTEN, page=TAB_ONE, number=1, unanswered_from=1, base_version=2)
    assert _stored(thread) == (REWRITTEN.replace("Intro paragraph.", "Intro by the other person."), 4)
    assert not DocumentPageSave.objects.get(page=LEFT_PAGE).carried


def test_another_persons_page_id_is_never_theirs(thread, owner, other_user):
    """Another person naming the owner's page id (guessed, or copied) finds
    none of the owner's saves: merged against their own base, and the
    owner's later saves still see the owner's own."""
    _report(thread, owner)
    _owner_saves(thread, owner, FIRST_TRY, number=5, unanswered_from=5)  # version 2, answer lost
    document_services.document_save(
        thread=thread,
        content=REPORT.replace("Intro paragraph.", "Intro by the other person."),
        base_version=1,
        person=other_user,
        page_save=PageSave(page=PAGE, number=9, unanswered_from=1),
    )
    content, version = _stored(thread)
    assert version == 3 and "first try" in content and "Intro by the other person." in content
    _owner_saves(thread, owner, REWRITTEN, number=6, unanswered_from=5)
    assert _stored(thread) == (REWRITTEN.replace("Intro paragraph.", "Intro by the other person."), 4)


def test_the_page_record_is_one_row_per_page_replaced_by_each_save(thread, owner):
    _report(thread, owner)
    for number, text in enumerate([FIRST_TRY, REWRITTEN, REPORT], start=1):
        _owner_saves(thread, owner, text, number=number, unanswered_from=number, base_version=number)
    row = DocumentPageSave.objects.get()
    assert (row.number, row.version, row.sent_delta) == (3, 4, "")


def test_saves_without_a_page_keep_no_record(thread, owner):
    _report(thread, owner)
    document_services.document_save(thread=thread, content=FIRST_TRY, base_version=1, person=owner)
    document_services.document_save(thread=thread, content=REWRITTEN, base_version=2, author="agent")
    assert not DocumentPageSave.objects.exists()
