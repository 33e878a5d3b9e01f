"""workspace.services.document: versions and their revisions, merges of
saves based on older versions, conflicts, the size cap, appends."""

import pytest
from django.conf import settings

from workspace import selectors
from workspace.errors import DocumentConflict, InvalidInput
from workspace.models import Document, DocumentRevision
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db

PERSON, AGENT, SYSTEM = (DocumentRevision.Author.PERSON, DocumentRevision.Author.AGENT, DocumentRevision.Author.SYSTEM)

REPORT = "# Soil carbon\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"


def _stored(thread):
    document = Document.objects.get(thread=thread)
    return document.title, document.content, document.version


def _revisions(thread):
    revisions = DocumentRevision.objects.filter(document__thread=thread).select_related("body").order_by("version")
    return [(r.version, r.title, r.content, r.author) for r in revisions]  # texts read back from their blobs


def _save(thread, **fields):
    return document_services.document_save(thread=thread, **fields)


# --- versions and revisions -----------------------------------------------------------


def test_document_starts_empty_at_version_zero_and_each_save_bumps_it(thread):
    draft = selectors.document_for(thread=thread)
    assert (draft.pk, draft.title, draft.content, draft.version) == (None, "Untitled", "", 0)
    first = _save(thread, title="Review", content="# Intro", base_version=0)
    assert (first.document.version, first.merged) == (1, False)
    second = _save(thread, content="# Intro\n\nMore", base_version=1)
    assert (second.document.title, second.document.content, second.document.version) == ("Review", "# Intro\n\nMore", 2)
    _save(thread, title="Review v2")
    assert _stored(thread) == ("Review v2", "# Intro\n\nMore", 3)


def test_every_write_keeps_a_revision_with_its_text_and_author(thread):
    _save(thread, title="Review", content="Draft.", base_version=0, author=PERSON)
    _save(thread, content="Draft, revised.", base_version=1, author=AGENT)
    document_services.document_append(thread=thread, text="Appended.", author=AGENT)
    _save(thread, title="Review 2")
    assert _revisions(thread) == [
        (1, "Review", "Draft.", PERSON),
        (2, "Review", "Draft, revised.", AGENT),
        (3, "Review", "Draft, revised.\n\nAppended.", AGENT),
        (4, "Review 2", "Draft, revised.\n\nAppended.", SYSTEM),
    ]


def test_a_refused_write_keeps_no_revision(thread):
    _save(thread, content="keep", base_version=0)
    with pytest.raises(InvalidInput):
        _save(thread, content="x" * (settings.HAICO_DOCUMENT_MAX_CHARS + 1), base_version=1)
    with pytest.raises(InvalidInput):
        document_services.document_append(thread=thread, text=" ")
    assert [version for version, *_ in _revisions(thread)] == [1]


def test_line_breaks_are_stored_as_plain_newlines_whoever_writes(thread):
    _save(thread, content="a\r\nb\rc", base_version=0)
    assert _stored(thread)[1] == "a\nb\nc"


# --- a save based on an older version is merged -----------------------------------------


def test_person_and_agent_editing_different_paragraphs_both_land(thread):
    _save(thread, title="Report", content=REPORT, base_version=0, author=PERSON)  # version 1
    # The agent rewrites the results from version 1...
    agent = _save(thread, content=REPORT.replace("Results paragraph.", "Results: +12% carbon."), base_version=1, author=AGENT)
    assert (agent.document.version, agent.merged) == (2, False)
    # ...while the person, still on version 1, had typed into the intro.
    person = _save(thread, content=REPORT.replace("Intro paragraph.", "Intro, by me."), base_version=1, author=PERSON)
    assert person.merged is True
    expected = REPORT.replace("Intro paragraph.", "Intro, by me.").replace("Results paragraph.", "Results: +12% carbon.")
    assert _stored(thread) == ("Report", expected, 3)
    assert _revisions(thread)[-1] == (3, "Report", expected, PERSON)


def test_agent_update_based_on_an_old_version_keeps_what_the_person_typed_since(thread):
    _save(thread, content=REPORT, base_version=0, author=AGENT)  # version 1: what the agent saw
    _save(thread, content=REPORT + "\nA paragraph the person typed.\n", base_version=1, author=PERSON)
    saved = _save(thread, content=REPORT.replace("Methods paragraph.", "Methods, rewritten."), base_version=1, author=AGENT)
    assert saved.merged is True
    content = _stored(thread)[1]
    assert "Methods, rewritten." in content and "A paragraph the person typed." in content


def test_person_and_agent_replacing_the_same_words_conflict_and_nothing_is_written(thread):
    _save(thread, title="Report", content=REPORT, base_version=0)
    _save(thread, content=REPORT.replace("Methods paragraph.", "Methods by the agent."), base_version=1, author=AGENT)
    with pytest.raises(DocumentConflict) as caught:
        _save(thread, content=REPORT.replace("Methods paragraph.", "Methods by the person."), base_version=1, author=PERSON)
    exc = caught.value
    assert (exc.current_version, exc.base_version) == (2, 1)
    assert "Nothing was saved" in exc.message and "version 1" in exc.message and "version 2" in exc.message
    [conflict] = exc.conflicts
    assert (conflict.ours, conflict.theirs) == ("person", "agent")
    assert exc.current_content[conflict.start : conflict.end] == "agent"
    assert exc.submitted_content[conflict.ours_start : conflict.ours_end] == "person"
    assert _stored(thread) == ("Report", REPORT.replace("Methods paragraph.", "Methods by the agent."), 2)
    assert len(_revisions(thread)) == 2


@pytest.mark.parametrize(
    ("resolve", "methods"),
    [("ours", "Methods by the person."), ("theirs", "Methods by the agent."), ("both", "Methods by the person agent.")],
)
def test_a_choice_settles_the_overlap_and_keeps_both_sides_other_edits(thread, resolve, methods):
    _save(thread, content=REPORT, base_version=0)
    agent_text = REPORT.replace("Methods paragraph.", "Methods by the agent.").replace("Results paragraph.", "Results!")
    _save(thread, content=agent_text, base_version=1, author=AGENT)
    mine = REPORT.replace("Methods paragraph.", "Methods by the person.").replace("Intro paragraph.", "Intro!")
    saved = _save(thread, content=mine, base_version=1, author=PERSON, resolve=resolve)
    assert saved.merged is True
    assert _stored(thread)[1:] == (
        REPORT.replace("Methods paragraph.", methods)
        .replace("Results paragraph.", "Results!")
        .replace("Intro paragraph.", "Intro!"),
        3,
    )


def test_an_unknown_choice_is_refused(thread):
    with pytest.raises(InvalidInput, match="Choose how to settle"):
        _save(thread, content="x", base_version=0, resolve="mine")


def test_a_base_version_with_no_revision_is_a_conflict_never_an_overwrite(thread):
    _save(thread, content="first text", base_version=0)
    _save(thread, content="agent text", base_version=1)
    # Versions from before revisions were kept (the migration recorded only
    # the current one), or never written at all.
    DocumentRevision.objects.filter(document__thread=thread, version=1).delete()
    with pytest.raises(DocumentConflict) as caught:
        _save(thread, content="person text", base_version=1)
    assert "cannot be merged" in caught.value.message
    [conflict] = caught.value.conflicts
    assert (conflict.base, conflict.ours, conflict.theirs) == (None, "person text", "agent text")
    with pytest.raises(DocumentConflict) as future:
        _save(thread, content="person text", base_version=7)  # a version from the future
    # Said as it is: not "no longer kept", a version the document never had.
    assert "version 7 this text was based on is unknown" in future.value.message, future.value.message
    assert _stored(thread)[1:] == ("agent text", 2)
    # A choice still settles it: the whole text is the overlap.
    _save(thread, content="person text", base_version=7, resolve="both")
    assert _stored(thread)[1] == "person text\nagent text"


def test_a_conflict_on_a_never_saved_document_creates_nothing(thread):
    with pytest.raises(DocumentConflict):
        document_services.document_save(thread=thread, content="x", base_version=4)
    assert not Document.objects.filter(thread=thread).exists()


def test_version_zero_is_the_empty_document_so_a_first_save_merges_with_an_agent_write(thread):
    document_services.document_append(thread=thread, text="Agent's first line.")  # version 1
    saved = _save(thread, title="Mine", content="", base_version=0, author=PERSON)  # the page loaded at version 0
    assert saved.merged is True
    assert _stored(thread) == ("Mine", "Agent's first line.", 2)


def test_appends_commute_with_a_stale_save(thread):
    _save(thread, content=REPORT, base_version=0)
    document_services.document_append(thread=thread, text="Appended by the agent.")
    _save(thread, content=REPORT.replace("Intro paragraph.", "Intro, edited."), base_version=1)
    # A paragraph of its own after the report's last line.
    assert _stored(thread)[1] == REPORT.replace("Intro paragraph.", "Intro, edited.") + "\nAppended by the agent."


# --- the title, three-way --------------------------------------------------------------


def test_title_changed_on_one_side_takes_that_side(thread):
    _save(thread, title="Draft", content="text", base_version=0)
    _save(thread, title="Agent's title", content="text, more", base_version=1)
    _save(thread, title="Draft", content="text", base_version=1)  # the person changed neither
    assert _stored(thread)[0] == "Agent's title"
    _save(thread, title="My title", content="text, more", base_version=3)
    assert _stored(thread)[0] == "My title"


def test_title_changed_differently_on_both_sides_is_a_conflict(thread):
    _save(thread, title="Draft", content="text", base_version=0)
    _save(thread, title="Agent's title", base_version=1)
    with pytest.raises(DocumentConflict) as caught:
        _save(thread, title="My title", content="text", base_version=1)
    assert caught.value.title_conflict == ("My title", "Agent's title")
    assert caught.value.conflicts == []
    assert _stored(thread)[0] == "Agent's title"
    _save(thread, title="My title", content="text", base_version=1, resolve="both")
    assert _stored(thread)[0] == "My title / Agent's title"


# --- limits ---------------------------------------------------------------------------


def test_document_save_refuses_over_the_size_cap_and_bad_title(thread):
    _save(thread, content="keep", base_version=0)
    limit = settings.HAICO_DOCUMENT_MAX_CHARS
    with pytest.raises(InvalidInput, match="too long"):
        _save(thread, content="x" * (limit + 1), base_version=1)
    with pytest.raises(InvalidInput, match="Document title cannot be empty"):
        _save(thread, title="  ", base_version=1)
    with pytest.raises(InvalidInput, match="must be text"):
        _save(thread, content=["not", "text"], base_version=1)
    assert _stored(thread)[1:] == ("keep", 1)
    _save(thread, content="x" * limit, base_version=1)
    assert len(_stored(thread)[1]) == limit


def test_a_merge_that_would_exceed_the_size_cap_is_refused_and_nothing_written(thread, settings):
    settings.HAICO_DOCUMENT_MAX_CHARS = 40
    _save(thread, content="a\n\nb\n", base_version=0)
    _save(thread, content="a\n\nb" + "!" * 30 + "\n", base_version=1)
    with pytest.raises(InvalidInput, match="would be too long") as caught:
        _save(thread, content="a" + "?" * 30 + "\n\nb\n", base_version=1)
    assert "Nothing was saved" in caught.value.message
    assert _stored(thread)[2] == 2


def test_document_append_adds_a_paragraph_and_bumps_the_version(thread):
    document_services.document_append(thread=thread, text="First")
    document_services.document_append(thread=thread, text="Second")
    assert _stored(thread)[1:] == ("First\n\nSecond", 2)
    with pytest.raises(InvalidInput, match="cannot be empty"):
        document_services.document_append(thread=thread, text="  ")
    with pytest.raises(InvalidInput, match="too long"):
        document_services.document_append(thread=thread, text="x" * settings.HAICO_DOCUMENT_MAX_CHARS)
    assert _stored(thread)[1] == "First\n\nSecond"


# --- restoring a version ------------------------------------------------------------------


def test_restore_writes_the_old_version_as_a_new_edit_by_the_person(thread):
    _save(thread, title="Draft", content=REPORT, base_version=0)
    _save(thread, title="Rewritten", content="Nothing left.", base_version=1, author=AGENT)

    saved = document_services.document_restore(thread=thread, version=1, base_version=2)

    assert not saved.merged
    assert _stored(thread) == ("Draft", REPORT, 3)
    assert _revisions(thread)[-1] == (3, "Draft", REPORT, PERSON)
    assert [r[0] for r in _revisions(thread)] == [1, 2, 3]  # nothing in between is lost


def test_restore_based_on_an_older_version_merges_a_concurrent_agent_edit(thread):
    _save(thread, title="Report", content=REPORT, base_version=0)  # v1
    _save(thread, content=REPORT.replace("Intro paragraph.", "Intro, revised by me."), base_version=1, author=PERSON)  # v2
    # The person looks at v2 and restores v1; meanwhile the agent wrote v3 on another paragraph.
    agent_text = REPORT.replace("Intro paragraph.", "Intro, revised by me.").replace(
        "Results paragraph.", "Results by the agent."
    )
    _save(thread, content=agent_text, base_version=2, author=AGENT)

    saved = document_services.document_restore(thread=thread, version=1, base_version=2)

    assert saved.merged
    # The restore undid the person's intro; the agent's results stay.
    assert _stored(thread) == ("Report", REPORT.replace("Results paragraph.", "Results by the agent."), 4)
    assert _revisions(thread)[-1][3] == PERSON


def test_restore_overlapping_a_concurrent_edit_writes_nothing(thread):
    _save(thread, title="Report", content=REPORT, base_version=0)  # v1
    _save(thread, content=REPORT.replace("Methods paragraph.", "Methods by me."), base_version=1)  # v2
    _save(thread, content=REPORT.replace("Methods paragraph.", "Methods by the agent."), base_version=2, author=AGENT)  # v3

    with pytest.raises(DocumentConflict):
        document_services.document_restore(thread=thread, version=1, base_version=2)
    assert _stored(thread)[2] == 3 and len(_revisions(thread)) == 3


def test_restore_of_a_version_not_kept_is_refused(thread):
    from workspace.errors import NotFound

    _save(thread, title="T", content="one", base_version=0)
    with pytest.raises(NotFound, match="Version 9 of the document is not kept"):
        document_services.document_restore(thread=thread, version=9, base_version=1)
    assert _stored(thread)[2] == 1


# --- targeted edits (document_edit_passage) ------------------------------------------


def test_passage_matches_counts_overlapping_occurrences():
    assert document_services.passage_matches("aaa", "aa") == [0, 1]
    assert document_services.passage_matches("abc", "d") == []


def test_passage_matches_only_whole_characters():
    assert document_services.passage_matches("Merci 👍🏽 et 👍 !", "👍") == [12]
    assert document_services.passage_matches("Un cafe\u0301, un cafe.", "cafe") == [13]
    assert document_services.passage_matches("🇫🇷🇫🇷", "🇷🇫") == []


@pytest.mark.parametrize(
    "text,after,whole",
    [
        ("Merci 👍🏽 pour tout.\n", "Merci 👍", "👍🏽"),
        ("Un cafe\u0301 noir.\n", "Un cafe", "cafe\u0301"),
        ("Team 🇫🇷🇬🇷 wins.\n", "Team 🇫🇷🇬", "🇬🇷"),
    ],
    ids=["skin-tone", "combining-accent", "flag"],
)
def test_an_insertion_or_replacement_that_would_land_inside_a_character_is_refused(thread, text, after, whole):
    document_services.document_save(thread=thread, content=text)
    with pytest.raises(InvalidInput, match="was not found in version 1 of the document.*include the whole character"):
        document_services.document_edit_passage(thread=thread, passage=after, insert_after=" encore", base_version=1)
    with pytest.raises(InvalidInput, match="was not found"):
        document_services.document_edit_passage(thread=thread, passage=after[1:], replacement="x", base_version=1)
    assert selectors.document_for(thread=thread).content == text  # the character is still whole
    assert whole in text


def test_a_targeted_edit_in_a_long_document_of_text_as_people_write_it(thread):
    from tests.support.unicode_text import PARAS, big_document

    text = big_document(150_000)
    document_services.document_save(thread=thread, content=text)
    version = selectors.document_for(thread=thread).version
    passage = "66. " + PARAS[66 % len(PARAS)]
    assert text.count(passage) == 1
    document_services.document_edit_passage(
        thread=thread, passage=passage, replacement="66. 替换 🇫🇷 e\u0301", base_version=version
    )
    assert selectors.document_for(thread=thread).content == text.replace(passage, "66. 替换 🇫🇷 e\u0301")


def test_edit_passage_without_a_base_edits_the_current_text(thread):
    document_services.document_save(thread=thread, content="Hello world.")
    saved = document_services.document_edit_passage(thread=thread, passage="world", replacement="there")
    assert (saved.document.content, saved.document.version, saved.merged) == ("Hello there.", 2, False)


def test_edit_passage_needs_exactly_one_kind_of_edit(thread):
    document_services.document_save(thread=thread, content="Hello world.")
    with pytest.raises(InvalidInput):
        document_services.document_edit_passage(thread=thread, passage="world", replacement="a", insert_after="b")
    with pytest.raises(InvalidInput):
        document_services.document_edit_passage(thread=thread, passage="world")


def test_edit_passage_with_an_empty_passage_is_refused(thread):
    document_services.document_save(thread=thread, content="Hello world.")
    with pytest.raises(InvalidInput, match="cannot be empty"):
        document_services.document_edit_passage(thread=thread, passage="", insert_after="x")


# --- typing on while a save was merged: the base is the text that save carried (docs/adr/0040) -----

NOTE = "Hello.\n\nAnother paragraph.\n"


def _typed_on_while_merged(thread):
    """Tab B saves " Wor" based on version 1; tab A's save of another
    paragraph got in first (version 2), so B's is merged as version 3; B had
    typed "dy" meanwhile. Returns (what B sent, what B's editor holds now)."""
    _save(thread, title="Note", content=NOTE, base_version=0)
    _save(thread, content=NOTE.replace("Another paragraph.", "Another paragraph, from tab A."), base_version=1, author=PERSON)
    sent = NOTE.replace("Hello.", "Hello Wor.")
    assert _save(thread, content=sent, base_version=1, author=PERSON).merged
    assert _stored(thread)[1:] == ("Hello Wor.\n\nAnother paragraph, from tab A.\n", 3)
    return sent, NOTE.replace("Hello.", "Hello Wordy.")


def test_typing_on_during_a_merged_save_is_merged_against_the_text_that_save_carried(thread):
    sent, typed = _typed_on_while_merged(thread)
    saved = _save(thread, content=typed, base_version=3, base_content=sent, author=PERSON)
    assert saved.merged
    assert _stored(thread)[1:] == ("Hello Wordy.\n\nAnother paragraph, from tab A.\n", 4)


def test_against_the_version_the_first_save_was_based_on_that_same_typing_conflicts_with_itself(thread):
    # Why the base must be the text the save carried: from version 1, "Wor"
    # (tab B's own, now saved) and "Wordy" look like two edits of one place.
    sent, typed = _typed_on_while_merged(thread)
    with pytest.raises(DocumentConflict) as caught:
        _save(thread, content=typed, base_version=1, author=PERSON)
    assert [(c.ours, c.theirs) for c in caught.value.conflicts] == [("Wordy", "Wor")]


def test_typing_on_that_overlaps_someone_elses_change_is_a_conflict_that_says_so(thread):
    sent, _ = _typed_on_while_merged(thread)
    # Meanwhile another tab changed the very words B goes on typing in.
    _save(thread, content="Hello Wor, says tab A.\n\nAnother paragraph, from tab A.\n", base_version=3, author=PERSON)
    with pytest.raises(DocumentConflict) as caught:
        _save(thread, content=NOTE.replace("Hello.", "Hello Wordy and more."), base_version=3, base_content=sent, author=PERSON)
    exc = caught.value
    assert "what you typed since overlaps" in exc.message and "version 4" in exc.message
    assert [(c.ours, c.theirs) for c in exc.conflicts] == [("Wordy and more", "Wor, says tab A")]
    assert _stored(thread)[2] == 4
    # A choice settles it against the same base.
    _save(
        thread,
        content=NOTE.replace("Hello.", "Hello Wordy and more."),
        base_version=3,
        base_content=sent,
        author=PERSON,
        resolve="ours",
    )
    assert _stored(thread)[1:] == ("Hello Wordy and more.\n\nAnother paragraph, from tab A.\n", 5)


def test_the_text_a_save_was_based_on_obeys_the_document_limit(thread, settings):
    settings.HAICO_DOCUMENT_MAX_CHARS = 10
    _save(thread, content="short", base_version=0)
    with pytest.raises(InvalidInput, match="too long"):
        _save(thread, content="short!", base_version=1, base_content="x" * 11)
    assert _stored(thread)[1:] == ("short", 1)


@pytest.mark.parametrize(
    ("content", "text", "expected"),
    [
        ("Intro.", "More.", "Intro.\n\nMore."),
        ("Intro.\n", "More.", "Intro.\n\nMore."),
        ("Intro.\n\n", "More.", "Intro.\n\nMore."),
        ("Intro.\n", "\n\n## Method", "Intro.\n\n\n## Method"),
        ("Steps:\n\n- one\n", "- two", "Steps:\n\n- one\n- two"),
        ("1. one", "2. two", "1. one\n2. two"),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n", "| 3 | 4 |", "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"),
        ("- one\n", "A paragraph after the list.", "- one\n\nA paragraph after the list."),
    ],
    ids=["no break", "one break", "blank line", "text brings its own", "list item", "numbered item", "table row", "after a list"],
)
def test_appended_text_is_a_paragraph_of_its_own_unless_it_goes_on_a_list_or_table(thread, content, text, expected):
    _save(thread, content=content, base_version=0)
    document_services.document_append(thread=thread, text=text, author=AGENT)
    assert selectors.document_for(thread=thread).content == expected
