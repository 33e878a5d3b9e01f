"""A thread's archive: download it, or import one as a new thread
(conversations.archive, docs/adr/0025). Both are the signed-in person's own:
exporting someone else's thread is a 404; an import always belongs to the
person importing."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from workspace.archive import ArchiveRefused
from workspace.exports import file_stem
from workspace.selectors import Access, get_thread_for_user_or_404

from . import selectors
from .archive import archive_file, check_size, import_archive, size_text

IMPORT_FIELD = "archive"


@login_required
@require_GET
def thread_export(request, thread_id):
    thread = get_thread_for_user_or_404(user=request.user, thread_id=thread_id, level=Access.OWN)
    archive = archive_file(thread)
    if not archive.importable and request.GET.get("anyway") != "1":
        # Never a file an import here then refuses without a word: the
        # person is told, and may still take it (docs/adr/0100).
        context = {
            "thread": thread,
            "size": size_text(len(archive.content)),
            "limit": size_text(settings.HAICO_ARCHIVE_MAX_BYTES),
            "unpacks_past": len(archive.content) <= settings.HAICO_ARCHIVE_MAX_BYTES,
            "unpacked_limit": size_text(settings.HAICO_ARCHIVE_MAX_UNPACKED_BYTES),
            "refused": archive.refused,
        }
        return render(request, "conversations/archive_too_large.html", context, status=409)
    response = HttpResponse(archive.content, content_type=archive.content_type)
    response["Content-Disposition"] = f'attachment; filename="{file_stem(thread.title, default="thread")}{archive.suffix}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_POST
def thread_import(request):
    upload = request.FILES.get(IMPORT_FIELD)
    try:
        if upload is None:
            raise ArchiveRefused("Choose an archive file to import.")
        check_size(upload.size)  # before reading a byte of it
        thread = import_archive(raw=upload.read(), owner=request.user)
    except ArchiveRefused as exc:
        context = {"page": selectors.thread_list_page(user=request.user), "import_error": exc.message}
        return render(request, "conversations/thread_list.html", context, status=400)
    return redirect("thread-page", thread_id=thread.pk)
