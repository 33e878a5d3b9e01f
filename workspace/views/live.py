"""The whole workspace as live patches: what a page asks for after its socket
reconnects, when it may have missed pushes (static/js/live.js). Complete
patches replace the rows a page shows, so it ends up exactly as stored,
without touching an open form or a half-typed "Add" field. A page that
names the newest artifact it lists (`artifacts_through`) and is behind
gets the centre as the push of a new artifact would have brought it: a
push too big for the socket, or sent while it was reconnecting, is not
missing there until a reload."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from .. import panels
from ..selectors import Access, latest_artifact_for
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
    through = request.GET.get("artifacts_through", "")
    if through.isdigit():
        newest = latest_artifact_for(thread=thread)
        if newest is not None and newest.pk > int(through):
            # As render_changes shows a new artifact; a page with unsaved
            # document text keeps it and is offered the artifact instead.
            html += panels.render_panel("centre", thread=thread, oob=True, selected_artifact_id=newest.pk, agent_shown=True)
    return HttpResponse(html)


urlpatterns = [
    path("live/", workspace_state, name="live"),
]
