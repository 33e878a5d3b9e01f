"""The live document in the centre panel: autosave and conflict recovery.

The save answers with the small save-state fragment (status text plus the
version the next save is based on) and an out-of-band preview, never with
the editor, so the textarea and its caret are left alone while the person
types. A stale save is refused by the service and nothing is overwritten.
"""

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from .. import panels, selectors
from ..errors import DocumentConflict, WorkspaceError
from ..forms import DocumentSaveForm, first_error
from ..markdown import render_markdown
from ..services import document as document_services
from ..text import encodable
from .common import get_thread_for_user

SAVE_STATE = "workspace/panels/centre.html#save_state"
PREVIEW = "workspace/panels/centre.html#preview"


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
                         status: int = 200, with_preview: bool = False) -> HttpResponse:
    """htmx gets 200 so it swaps the message in (the house rule for panel
    errors); any other client gets the real status code."""
    context = {
        "thread": thread,
        "document": document,
        "doc_state": state,
        "doc_message": message,
        "doc_base_version": base_version,
    }
    html = render_to_string(SAVE_STATE, context, request=request)
    if with_preview:
        preview = {"document_html": render_markdown(document.content), "preview_oob": True}
        html += render_to_string(PREVIEW, preview, request=request)
    return HttpResponse(html, status=200 if request.htmx else status)


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
        document = document_services.document_save(
            thread=thread, title=values["title"], content=values["content"], base_version=values["base_version"]
        )
    except DocumentConflict as exc:
        # The person's stale version is kept on the form, so every later
        # autosave is refused too until they choose what to do.
        return _save_state_response(
            request, thread=thread, document=current, state="conflict", message=exc.message,
            base_version=values["base_version"], status=409,
        )
    except WorkspaceError as exc:
        return _save_state_response(
            request, thread=thread, document=current, state="error", message=exc.message + " Nothing was saved.",
            base_version=values["base_version"], status=400,
        )
    return _save_state_response(
        request, thread=thread, document=document, state="saved", base_version=document.version, with_preview=True
    )


def _as_text(value) -> str | None:
    if not isinstance(value, str):
        return None
    # Handed back as typed, but a lone surrogate cannot be sent to the page.
    return encodable(value.replace("\r\n", "\n").replace("\r", "\n"))


@login_required
@require_POST
def document_latest(request, thread_id):
    """Reload the editor with the latest saved document while handing back
    what the person had typed, shown below it, so resolving a conflict never
    loses text. Nothing is written."""
    thread = get_thread_for_user(request, thread_id)
    data = read_body(request)
    title = content = None
    if not isinstance(data, str):
        # What the person typed, as typed: even text the save would refuse
        # (too long, say) is handed back, never dropped.
        title, content = (_as_text(data.get(name)) for name in ("title", "content"))
    document = selectors.document_for(thread=thread)
    unchanged = (title is None or title.strip() == document.title) and (content is None or content == document.content)
    extra = {} if unchanged else {"unsaved_title": title or "", "unsaved_content": content or ""}
    context = panels.centre_context(thread=thread, **extra)
    return render(request, panels.PANEL_TEMPLATES["centre"], context)


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
    path("document/latest/", document_latest, name="document-latest"),
]
