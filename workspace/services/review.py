"""The person's answers to an agent turn's document changes: keep a hunk
(dismiss it from the review) or undo it (a new revision by the person that
puts that hunk's old text back in the current document). History is never
rewritten: an undo is one more version, merged into whatever the person, the
agent or another tab wrote since, and a hunk whose text changed since is
refused rather than overwritten (docs/adr/0019)."""

from dataclasses import dataclass

from django.db import transaction

from .. import people, selectors
from ..diff import revert_hunks
from ..errors import InvalidInput, NotFound
from ..events import Change, announce
from ..models import DocumentReviewDecision, DocumentRevision, Thread
from .document import _document_for_update, document_save

Decision = DocumentReviewDecision.Decision
CHANGED_SINCE = (
    "That change was edited after the agent made it, so undoing it would overwrite newer text. "
    "Nothing was undone; edit the passage by hand, or keep it."
)


@dataclass(frozen=True)
class ReviewAnswered:
    message: str
    undone: int = 0  # hunks undone by this call
    kept: int = 0
    refused: int = 0  # hunks asked to undo that changed since (left to review)


def _open_review(thread: Thread, document, turn_index: int) -> selectors.DocumentReview:
    review = selectors.document_review(thread=thread, document=document)
    if review is None or review.turn_index != turn_index:
        raise NotFound("These changes are no longer the latest the agent made; the review now shows the latest.")
    return review


def _chosen(review: selectors.DocumentReview, hunk: int | None):
    if hunk is None:
        return [entry.hunk for entry in review.hunks]
    chosen = [entry.hunk for entry in review.hunks if entry.hunk.index == hunk]
    if not chosen:
        raise NotFound("That change was already kept or undone.")
    return chosen


def _record(document, turn_index: int, indexes, decision: str, person) -> None:
    who = people.by(person)
    DocumentReviewDecision.objects.bulk_create(
        [DocumentReviewDecision(document=document, turn_index=turn_index, hunk=i, decision=decision, **who) for i in indexes]
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@transaction.atomic
def review_keep(*, thread: Thread, turn_index: int, hunk: int | None = None, person=None) -> ReviewAnswered:
    """Keep one hunk (`hunk`), or every one still open (None), as `person`'s answer."""
    document = _document_for_update(thread)
    review = _open_review(thread, document, turn_index)
    chosen = _chosen(review, hunk)
    _record(document, turn_index, [h.index for h in chosen], Decision.KEPT, person)
    # The document text is unchanged; the open tabs re-read the review.
    announce(Change(thread_id=thread.pk, surface="document"))
    return ReviewAnswered(
        message="Change kept." if hunk is not None else f"Kept {_plural(len(chosen), 'change')}.", kept=len(chosen)
    )


@transaction.atomic
def review_undo(*, thread: Thread, turn_index: int, hunk: int | None = None, person=None) -> ReviewAnswered:
    """Undo one hunk (`hunk`), or every one still open (None), on the current
    text, as `person`'s edit. A hunk whose lines changed since the agent
    wrote them is refused (InvalidInput for a single hunk; left open and
    named in the message for all)."""
    document = _document_for_update(thread)
    review = _open_review(thread, document, turn_index)
    chosen = _chosen(review, hunk)
    content, reverted, refused = revert_hunks(review.after_content, document.content, chosen)
    if not reverted:
        if hunk is not None:
            raise InvalidInput(CHANGED_SINCE)
        raise InvalidInput(
            f"Every change left was edited after the agent made it ({_plural(len(refused), 'change')}), so nothing "
            "was undone; edit those passages by hand, or keep them."
        )
    document_save(
        thread=thread, content=content, base_version=document.version, author=DocumentRevision.Author.PERSON, person=person
    )
    _record(document, turn_index, reverted, Decision.UNDONE, person)
    if hunk is not None:
        message = "Change undone."
    elif refused:
        message = (
            f"Undid {_plural(len(reverted), 'change')}. {_plural(len(refused), 'change')} edited after the "
            "agent made them could not be undone without overwriting newer text; they are still listed."
        )
    else:
        message = f"Undid {_plural(len(reverted), 'change')}."
    return ReviewAnswered(message=message, undone=len(reverted), refused=len(refused))
