"""The shared document: versioned, every version kept, concurrent edits merged.

Every write adds a `DocumentRevision` with the new version's text in the
same transaction, stored by content against the revision before it
(docs/adr/0078). A save names the version it was based on; if that is no
longer the current one, the save is merged three-way against it
(workspace.merge): base = that version's text, theirs = the current text,
ours = the submitted text. A clean merge is written (the result says so);
overlapping edits raise `DocumentConflict` and nothing is written
(docs/adr/0013).
"""

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from .. import content_store, graphemes, merge, people, text_delta
from ..errors import DocumentConflict, InvalidInput, NotFound
from ..models import DOCUMENT_TITLE_MAX_CHARS, ContentBlob, Document, DocumentPageSave, DocumentRevision, PageSave, Thread
from ..text import as_a_page_reads_it, clean_text
from ..text_splice import TextSplice
from .common import changed, turn_counter

Author = DocumentRevision.Author

# Version 0 is the document before its first write: always this text.
EMPTY_TITLE, EMPTY_CONTENT = "Untitled", ""


@dataclass(frozen=True)
class DocumentSaved:
    document: Document
    # The save was based on an older version and was merged with what had
    # changed since: the stored text differs from the text submitted.
    merged: bool = False


def _document_for_update(thread: Thread) -> Document:
    document, _ = Document.objects.select_for_update().get_or_create(
        thread=thread, defaults={"title": EMPTY_TITLE, "content": EMPTY_CONTENT, "version": 0}
    )
    return document


def _clean_content(content) -> str:
    if isinstance(content, str):
        # Stored with plain newlines whoever writes it, so merges compare like with like.
        content = content.replace("\r\n", "\n").replace("\r", "\n")
    return clean_text(
        content, label="Document content", max_chars=settings.HAICO_DOCUMENT_MAX_CHARS, allow_empty=True, strip=False
    )


def _clean_title(title) -> str:
    return clean_text(title, label="Document title", max_chars=DOCUMENT_TITLE_MAX_CHARS)


def newest_revision_body(document: Document) -> ContentBlob | None:
    """The blob of the document's newest revision: the base a new revision's
    text is stored against (docs/adr/0078)."""
    newest = DocumentRevision.objects.filter(document=document).select_related("body").order_by("-version").first()
    return newest.body if newest is not None else None


def _write(
    document: Document,
    *,
    title: str,
    content: str,
    author: str,
    token_name: str = "",
    person=None,
    restored_from: int | None = None,
) -> Document:
    # The text before this write is normally the newest revision's: the
    # delta against it needs no rebuild (store_text checks that by hash).
    base_text = document.content
    document.title, document.content = title, content
    document.version += 1
    document.save()
    # The counter as the write's own counting statement returns it, as an
    # objective's or a plan's history row takes it (docs/adr/0140), not a
    # read of the thread's row of its own.
    counted = changed(document.thread_id, "document")
    body = content_store.store_text(ContentBlob, content, base=newest_revision_body(document), base_text=base_text)
    DocumentRevision.objects.create(
        document=document,
        version=document.version,
        title=title,
        body=body,
        author=author,
        token_name=token_name,
        turn_index=turn_counter(document.thread_id, counted),
        restored_from=restored_from,
        **people.by(person),
    )
    return document


def _base_text(document: Document, version: int) -> tuple[str, str] | None:
    """(title, content) of `version`, or None when no such version is kept."""
    if version == 0:
        return EMPTY_TITLE, EMPTY_CONTENT
    revision = DocumentRevision.objects.filter(document=document, version=version).select_related("body").first()
    return (revision.title, revision.content) if revision is not None else None


def unknown_version_message(base_version: int, current_version: int) -> str:
    return (
        f"Nothing was changed: version {base_version} of the document is unknown (the document is at version "
        f"{current_version}, and has had no version after it). Read it again and write from version {current_version}."
    )


def _spliced(document: Document, base_version: int | None, splice: TextSplice) -> str:
    base = _base_text(document, base_version) if base_version is not None else None
    if base is None:
        raise InvalidInput(
            f"Version {base_version} of the document, which the change sent as the page closed was typed on, "
            "is not kept, so the change cannot be placed. Nothing was saved."
        )
    # The page's offsets count its textarea's text, which reads every line break as "\n".
    return splice.applied_to(as_a_page_reads_it(base[1]))


def _merged_title(base: str | None, ours: str, theirs: str, resolve: str | None) -> tuple[str, tuple[str, str] | None]:
    """(title to write, (ours, theirs) when both changed it differently and
    `resolve` does not say how to settle it). `base` None: unknown."""
    if base is None:
        title, conflicted = (theirs, False) if ours == theirs else (ours, True)
    else:
        title, conflicted = merge.merge_value(base, ours, theirs)
    if not conflicted:
        return title, None
    if resolve == merge.THEIRS:
        return theirs, None
    if resolve == merge.BOTH and len(f"{ours} / {theirs}") <= DOCUMENT_TITLE_MAX_CHARS:
        return f"{ours} / {theirs}", None
    if resolve is not None:
        return ours, None  # "ours", or "both" when the two would not fit
    return ours, (ours, theirs)


@transaction.atomic
def document_save(
    *,
    thread: Thread,
    title: str | None = None,
    content: str | None = None,
    base_version: int | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    resolve: str | None = None,
    base_content: str | None = None,
    content_splice: TextSplice | None = None,
    person=None,
    page_save: PageSave | None = None,
    restored_from: int | None = None,
) -> DocumentSaved:
    """Write the title and/or content (None leaves it as it is).

    `base_version`: the version the text was edited from. The person's
    editor and the agent's tool always pass one; None (scripts, seeding)
    writes over whatever is current. `resolve` ("ours", "theirs", "both")
    settles the parts both sides changed that way instead of raising (the
    person's choice in the conflict view); it applies to the current text,
    under the lock, so what it writes is based on the current version.
    `token_name`: the access token an MCP author wrote with (docs/adr/0026).
    `person`: the user who wrote it, or whose turn or token it was (docs/adr/0085).

    `base_content`: the text `content` was edited from when that is not
    `base_version`'s own: the editor's save came back merged (as
    `base_version`) while the person typed on, and what they typed could not
    be put on the merged text in the browser. The merge is then three-way
    against that text, so the person's own earlier save never counts as
    someone else's change (docs/adr/0040). The title's base stays
    `base_version`'s.

    `content_splice`: the content as the span a closing page changed in
    `base_version`'s text (its beacon cannot carry a long document whole);
    rebuilt under the lock, checked, then saved like `content`.

    `page_save`: which save of which editor page of `person`'s this is
    (docs/adr/0139). When an earlier save of the page it had no answer to
    was written, this one is merged against what that one carried (the
    text the person's edits since started from), never against
    `base_version`'s: her own unanswered save is not someone else's change.
    A save of the page numbered at or before one already written is
    refused with nothing written (a later one carried its text on).

    `restored_from`: the version a restore brings back (document_restore)."""
    if resolve is not None and resolve not in merge.RESOLUTIONS:
        raise InvalidInput(f"Choose how to settle the conflict: one of {', '.join(merge.RESOLUTIONS)}.")
    if title is not None:
        title = _clean_title(title)
    if content is not None:
        content = _clean_content(content)
    if base_content is not None:
        base_content = _clean_content(base_content)
    document = _document_for_update(thread)
    if content_splice is not None:
        content = _clean_content(_spliced(document, base_version, content_splice))
    repeated = _repeat_of_the_last_written(document, person, page_save, title=title, content=content)
    if repeated is not None:
        return repeated
    written = _unanswered_save_written(document, person, page_save)
    current_title, current_content = document.title, document.content
    if written is None and base_content is None and (base_version is None or base_version == document.version):
        new_title = current_title if title is None else title
        new_content = current_content if content is None else content
        _write(
            document,
            title=new_title,
            content=new_content,
            author=author,
            token_name=token_name,
            person=person,
            restored_from=restored_from,
        )
        _record_page_save(document, person, page_save, title=new_title, content=new_content)
        return DocumentSaved(document)

    # What is not submitted is unchanged since the base.
    typed_on = base_content is not None
    base: tuple[str | None, str | None] | None = (
        _base_text(document, base_version) if base_version is not None else (current_title, current_content)
    )
    if written is not None:
        base, typed_on = written, False
    elif typed_on:
        base = (base[0] if base is not None else None, base_content)
    if base is None:
        # Without that version's text nothing tells what changed since:
        # never overwrite; the two texts are one conflict unless equal.
        title_base, base_content = (current_title if title is None else None), None
    else:
        title_base, base_content = base
    ours_title = title if title is not None else (title_base or current_title)
    new_title, title_conflict = _merged_title(title_base, ours_title, current_title, resolve)
    if content is None:
        result = merge.MergeResult((current_content,))  # a title-only save leaves the text as it is
    elif base_content is None:
        result = merge.without_base(content, current_content)
    else:
        result = merge.merge_text(base_content, content, current_content)

    if (result.conflicts and resolve is None) or title_conflict:
        raise DocumentConflict(
            _conflict_message(base_version, document.version, known=base is not None, typed_on=typed_on),
            current_version=document.version,
            base_version=base_version,
            current_title=current_title,
            current_content=current_content,
            submitted_title=ours_title,
            submitted_content=current_content if content is None else content,
            conflicts=result.conflicts,
            title_conflict=title_conflict,
        )
    try:
        new_content = _clean_content(result.resolve(resolve or merge.OURS))
    except InvalidInput as exc:
        raise InvalidInput(
            f"Merged with the changes made since version {base_version}, the document would be too long: "
            f"{exc.message} Nothing was saved; shorten it and it will be saved again."
        ) from None
    saved = _write(
        document,
        title=new_title,
        content=new_content,
        author=author,
        token_name=token_name,
        person=person,
        restored_from=restored_from,
    )
    sent_content = new_content if content is None else content
    _record_page_save(document, person, page_save, title=ours_title, content=sent_content)
    # Merged only with the page's own unanswered save, it is written as sent:
    # nothing of anyone else's to put in the editor.
    merged = written is None or (new_title, new_content) != (ours_title, sent_content)
    return DocumentSaved(saved, merged=merged)


def _page_rows(document: Document, person, page_save: PageSave) -> dict[str, DocumentPageSave]:
    pages = [page_save.page] + ([page_save.took_over.page] if page_save.took_over is not None else [])
    return {row.page: row for row in DocumentPageSave.objects.filter(document=document, person=person, page__in=pages)}


def _carried(document: Document, row: DocumentPageSave) -> tuple[str, str] | None:
    """(title, content) the row's save carried; None when not kept."""
    if not row.carried:
        return None
    written = _base_text(document, row.version)
    if written is None:
        return None
    text = written[1]
    if row.sent_delta:
        text = text_delta.apply_delta(text, text_delta.decode(row.sent_delta))
    return row.sent_title, text


def _repeat_of_the_last_written(
    document: Document, person, page_save: PageSave | None, *, title: str | None, content: str | None
) -> DocumentSaved | None:
    """The page's last written save delivered again (a retry whose first
    try was written, a proxy repeating it): answered as written, nothing
    written twice (docs/adr/0139). "Merged" when the document moved since,
    so the page takes the text it holds now."""
    if page_save is None or person is None:
        return None
    last = _page_rows(document, person, page_save).get(page_save.page)
    if last is None or last.number != page_save.number:
        return None
    carried = _carried(document, last)
    if carried is None:
        return None
    sent = (carried[0] if title is None else title, carried[1] if content is None else content)
    if sent != carried:
        return None
    return DocumentSaved(document, merged=document.version != last.version)


def _unanswered_save_written(document: Document, person, page_save: PageSave | None) -> tuple[str, str] | None:
    """(title, content) the page's last written save carried, when that save
    is one the page had no answer to; None when none of those was written
    (or what it carried is not kept: then the save merges as it would
    have). Refuses a save of the page older than one written.

    A page that took over a left page's unanswered saves (a reload) and has
    none of its own written yet merges against the left page's save, when
    one of those was written (docs/adr/0139)."""
    if page_save is None or person is None:
        return None
    rows = _page_rows(document, person, page_save)
    last = rows.get(page_save.page)
    if last is not None and last.number >= page_save.number:
        raise InvalidInput(
            "A later save from this page was written already, so this earlier one was not: "
            "the later one carried its text on, with what was changed since."
        )
    if last is not None:
        if last.number < page_save.unanswered_from:
            return None  # its answer reached the page: the page's base already has it
        return _carried(document, last)
    took_over = page_save.took_over
    left = rows.get(took_over.page) if took_over is not None else None
    if took_over is None or left is None or left.number < took_over.unanswered_from:
        return None
    return _carried(document, left)


def _record_page_save(document: Document, person, page_save: PageSave | None, *, title: str, content: str) -> None:
    """Keep what this save of the page carried, beside the version it wrote
    (docs/adr/0139), for the page's next save should this one's answer be lost.

    The left page this one took over is barred from then on up to its last
    save: one of its saves arriving late would otherwise be written over
    what the person changed since (her deletion after a reload)."""
    if page_save is None or person is None:
        return
    written = document.content
    delta = "" if content == written else text_delta.encode(text_delta.delta_between(written, content))
    DocumentPageSave.objects.update_or_create(
        document=document,
        person=person,
        page=page_save.page,
        defaults={
            "number": page_save.number,
            "version": document.version,
            "sent_title": title,
            "sent_delta": delta,
            "carried": True,
        },
    )
    took_over = page_save.took_over
    if took_over is None:
        return
    left = DocumentPageSave.objects.filter(document=document, person=person, page=took_over.page).first()
    if left is None:
        DocumentPageSave.objects.create(
            document=document,
            person=person,
            page=took_over.page,
            number=took_over.number,
            version=document.version,
            sent_title="",
            carried=False,
        )
    elif left.number < took_over.number:
        # A save of it written but answered is in this page's base already:
        # nothing to merge against; one unanswered is kept for a second tab
        # going on from the same left page.
        left.carried = left.carried and left.number >= took_over.unanswered_from
        left.number = took_over.number
        left.save(update_fields=["number", "carried", "updated_at"])


def document_restore(*, thread: Thread, version: int, base_version: int | None, person=None) -> DocumentSaved:
    """Make the document read as `version` did: a new edit by the person
    (a new version; the history keeps every one in between).

    `base_version` is the version the person was looking at when they chose
    to restore. If the agent (or another tab) wrote since, the restore is
    merged with that like any stale save: what changed since is kept, and an
    overlap raises `DocumentConflict` with nothing written (docs/adr/0013)."""
    document = Document.objects.filter(thread=thread).only("pk").first()
    kept = _base_text(document, version) if document is not None else None
    if kept is None:
        raise NotFound(f"Version {version} of the document is not kept, so it cannot be restored.")
    title, content = kept
    return document_save(
        thread=thread,
        title=title,
        content=content,
        base_version=base_version,
        author=Author.PERSON,
        person=person,
        restored_from=version,
    )


def _conflict_message(base_version: int | None, current_version: int, *, known: bool, typed_on: bool = False) -> str:
    if typed_on:
        return (
            f"Your last save was merged with changes saved meanwhile (the document is now version {current_version}), "
            "and what you typed since overlaps some of them. Nothing was saved; choose which text to keep where "
            "they overlap."
        )
    if base_version is not None and base_version > current_version:
        # Versions only grow: the page's text names a version this document
        # never had (a database restored from an older backup, say).
        return (
            f"The document is at version {current_version}, and the version {base_version} this text was based on "
            "is unknown to it (newer than the document's), so the two cannot be merged. Nothing was saved; choose "
            "which text to keep."
        )
    if not known:
        return (
            f"The document is now at version {current_version}, and the version {base_version} this text was based on "
            "is not kept, so the two cannot be merged. Nothing was saved; choose which text to keep."
        )
    return (
        f"The document changed since version {base_version} (it is now version {current_version}), and some of the "
        "same passages were edited on both sides. Nothing was saved; choose which text to keep where they overlap."
    )


def passage_matches(text: str, passage: str) -> list[int]:
    """Where `passage` starts in `text`, overlapping occurrences included
    ("aa" is in "aaa" twice), so "exactly once" means one place to edit.
    Only whole characters match: a passage that starts or ends inside one
    of the text's characters (the "👍" of "👍🏽", the "e" of an "e" with a
    combining accent) is not found there, so an edit never lands between
    an emoji and its skin tone or a letter and its accent (docs/adr/0128)."""
    starts, start = [], text.find(passage)
    while start != -1 and passage:
        if graphemes.is_boundary(text, start) and graphemes.is_boundary(text, start + len(passage)):
            starts.append(start)
        start = text.find(passage, start + 1)
    return starts


@transaction.atomic
def document_edit_passage(
    *,
    thread: Thread,
    passage: str,
    replacement: str | None = None,
    insert_after: str | None = None,
    base_version: int | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> DocumentSaved:
    """Replace `passage` with `replacement`, or insert `insert_after` right
    after it (exactly one of the two). The passage must occur exactly once
    in the version the edit is based on (the text its author was shown);
    the edited text is then saved from that version like any other save, so
    what changed since is merged and an overlap raises DocumentConflict
    (docs/adr/0013, 0018). `base_version` None: the current version."""
    if (replacement is None) == (insert_after is None):
        raise InvalidInput("Give either the replacement text or the text to insert, not both.")
    if not isinstance(passage, str) or not passage:
        raise InvalidInput("The passage to find cannot be empty.")
    passage = passage.replace("\r\n", "\n").replace("\r", "\n")
    document = _document_for_update(thread)
    if base_version is not None and not 0 <= base_version <= document.version:
        # The passage is looked for in the text its writer was shown; a
        # version the document never had (versions only grow) names none, so
        # nothing is edited as if it were the current text (docs/adr/0052).
        # Only a version no longer kept is edited as the current text.
        raise InvalidInput(unknown_version_message(base_version, document.version))
    base = _base_text(document, base_version) if base_version is not None else None
    if base is None:
        # No base given, or that version is no longer kept: edit the current text.
        base_version, base_text = document.version, document.content
    else:
        base_text = base[1]
    starts = passage_matches(base_text, passage)
    if len(starts) != 1:
        where = f"version {base_version} of the document" if base_version else "the document"
        advice = (
            "Copy the passage exactly as it stands in the <document> block (same spelling, spaces and line breaks)."
            if not starts
            else "Include more of the surrounding text so the passage matches exactly one place."
        )
        if not starts and passage in base_text:
            advice += (
                " Where it appears, it starts or ends inside a character (an emoji with its skin tone, a flag,"
                " a letter with its accent): include the whole character."
            )
        found = "was not found in" if not starts else f"was found {len(starts)} times in"
        raise InvalidInput(
            f"The passage {found} {where} ({len(starts)} matches); it must match exactly once. Nothing was changed. {advice}"
        )
    start = starts[0]
    end = start + len(passage)
    if replacement is not None:
        content = base_text[:start] + replacement + base_text[end:]
    else:
        # One of the two is given (checked above).
        content = base_text[:end] + insert_after + base_text[end:]  # type: ignore[operator]
    return document_save(
        thread=thread, content=content, base_version=base_version, author=author, token_name=token_name, person=person
    )


# A line that goes on a list or a table: text appended after one and
# starting with another continues it rather than starting a paragraph.
_LIST_ITEM = re.compile(r"\s*([-*+]|\d+[.)])\s")


def _continues(last_line: str, first_line: str) -> bool:
    if last_line.lstrip().startswith("|") and first_line.lstrip().startswith("|"):
        return True
    return bool(_LIST_ITEM.match(last_line) and _LIST_ITEM.match(first_line))


def append_separator(content: str, text: str) -> str:
    """The line breaks put between the document and text appended to it: a
    blank line, so the text is a paragraph of its own (a single line break
    would join it to the last paragraph in Markdown, in the preview and in
    every export), unless the text goes on the list or the table the
    document ends with. Breaks either side already has count."""
    if not content:
        return ""
    trailing = len(content) - len(content.rstrip("\n"))
    leading = len(text) - len(text.lstrip("\n"))
    last_line = content.rstrip("\n").rsplit("\n", 1)[-1]
    first_line = text.lstrip("\n").split("\n", 1)[0]
    wanted = 1 if _continues(last_line, first_line) else 2
    return "\n" * max(0, wanted - trailing - leading)


@transaction.atomic
def document_append(*, thread: Thread, text: str, author: str = Author.SYSTEM, token_name: str = "", person=None) -> Document:
    """Add `text` at the end, as a paragraph of its own (append_separator).
    An append commutes with any other edit, so it needs no base version."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("Text to append cannot be empty.")
    document = _document_for_update(thread)
    content = _clean_content(document.content + append_separator(document.content, text) + text)
    return _write(document, title=document.title, content=content, author=author, token_name=token_name, person=person)
