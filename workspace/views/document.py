"""The live document in the centre panel: autosave, merges and the conflict view.

The save answers with the small save-state fragment (status text plus the
version the next save is based on) and out-of-band the preview and the
conflict view, never with the editor, so the textarea and its caret are left
alone while the person types. A save based on an older version is merged
with what changed since (docs/adr/0013): merged cleanly, the fragment also
carries the merged text for static/js/centre.js to put in the editor; where
both sides edited the same passage nothing is written and the one conflict
view shows both versions with those parts marked, and "Keep mine", "Keep
theirs" and "Keep both", which save again with that choice.
"""

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.urls import path
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from .. import selectors
from ..errors import DocumentConflict, WorkspaceError
from ..forms import DocumentSaveForm, first_error
from ..markdown import render_markdown
from ..models import DocumentRevision
from ..services import document as document_services
from .common import get_thread_for_user

SAVE_STATE = "workspace/panels/centre.html#save_state"
PREVIEW = "workspace/panels/centre.html#preview"
CONFLICT = "workspace/panels/centre.html#conflict"


def read_body(request) -> dict | str:
    """The submitted fields, from a form post or a JSON object; or a message
    saying why the body cannot be read."""
    if request.content_type == "application/json":
        try:
            data = json.loads(request.body or b"")
        except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deeply
            return "The request body is not valid JSON."
        return data if isinstance(data, dict) else "The request body must be a JSON object."
    try:
        return request.POST
    except RequestDataTooBig:
        return "The document is too long to send; nothing was saved."


def _save_state_response(request, *, thread, document, state: str, message: str = "", base_version: int | str,
                         status: int = 200, with_preview: bool = False, merged: bool = False,
                         conflict: dict | None = None) -> HttpResponse:
    """htmx gets 200 so it swaps the message in (the house rule for panel
    errors); any other client gets the real status code."""
    context = {
        "thread": thread,
        "document": document,
        "doc_state": state,
        "doc_message": message,
        "doc_base_version": base_version,
        "doc_merged": merged,
    }
    html = render_to_string(SAVE_STATE, context, request=request)
    if with_preview:
        preview = {"document_html": render_markdown(document.content), "preview_oob": True}
        html += render_to_string(PREVIEW, preview, request=request)
    if state != "error":
        # A save that went through closes the conflict view; a conflict replaces it.
        html += render_to_string(CONFLICT, {"conflict": conflict, "conflict_oob": True}, request=request)
    return HttpResponse(html, status=200 if request.htmx else status)


def _marked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` escaped, each (start, end) span in a <mark> (an empty one
    where the other side added text and this one has none)."""
    parts, at = [], 0
    for start, end in spans:
        parts.append(escape(text[at:start]))
        parts.append(format_html('<mark class="doc-conflict-part">{}</mark>', text[start:end]))
        at = end
    parts.append(escape(text[at:]))
    return mark_safe("".join(parts))


def conflict_context(exc: DocumentConflict) -> dict:
    """Both versions for the conflict view, their overlapping parts marked."""
    return {
        "message": exc.message,
        "current_version": exc.current_version,
        "count": len(exc.conflicts),
        "ours_html": _marked(exc.submitted_content, [(c.ours_start, c.ours_end) for c in exc.conflicts]),
        "theirs_html": _marked(exc.current_content, [(c.start, c.end) for c in exc.conflicts]),
        "title_conflict": exc.title_conflict,
    }


def _submitted_version(data) -> int | str:
    """The version the person's form was based on, kept as is on an error
    response; blank when unknown, which refuses later saves rather than
    letting one overwrite a newer version."""
    value = data.get("base_version") if hasattr(data, "get") else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    # isdigit() is also true of "²", which int() refuses.
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value)
    return ""


@login_required
@require_POST
def document_save(request, thread_id):
    thread = get_thread_for_user(request, thread_id)
    current = selectors.document_for(thread=thread)
    data = read_body(request)
    form = DocumentSaveForm(data) if not isinstance(data, str) else None
    if form is None or not form.is_valid():
        return _save_state_response(
            request, thread=thread, document=current, state="error",
            message=data if form is None else first_error(form) + " Nothing was saved.",
            base_version=_submitted_version(data), status=400,
        )
    values = form.cleaned_data
    try:
        saved = document_services.document_save(
            thread=thread, title=values["title"], content=values["content"], base_version=values["base_version"],
            author=DocumentRevision.Author.PERSON, resolve=values["resolve"],
        )
    except DocumentConflict as exc:
        # The save stays based on the version the person edited, so the
        # next one (edited, or with a choice) is merged against it again.
        return _save_state_response(
            request, thread=thread, document=current, state="conflict", message=exc.message,
            base_version=values["base_version"], status=409, conflict=conflict_context(exc),
        )
    except WorkspaceError as exc:
        return _save_state_response(
            request, thread=thread, document=current, state="error", message=exc.message + " Nothing was saved.",
            base_version=values["base_version"], status=400,
        )
    document = saved.document
    return _save_state_response(
        request, thread=thread, document=document, state="merged" if saved.merged else "saved",
        base_version=document.version, with_preview=True, merged=saved.merged,
    )


@login_required
@require_GET
def document_preview(request, thread_id):
    """The saved document as sanitised HTML: a long document's preview, which
    the page asks for once it has loaded (panels.PREVIEW_INLINE_MAX_CHARS)."""
    thread = get_thread_for_user(request, thread_id)
    html = render_markdown(selectors.document_for(thread=thread).content)
    return HttpResponse(html or '<p class="muted">Nothing to preview yet.</p>')


urlpatterns = [
    path("document/preview/", document_preview, name="document-preview"),
    path("document/save/", document_save, name="document-save"),
]
