"""The shared document: versioned, so a save based on an old version is refused."""

from django.conf import settings
from django.db import transaction

from ..errors import DocumentConflict, InvalidInput
from ..models import DOCUMENT_TITLE_MAX_CHARS, Document, Thread
from ..text import clean_text
from .common import changed


def _document_for_update(thread: Thread) -> Document:
    document, _ = Document.objects.select_for_update().get_or_create(
        thread=thread, defaults={"title": "Untitled", "content": "", "version": 0}
    )
    return document


def _clean_content(content) -> str:
    return clean_text(
        content, label="Document content", max_chars=settings.HAICO_DOCUMENT_MAX_CHARS, allow_empty=True, strip=False
    )


@transaction.atomic
def document_save(
    *, thread: Thread, title: str | None = None, content: str | None = None, base_version: int | None = None
) -> Document:
    """Write the title and/or content. With `base_version` (the person's path),
    a save based on a version that is no longer current is refused."""
    document = _document_for_update(thread)
    if base_version is not None and base_version != document.version:
        raise DocumentConflict(
            "The document changed since you loaded it (someone or the agent edited it). "
            "Your text is kept here; copy what you need, then reload to see the latest version.",
            current_version=document.version,
        )
    if title is not None:
        document.title = clean_text(title, label="Document title", max_chars=DOCUMENT_TITLE_MAX_CHARS)
    if content is not None:
        document.content = _clean_content(content)
    document.version += 1
    document.save()
    changed(thread.pk, "document")
    return document


@transaction.atomic
def document_append(*, thread: Thread, text: str) -> Document:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("Text to append cannot be empty.")
    document = _document_for_update(thread)
    separator = "" if not document.content or document.content.endswith("\n") else "\n"
    document.content = _clean_content(document.content + separator + text)
    document.version += 1
    document.save()
    changed(thread.pk, "document")
    return document
