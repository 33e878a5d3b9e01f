"""Workspace URLs, all under /threads/<uuid:thread_id>/workspace/ (the page
itself, which composes every panel with the chat, is conversations' and is
named "thread-page" in the site URLs).

Each area keeps its own routes next to its views."""

from .views import artifacts, document, exports, live, objective, plan, preferences, snapshots

app_name = "workspace"

urlpatterns = [
    *objective.urlpatterns,
    *preferences.urlpatterns,
    *plan.urlpatterns,
    *document.urlpatterns,
    *artifacts.urlpatterns,
    *exports.urlpatterns,
    *live.urlpatterns,
    *snapshots.urlpatterns,
]
