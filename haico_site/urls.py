from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from conversations import mcp_metadata
from conversations.views import workspace_page

from .csp import csp_report
from .health import healthz

# The error page of a request that failed, and a 503 when the database is away (haico_site.views).
handler500 = "haico_site.views.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    # Where MCP clients look after a 401 at /mcp (RFC 9728; docs/adr/0052).
    path("", include(mcp_metadata.urlpatterns)),
    # Operating it (docs/adr/0058, 0059): no login.
    path("healthz", healthz, name="healthz"),
    path("csp-report/", csp_report, name="csp-report"),
    path("accounts/", include("conversations.account_urls")),
    path("threads/", include("conversations.urls")),
    # The page of one thread: every workspace panel and the chat. Lower apps
    # send people back here by this name after a plain (non-htmx) form post.
    path("threads/<uuid:thread_id>/workspace/", workspace_page, name="thread-page"),
    path("threads/<uuid:thread_id>/workspace/", include("workspace.urls")),
    path("", RedirectView.as_view(pattern_name="conversations:list", permanent=False)),
]
