"""workspace.services.review: Keep / Undo of the hunks of an agent turn's
document changes, on the current text, as the person's edit."""

import pytest

from workspace import selectors
from workspace.errors import InvalidInput, NotFound
from workspace.events import collecting
from workspace.models import Document, DocumentReviewDecision, DocumentRevision, Thread
from workspace.services import document as document_services
from workspace.services import review as review_services

pytestmark = pytest.mark.django_db

PERSON, AGENT = DocumentRevision.Author.PERSON, DocumentRevision.Author.AGENT

BEFORE = "# Report\n\nThe first paragraph, as the person wrote it.\n\nA middle paragraph.\n\nThe last paragraph, also theirs."
AFTER = (
    "# Report\n\nThe opening, rewritten by the agent with more detail.\n\nA middle paragraph.\n\n"
    "The closing, rewritten by the agent too."
)


def _turn(thread, number):
    Thread.objects.filter(pk=thread.pk).update(turn_index=number)


def _agent_rewrites_two_paragraphs(thread):
    document_services.document_save(thread=thread, content=BEFORE, author=PERSON)
    _turn(thread, 1)
    document_services.document_save(thread=thread, content=AFTER, author=AGENT)


def _content(thread):
    return Document.objects.get(thread=thread).content


def test_the_review_shows_the_two_rewritten_paragraphs_as_two_hunks(thread):
    _agent_rewrites_two_paragraphs(thread)
    review = selectors.document_review(thread=thread)
    assert review.turn_index == 1 and review.total == 2
    assert [entry.hunk.new_lines for entry in review.hunks] == [
        ("The opening, rewritten by the agent with more detail.",),
        ("The closing, rewritten by the agent too.",),
    ]
    assert [entry.hunk.old_lines for entry in review.hunks] == [
        ("The first paragraph, as the person wrote it.",),
        ("The last paragraph, also theirs.",),
    ]
    assert all(entry.undoable for entry in review.hunks)


def test_no_review_without_an_agent_edit(thread):
    document_services.document_save(thread=thread, content=BEFORE, author=PERSON)
    assert selectors.document_review(thread=thread) is None


def test_undo_of_one_of_two_hunks_reverts_only_it_as_a_new_person_revision(thread):
    _agent_rewrites_two_paragraphs(thread)
    answered = review_services.review_undo(thread=thread, turn_index=1, hunk=1)

    assert answered.message == "Change undone."
    assert _content(thread) == AFTER.replace("The closing, rewritten by the agent too.", "The last paragraph, also theirs.")
    newest = DocumentRevision.objects.filter(document__thread=thread).order_by("-version").first()
    assert (newest.version, newest.author) == (3, PERSON)
    # History is kept: the agent's version is still there as written.
    assert DocumentRevision.objects.get(document__thread=thread, version=2).content == AFTER
    review = selectors.document_review(thread=thread)
    assert [entry.hunk.index for entry in review.hunks] == [0]
    assert review.undone == 1


def test_undo_keeps_what_the_person_typed_elsewhere_since(thread):
    _agent_rewrites_two_paragraphs(thread)
    typed = AFTER.replace("A middle paragraph.", "A middle paragraph, edited by the person.")
    document_services.document_save(thread=thread, content=typed, base_version=2, author=PERSON)

    review_services.review_undo(thread=thread, turn_index=1, hunk=0)

    assert _content(thread) == typed.replace(
        "The opening, rewritten by the agent with more detail.", "The first paragraph, as the person wrote it."
    )


def test_undo_is_refused_when_the_person_edited_the_hunk_since(thread):
    _agent_rewrites_two_paragraphs(thread)
    typed = AFTER.replace("rewritten by the agent too.", "rewritten by the agent too, and by me.")
    document_services.document_save(thread=thread, content=typed, base_version=2, author=PERSON)
    assert [e.undoable for e in selectors.document_review(thread=thread).hunks] == [True, False]

    with pytest.raises(InvalidInput) as refused:
        review_services.review_undo(thread=thread, turn_index=1, hunk=1)

    assert "edited after the agent made it" in refused.value.message
    assert _content(thread) == typed  # nothing the person did is lost
    assert not DocumentReviewDecision.objects.exists()
    assert len(selectors.document_review(thread=thread).hunks) == 2


def test_undo_all_reverts_every_hunk_in_one_revision(thread):
    _agent_rewrites_two_paragraphs(thread)
    answered = review_services.review_undo(thread=thread, turn_index=1)

    assert answered.message == "Undid 2 changes."
    assert _content(thread) == BEFORE
    assert DocumentRevision.objects.filter(document__thread=thread).count() == 3
    assert not selectors.document_review(thread=thread).open


def test_undo_all_leaves_an_edited_hunk_listed_and_says_so(thread):
    _agent_rewrites_two_paragraphs(thread)
    typed = AFTER.replace("with more detail.", "with more detail, and mine.")
    document_services.document_save(thread=thread, content=typed, base_version=2, author=PERSON)

    answered = review_services.review_undo(thread=thread, turn_index=1)

    assert answered.undone == 1 and answered.refused == 1
    assert "1 change edited after the agent made them could not be undone" in answered.message
    assert _content(thread) == typed.replace("The closing, rewritten by the agent too.", "The last paragraph, also theirs.")
    assert [e.hunk.index for e in selectors.document_review(thread=thread).hunks] == [0]


def test_keep_dismisses_one_hunk_and_keep_all_the_rest_without_touching_the_text(thread):
    _agent_rewrites_two_paragraphs(thread)
    with collecting() as changes:
        assert review_services.review_keep(thread=thread, turn_index=1, hunk=0).message == "Change kept."
    assert [c.surface for c in changes] == ["document"]  # every open tab re-reads the review
    assert [e.hunk.index for e in selectors.document_review(thread=thread).hunks] == [1]

    assert review_services.review_keep(thread=thread, turn_index=1).message == "Kept 1 change."
    review = selectors.document_review(thread=thread)
    assert not review.open and review.kept == 2
    assert _content(thread) == AFTER
    assert DocumentRevision.objects.filter(document__thread=thread).count() == 2


def test_a_hunk_already_answered_or_a_stale_turn_is_refused(thread):
    _agent_rewrites_two_paragraphs(thread)
    review_services.review_keep(thread=thread, turn_index=1, hunk=0)
    with pytest.raises(NotFound):
        review_services.review_undo(thread=thread, turn_index=1, hunk=0)
    with pytest.raises(NotFound):
        review_services.review_keep(thread=thread, turn_index=1, hunk=7)
    _turn(thread, 2)
    document_services.document_save(thread=thread, content=AFTER + "\n\nMore.", author=AGENT)
    with pytest.raises(NotFound):
        review_services.review_keep(thread=thread, turn_index=1, hunk=1)
    assert selectors.document_review(thread=thread).turn_index == 2


def test_the_review_covers_every_agent_edit_of_the_turn(thread):
    document_services.document_save(thread=thread, content=BEFORE, author=PERSON)
    _turn(thread, 1)
    document_services.document_save(thread=thread, content=BEFORE.replace("first", "1st"), author=AGENT)
    document_services.document_append(thread=thread, text="An appended line.", author=AGENT)
    review = selectors.document_review(thread=thread)
    assert (review.before_version, review.after_version) == (1, 3)
    assert review.total == 2


def _owner_edits_between_two_agent_edits(thread, owner, was: str, now: str):
    """In one turn: the agent rewrites the opening, the owner's save (`was`
    replaced by `now`) lands while the model thinks, then the agent rewrites
    the closing on the text with the owner's edit in."""
    document_services.document_save(thread=thread, content=BEFORE, author=PERSON)
    _turn(thread, 1)
    document_services.document_save(thread=thread, content=BEFORE.replace("The first paragraph", "The opening"), author=AGENT)
    for replaced, by, who in ((was, now, PERSON), ("The last paragraph", "The closing", AGENT)):
        document = Document.objects.get(thread=thread)
        document_services.document_save(
            thread=thread,
            content=document.content.replace(replaced, by),
            base_version=document.version,
            author=who,
            person=owner if who == PERSON else None,
        )


def test_an_edit_the_owner_made_between_two_agent_edits_of_a_turn_is_not_listed_as_the_agents(thread, owner):
    _owner_edits_between_two_agent_edits(thread, owner, "A middle paragraph.", "The owner's own middle.")
    review = selectors.document_review(thread=thread)
    assert [entry.hunk.new_lines for entry in review.hunks] == [
        ("The opening, as the person wrote it.",),
        ("The closing, also theirs.",),
    ]


def test_undo_all_of_a_turn_keeps_what_the_owner_wrote_between_its_agent_edits(thread, owner):
    _owner_edits_between_two_agent_edits(thread, owner, "A middle paragraph.", "The owner's own middle.")
    review_services.review_undo(thread=thread, turn_index=1, hunk=None, person=owner)
    assert _content(thread) == BEFORE.replace("A middle paragraph.", "The owner's own middle.")


def test_a_passage_the_owner_rewrote_after_the_agent_changed_it_is_theirs_and_not_undone(thread, owner):
    # The owner reworks the agent's new opening while the turn goes on.
    _owner_edits_between_two_agent_edits(thread, owner, "The opening", "The owner's opening")
    review_services.review_undo(thread=thread, turn_index=1, hunk=None, person=owner)
    assert _content(thread) == BEFORE.replace("The first paragraph", "The owner's opening")
