"""The centre panel's selector: the live document or one artifact of the thread."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.http import require_GET

from .. import panels, selectors
from ..forms import ArtifactChoiceForm, first_error
from ..selectors import Access
from .common import flash, get_thread_for_user


@login_required
@require_GET
def centre_panel(request, thread_id):
    """`?artifact=<id>` shows that artifact; no value (or empty) shows the
    document. `&rows=all`: every row of a table, not only its first (docs/adr/0141)."""
    thread = get_thread_for_user(request, thread_id, Access.VIEW)
    form = ArtifactChoiceForm({"artifact": request.GET.get("artifact", "").strip() or None})
    if not form.is_valid():
        if request.htmx:
            return flash(first_error(form))
        return HttpResponse(first_error(form), status=400, content_type="text/plain")
    selected_id = form.cleaned_data["artifact"]
    if selected_id is not None and selectors.artifact_for(thread=thread, artifact_id=selected_id) is None:
        raise Http404("No such artifact in this thread.")
    all_rows = request.GET.get("rows") == "all"
    context = panels.centre_context(thread=thread, selected_artifact_id=selected_id, all_rows=all_rows)
    return render(request, panels.PANEL_TEMPLATES["centre"], context)


urlpatterns = [
    path("centre/", centre_panel, name="centre"),
]
