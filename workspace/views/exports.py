"""Downloads: the document as Markdown, HTML or DOCX, an artifact as JSON or
CSV (docs/adr/0025). Owner only, read only; an unknown format is a clear 400
in plain text, never an error page."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from .. import exports, selectors
from ..selectors import Access
from .common import get_thread_for_user


def download(body: bytes, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    # file_stem keeps names ASCII letters, digits and dashes, so no quoting is needed.
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def refused(message: str) -> HttpResponse:
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


@login_required
@require_GET
def document_export(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    fmt = request.GET.get("format", "")
    if fmt not in exports.DOCUMENT_FORMATS:
        return refused(f"Choose a format: {', '.join(exports.DOCUMENT_FORMATS)}.")
    document = selectors.document_for(thread=thread)
    artifacts = selectors.artifacts_for(thread=thread) if fmt != "markdown" else ()
    author = request.user.get_full_name() or request.user.get_username()
    return download(*exports.export_document(document, fmt, author=author, artifacts=artifacts))


@login_required
@require_GET
def artifact_export(request, thread_id, artifact_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    artifact = selectors.artifact_for(thread=thread, artifact_id=artifact_id)
    if artifact is None:
        raise Http404("No such artifact in this thread.")
    fmt = request.GET.get("format", "")
    if fmt not in exports.ARTIFACT_FORMATS:
        return refused(f"Choose a format: {', '.join(exports.ARTIFACT_FORMATS)}.")
    try:
        return download(*exports.export_artifact(artifact, fmt))
    except exports.ExportRefused as exc:
        return refused(exc.message)


urlpatterns = [
    path("document/export/", document_export, name="document-export"),
    path("artifacts/<int:artifact_id>/export/", artifact_export, name="artifact-export"),
]
