"""Workspace URLs, all under /threads/<uuid:thread_id>/workspace/.

Each area keeps its own routes next to its views."""

from .views import artifacts, document, objective, page, plan, preferences

app_name = "workspace"

urlpatterns = [
    *page.urlpatterns,
    *objective.urlpatterns,
    *preferences.urlpatterns,
    *plan.urlpatterns,
    *document.urlpatterns,
    *artifacts.urlpatterns,
]
