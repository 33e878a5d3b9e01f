"""The live document in the centre panel: autosave, merges, the conflict view,
and the history (every kept version, the diff of two, restoring one).

The save answers with the small save-state fragment (status text plus the
version the next save is based on) and out-of-band the preview and the
conflict view, never with the editor, so the textarea and its caret are left
alone while the person types. A save based on an older version is merged
with what changed since (docs/adr/0013): merged cleanly, the fragment also
carries the merged text for static/js/document_editor.js to put in the editor; where
both sides edited the same passage nothing is written and the one conflict
view shows both versions with those parts marked, and "Keep mine", "Keep
theirs" and "Keep both", which save again with that choice.

The history is a region beside the editor, outside its form: opening it or
comparing versions never touches the editor's text. Restoring is a save by
the person based on the version the editor holds, merged like any other.
"""

import json

from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import path
from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import panels, selectors
from ..errors import DocumentConflict, NotFound, WorkspaceError
from ..forms import (
    DocumentDiffForm,
    DocumentPreviewForm,
    DocumentRestoreForm,
    DocumentReviewForm,
    DocumentSaveForm,
    first_error,
)
from ..markdown import render_markdown
from ..models import DocumentRevision
from ..selectors import Access
from ..services import document as document_services
from ..services import review as review_services
from .common import get_thread_for_user

SAVE_STATE = "workspace/panels/centre.html#save_state"
PREVIEW = "workspace/panels/centre.html#preview"
CONFLICT = "workspace/panels/centre.html#conflict"
HISTORY = "workspace/panels/centre.html#history"
DIFF = "workspace/panels/centre.html#diff"


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


def _save_state_response(
    request,
    *,
    thread,
    document,
    state: str,
    message: str = "",
    base_version: int | str,
    status: int = 200,
    with_preview: bool = False,
    merged: bool = False,
    conflict: dict | None = None,
) -> HttpResponse:
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
    thread = get_thread_for_user(request, thread_id, Access.EDIT)
    current = selectors.document_for(thread=thread)
    data = read_body(request)
    form = DocumentSaveForm(data) if not isinstance(data, str) else None
    if form is None or not form.is_valid():
        return _save_state_response(
            request,
            thread=thread,
            document=current,
            state="error",
            # No form: data is the str saying why.
            message=data if form is None else first_error(form) + " Nothing was saved.",  # type: ignore[arg-type]
            base_version=_submitted_version(data),
            status=400,
        )
    values = form.cleaned_data
    try:
        saved = document_services.document_save(
            thread=thread,
            title=values["title"],
            content=values["content"],
            base_version=values["base_version"],
            author=DocumentRevision.Author.PERSON,
            resolve=values["resolve"],
            base_content=values["base_content"],
            content_splice=values["content_splice"],
            person=request.user,
            page_save=values["page_save"],
        )
    except DocumentConflict as exc:
        # The save stays based on the version the person edited, so the
        # next one (edited, or with a choice) is merged against it again.
        return _save_state_response(
            request,
            thread=thread,
            document=current,
            state="conflict",
            message=exc.message,
            base_version=values["base_version"],
            status=409,
            conflict=conflict_context(exc),
        )
    except WorkspaceError as exc:
        return _save_state_response(
            request,
            thread=thread,
            document=current,
            state="error",
            message=exc.message + " Nothing was saved.",
            base_version=values["base_version"],
            status=400,
        )
    document = saved.document
    return _save_state_response(
        request,
        thread=thread,
        document=document,
        state="merged" if saved.merged else "saved",
        base_version=document.version,
        with_preview=True,
        merged=saved.merged,
    )


NOTHING_TO_PREVIEW = '<p class="muted">Nothing to preview yet.</p>'


@login_required
@require_http_methods(["GET", "POST"])
def document_preview(request, thread_id):
    """The document as sanitised HTML, by the one renderer (workspace.markdown).

    GET: the saved document, a long document's preview, which the page asks
    for once it has loaded (panels.PREVIEW_INLINE_MAX_CHARS). POST: the text
    the editor holds right now, for the preview that follows the typing
    (static/js/document_editor.js); nothing is saved, and text over the document's
    limit is refused like a save of it would be."""
    thread = get_thread_for_user(request, thread_id, Access.VIEW if request.method == "GET" else Access.EDIT)
    if request.method == "GET":
        return HttpResponse(render_markdown(selectors.document_for(thread=thread).content) or NOTHING_TO_PREVIEW)
    data = read_body(request)
    form = DocumentPreviewForm(data) if not isinstance(data, str) else None
    if form is None or not form.is_valid():
        message = data if form is None else first_error(form)
        html = format_html('<p class="doc-alert doc-alert-error" role="alert">No preview: {}</p>', message)
        return HttpResponse(html, status=200 if request.htmx else 400)
    return HttpResponse(render_markdown(form.cleaned_data["content"]) or NOTHING_TO_PREVIEW)


# --- history: every kept version, what changed between two, restoring one -------------


def _diff_context(thread, *, old: int | None, new: int | None, current: int) -> dict:
    """The diff of `old` to `new`; `new` None is the current version, `old`
    None the version before `new`."""
    new = current if new is None else new
    old = max(new - 1, 0) if old is None else old
    diff = selectors.document_diff(thread=thread, old_version=old, new_version=new)
    message = (
        ""
        if diff is not None
        else (
            f"Version {old if selectors.document_version_text(thread=thread, version=old) is None else new} "
            "of the document is not kept, so it cannot be compared."
        )
    )
    # Older than the list reaches: this comparison offers its restore (the list's entries have their own).
    restore_here = diff is not None and new == current and old not in (0, current)
    restore_here = restore_here and not selectors.document_version_listed(thread=thread, version=old)
    return {
        "thread": thread,
        "diff": diff,
        "diff_old": old,
        "diff_new": new,
        "current_version": current,
        "diff_message": message,
        "diff_restore": restore_here,
    }


def _history_html(request, thread, *, message: str = "", alert: bool = False) -> str:
    """The history region, with what the last edit changed: after a restore
    of an old version, the whole document, shown by its first changes like
    any comparison (docs/adr/0138)."""
    history = selectors.document_history(thread=thread)
    context = {
        "thread": thread,
        "history": history,
        "history_message": message,
        "history_alert": alert,
        **_diff_context(thread, old=None, new=None, current=history.current_version),
    }
    return render_to_string(HISTORY, context, request=request)


@login_required
@require_GET
def document_history(request, thread_id):
    """The history region: the kept versions, newest first, each with
    "Compare with now" and "Restore this version", and what the last edit
    changed. Loaded beside the editor, which it never touches."""
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    return HttpResponse(_history_html(request, thread))


@login_required
@require_GET
def document_diff(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    form = DocumentDiffForm(request.GET)
    current = selectors.document_for(thread=thread).version
    if not form.is_valid():
        context = {"thread": thread, "diff": None, "diff_message": first_error(form), "current_version": current}
        return HttpResponse(render_to_string(DIFF, context, request=request), status=200 if request.htmx else 400)
    context = _diff_context(thread, old=form.cleaned_data["old"], new=form.cleaned_data["new"], current=current)
    # The compare form then names the versions shown, whichever control asked.
    context["compare_fields_oob"] = bool(request.htmx)
    status = 200 if request.htmx or context["diff"] is not None else 404
    return HttpResponse(render_to_string(DIFF, context, request=request), status=status)


def saves_undone_sentence(version: int, undone: list[selectors.SavesUndone]) -> str:
    """Tells the person who restored `version` whose saves since it the
    restore took out of the text (docs/adr/0164)."""
    parts = []
    for saves in undone:
        name = saves.person_name or "someone"
        if saves.saves == 1:
            parts.append(f"{name} (version {saves.first_version})")
        else:
            parts.append(f"{name} ({saves.saves} saves, versions {saves.first_version} to {saves.last_version})")
    people = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"It undid what {people} saved after version {version}; the history keeps every version."


@login_required
@require_POST
def document_restore(request, thread_id):
    """A new edit by the person with the chosen version's title and text,
    based on the version their page showed (a concurrent edit is merged).
    htmx gets the refreshed history and the document's new text as a live
    patch (static/js/document_editor.js puts it in the editor, as it does with the
    same patch from the socket)."""
    thread = get_thread_for_user(request, thread_id, Access.EDIT)
    form = DocumentRestoreForm(request.POST)
    error, status = None, 400
    if not form.is_valid():
        error = first_error(form) + " Nothing was restored."
    else:
        version = form.cleaned_data["version"]
        try:
            saved = document_services.document_restore(
                thread=thread, version=version, base_version=form.cleaned_data["base_version"], person=request.user
            )
        except DocumentConflict as exc:
            status = 409
            error = (
                f"The document changed while you looked (it is now version {exc.current_version}), in passages "
                f"where version {version} differs too. Nothing was restored; look at the latest changes and "
                "restore again if you still want it."
            )
        except WorkspaceError as exc:
            error = exc.message + " Nothing was restored."
    if not request.htmx:
        if error is None:
            return redirect("thread-page", thread_id=thread.pk)
        return HttpResponse(error, status=status, content_type="text/plain")
    if error is not None:
        return HttpResponse(_history_html(request, thread, message=error, alert=True))
    message = f"Version {version} restored as version {saved.document.version}."
    if saved.merged:
        message = f"Version {version} restored as version {saved.document.version}, merged with the changes saved meanwhile."
    # The page holds the version it restored from (its base): the answer
    # carries only what differs from that text (docs/adr/0138).
    base = form.cleaned_data["base_version"]
    undone = selectors.document_saves_a_restore_undid(
        thread=thread,
        restored=version,
        through=base if base is not None else saved.document.version - 1,
        restorer=request.user,
    )
    if undone:
        message += " " + saves_undone_sentence(version, undone)
    shown = selectors.document_version_text(thread=thread, version=base) if base is not None else None
    since = (base, shown[1]) if shown is not None else None
    return HttpResponse(
        _history_html(request, thread, message=message) + panels.render_document_patch(thread=thread, since=since)
    )


# --- the review of an agent turn's changes: Keep / Undo per hunk (docs/adr/0019) -----------


def _review_answer(request, thread_id, answer):
    """htmx gets the review as it now stands, with the answer (a refusal in
    an alert), and the document's patch (the new text after an undo, which
    static/js/document_editor.js puts in the editor like any other); a plain post the
    page, or the refusal as text with its status."""
    thread = get_thread_for_user(request, thread_id, Access.EDIT)
    form = DocumentReviewForm(request.POST)
    error, status, message = None, 400, ""
    if not form.is_valid():
        error = first_error(form) + " Nothing was changed."
    else:
        try:
            answered = answer(
                thread=thread, turn_index=form.cleaned_data["turn"], hunk=form.cleaned_data["hunk"], person=request.user
            )
            message = answered.message
        except WorkspaceError as exc:
            error, status = exc.message, 404 if isinstance(exc, NotFound) else 409
    if not request.htmx:
        if error is None:
            return redirect("thread-page", thread_id=thread.pk)
        return HttpResponse(error, status=status, content_type="text/plain")
    review = panels.render_review(thread=thread, message=error or message, alert=error is not None, request=request)
    return HttpResponse(review + panels.render_document_patch(thread=thread))


@login_required
@require_POST
def document_review_keep(request, thread_id):
    return _review_answer(request, thread_id, review_services.review_keep)


@login_required
@require_POST
def document_review_undo(request, thread_id):
    return _review_answer(request, thread_id, review_services.review_undo)


urlpatterns = [
    path("document/history/", document_history, name="document-history"),
    path("document/history/diff/", document_diff, name="document-diff"),
    path("document/history/restore/", document_restore, name="document-restore"),
    path("document/preview/", document_preview, name="document-preview"),
    path("document/review/keep/", document_review_keep, name="document-review-keep"),
    path("document/review/undo/", document_review_undo, name="document-review-undo"),
    path("document/save/", document_save, name="document-save"),
]
