"""The shared document (centre panel).

update_document (and the targeted replace_in_document / insert_in_document)
is based on the document version the model was shown: the
prompt middleware records it on the run's context before every model call
(agent.context.Seen), so a paragraph the person typed meanwhile is merged
in, never overwritten, and an edit of the same passage is refused with what
the model needs to redo it (docs/adr/0013). The schema has no version
argument: `{content, title?}` is a stable interface (docs/adr/0072),
and the version the run showed the model is known for certain, where a
number the model copies back may be wrong.
"""

from workspace import selectors
from workspace.errors import DocumentConflict, InvalidInput
from workspace.services import document as document_services

from ..context import AGENT_AUTHOR, Author
from .decorator import EditOverlapped, workspace_tool
from .schemas import (
    DOCUMENT_READ_MAX_CHARS,
    AppendToDocumentArgs,
    InsertInDocumentArgs,
    ReadDocumentArgs,
    ReplaceInDocumentArgs,
    UpdateDocumentArgs,
)

# How much of the current text around each conflict the failure shows, and
# how many conflicts at most: enough to redo the edit, not the whole document.
CONTEXT_CHARS = 150
PART_MAX_CHARS = 400
MAX_CONFLICTS_SHOWN = 5


@workspace_tool(
    name="update_document",
    description="Replace the whole shared document (and optionally its title). "
    "Use for restructuring or large rewrites; pass the complete new text.",
    args_schema=UpdateDocumentArgs,
    edits_document_text=True,
    authored=True,
    destructive=True,
    idempotent=True,
)
def update_document(thread, *, content: str, title: str | None = None, seen=None, author: Author = AGENT_AUTHOR) -> str:
    if seen is not None and not seen.saw_the_whole_document():
        # Written from the part the prompt shows, the new text would leave
        # out the rest, and the merge would take that as deleted (docs/adr/0109).
        raise InvalidInput(
            f"Nothing was written: update_document replaces the whole document, and you have not seen all of it "
            f"(version {seen.document_version} has {seen.document_length} characters; the <document> block shows the "
            f"first {seen.document_shown_chars}). Read the rest with read_document first, or change only what you "
            "need with replace_in_document, insert_in_document or append_to_document."
        )
    base_version = seen.document_version if seen is not None else None
    try:
        saved = document_services.document_save(
            thread=thread,
            title=title,
            content=content,
            base_version=base_version,
            author=author.kind,
            token_name=author.token_name,
            person=author.person,
        )
    except DocumentConflict as exc:
        raise _refusal(thread, exc) from exc
    document = saved.document
    if seen is not None:
        seen.wrote(document.version, from_whole=True, merged=saved.merged)
    if saved.merged:
        own = only_own_edits_between(thread, after_version=base_version or 0, before_version=document.version)
        whose = "your own other edits of this step" if own else "the person's concurrent edits"
        return (
            f"Saved the document '{document.title}' as version {document.version}, merged with {whose}: you wrote "
            f"from version {base_version}, and what was changed since is kept, so the document now differs from the "
            f"text you sent ({len(document.content):,} characters). The next workspace block shows it."
        )
    return f"Replaced the document '{document.title}' ({len(document.content):,} characters, version {document.version})."


def _refusal(thread, exc: DocumentConflict) -> Exception:
    """What the model (or MCP client) is told of a save that conflicted. A
    base above the current version (versions only grow) is one the document
    never had: the person edited nothing, so it is not reported as their
    overlap but as an unknown version (docs/adr/0052)."""
    if exc.base_version is not None and exc.base_version > exc.current_version:
        return InvalidInput(document_services.unknown_version_message(exc.base_version, exc.current_version))
    return EditOverlapped(conflict_report(exc, own=_own_overlap(thread, exc)))


def _own_overlap(thread, exc: DocumentConflict) -> bool:
    """Whether the versions written since the one the model was shown, up
    to the current one, are all the agent's own."""
    if exc.base_version is None:
        return False
    return only_own_edits_between(thread, after_version=exc.base_version, before_version=exc.current_version + 1)


def _excerpt(text: str, limit: int = PART_MAX_CHARS) -> str:
    return text if len(text) <= limit else text[: limit // 2] + " […] " + text[-limit // 2 :]


def _around(text: str, start: int, end: int, part: str) -> str:
    """`part` (at start:end of `text`) between ⟦ ⟧, with some text either side."""
    before = text[max(0, start - CONTEXT_CHARS) : start]
    after = text[end : end + CONTEXT_CHARS]
    lead = "…" if start > CONTEXT_CHARS else ""
    tail = "…" if end + CONTEXT_CHARS < len(text) else ""
    return f"{lead}{before}⟦{_excerpt(part)}⟧{after}{tail}"


def only_own_edits_between(thread, *, after_version: int, before_version: int) -> bool:
    """Whether every version after `after_version` and before
    `before_version` is the agent's. Only the agent writes as the agent
    while its turn runs: such versions are this turn's other calls (several
    edits in one reply), not the person's, and the model must not be told
    (and tell the person) that they edited anything."""
    between = selectors.document_authors_between(thread=thread, after_version=after_version, before_version=before_version)
    return between == {AGENT_AUTHOR.kind}


def conflict_report(exc: DocumentConflict, *, own: bool = False) -> str:
    """The failure the model reads: nothing was written, and for each
    overlap the current text around it and its own version of that part.
    `own`: every version written since the model's was the agent's own
    (only_own_edits_between)."""
    if own:
        lead = (
            f"Nothing was written: your own other edits of this step changed the same passages of the document "
            f"(you wrote from version {exc.base_version}; it is now version {exc.current_version}). "
            f"Redo your edit on the current text (version {exc.current_version}, in the next workspace block) if it "
            "is still needed. The overlapping parts are marked ⟦ ⟧:"
        )
    else:
        lead = (
            f"Nothing was written: the person edited the same passages of the document while you were writing "
            f"(you wrote from version {exc.base_version}; it is now version {exc.current_version}). "
            f"Redo your edit on the current text (version {exc.current_version}, in the next workspace block), "
            "keeping the person's changes. The overlapping parts are marked ⟦ ⟧:"
        )
    lines = [lead]
    if exc.title_conflict:
        yours, theirs = exc.title_conflict
        lines.append(f"- Title: now “{theirs}”; yours “{yours}”.")
    for n, conflict in enumerate(exc.conflicts[:MAX_CONFLICTS_SHOWN], start=1):
        current = _around(exc.current_content, conflict.start, conflict.end, conflict.theirs)
        yours = _around(exc.submitted_content, conflict.ours_start, conflict.ours_end, conflict.ours)
        lines.append(f"- Overlap {n}, current text: {current!r}\n  your text: {yours!r}")
    hidden = len(exc.conflicts) - MAX_CONFLICTS_SHOWN
    if hidden > 0:
        lines.append(f"- and {hidden} more overlap{'s' if hidden > 1 else ''}.")
    return "\n".join(lines)


@workspace_tool(
    name="append_to_document",
    description="Add text to the end of the shared document. Use for incremental additions.",
    args_schema=AppendToDocumentArgs,
    authored=True,
)
def append_to_document(thread, *, text: str, author: Author = AGENT_AUTHOR) -> str:
    document = document_services.document_append(
        thread=thread, text=text, author=author.kind, token_name=author.token_name, person=author.person
    )
    return f"Appended {len(text):,} characters to '{document.title}' (now {len(document.content):,} characters)."


def _edit_passage(thread, seen, author: Author, **edit) -> str:
    """A targeted edit, based on the version the model was shown like
    update_document (docs/adr/0018)."""
    base_version = seen.document_version if seen is not None else None
    try:
        saved = document_services.document_edit_passage(
            thread=thread,
            base_version=base_version,
            author=author.kind,
            token_name=author.token_name,
            person=author.person,
            **edit,
        )
    except DocumentConflict as exc:
        raise _refusal(thread, exc) from exc
    document = saved.document
    if seen is not None:
        seen.wrote(document.version, from_whole=seen.saw_the_whole_document(), merged=saved.merged)
    merged = ""
    if saved.merged:
        own = only_own_edits_between(thread, after_version=base_version or 0, before_version=document.version)
        whose = "your own other edits of this step" if own else "the person's concurrent edits"
        merged = f" It was merged with {whose}; the next workspace block shows the result."
    return f"'{document.title}' is now version {document.version} ({len(document.content):,} characters).{merged}"


@workspace_tool(
    name="replace_in_document",
    description="Replace one exact passage of the shared document with new text. Prefer it to update_document "
    "for small edits; the passage must occur exactly once.",
    args_schema=ReplaceInDocumentArgs,
    edits_document_text=True,
    authored=True,
    destructive=True,
)
def replace_in_document(thread, *, old_text: str, new_text: str, seen=None, author: Author = AGENT_AUTHOR) -> str:
    summary = _edit_passage(thread, seen, author, passage=old_text, replacement=new_text)
    return f"Replaced one passage ({len(old_text):,} characters with {len(new_text):,}). {summary}"


@workspace_tool(
    name="insert_in_document",
    description="Insert text right after one exact passage of the shared document. Prefer it to update_document "
    "for additions in the middle; the passage must occur exactly once.",
    args_schema=InsertInDocumentArgs,
    edits_document_text=True,
    authored=True,
)
def insert_in_document(thread, *, after_text: str, text: str, seen=None, author: Author = AGENT_AUTHOR) -> str:
    summary = _edit_passage(thread, seen, author, passage=after_text, insert_after=text)
    return f"Inserted {len(text):,} characters after the passage. {summary}"


@workspace_tool(
    name="read_document",
    description="Read part of the shared document by character position. The <document> block shows only the "
    "first 30000 characters of a longer document; read the rest with this.",
    args_schema=ReadDocumentArgs,
    read_only=True,
    uses_seen=True,
)
def read_document(thread, *, start: int = 0, length: int = DOCUMENT_READ_MAX_CHARS, seen=None) -> str:
    document = selectors.document_for(thread=thread)
    total = len(document.content)
    if total == 0:
        return f"The document '{document.title}' is empty (version {document.version})."
    if start >= total:
        raise InvalidInput(f"start={start} is past the end: the document has {total} characters (version {document.version}).")
    end = min(total, start + length)
    if seen is not None:
        seen.document_read.append((document.version, start, end))
    after = f"{total - end} more characters follow: read on from start={end}." if end < total else "That is the end."
    return (
        f"Characters {start} to {end} of {total} of '{document.title}' (version {document.version}). {after}\n\n"
        f"{document.content[start:end]}"
    )
