"""The whole workspace as live patches: what a page asks for after its socket
reconnects, when it may have missed pushes (static/js/live.js). Complete
patches replace the rows a page shows, so it ends up exactly as stored,
without touching an open form or a half-typed "Add" field."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from .. import panels
from ..selectors import Access
from .common import get_thread_for_user


@login_required
@require_GET
def workspace_state(request, thread_id):
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    html = (
        panels.render_objective_patch(thread=thread)
        + panels.render_preferences_patch(thread=thread)
        + panels.render_plan_patch(thread=thread)
        + panels.render_document_patch(thread=thread)
    )
    return HttpResponse(html)


urlpatterns = [
    path("live/", workspace_state, name="live"),
]
