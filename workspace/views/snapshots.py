"""The owner's JSON reads of the per-turn snapshots (docs/adr/0015, 0072): the
compact list and one snapshot as captured. Another person's thread, or a
turn with no snapshot, is a 404."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.urls import path
from django.views.decorators.http import require_GET

from .. import selectors
from ..selectors import Access
from .common import get_thread_for_user


@login_required
@require_GET
def snapshot_list(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    return JsonResponse(selectors.snapshot_index_for(thread=thread), safe=False)


@login_required
@require_GET
def snapshot_detail(request, thread_id, turn_index):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    snapshot = selectors.snapshot_for(thread=thread, turn_index=turn_index)
    if snapshot is None:
        raise Http404("No snapshot for that turn.")
    return JsonResponse(
        {
            "id": snapshot.pk,
            "thread_id": str(thread.pk),
            "turn_index": snapshot.turn_index,
            "user_message": snapshot.user_message,
            "captured_at": snapshot.captured_at,
            "objective_text": snapshot.objective_text,
            "document_title": snapshot.document_title,
            "document_content": snapshot.document_content,
            "preferences_json": snapshot.preferences_json,
            "todos_json": snapshot.todos_json,
        }
    )


urlpatterns = [
    path("snapshots/", snapshot_list, name="snapshots"),
    path("snapshots/<int:turn_index>/", snapshot_detail, name="snapshot"),
]
