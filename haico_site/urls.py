from django.contrib import admin
from django.contrib.auth import urls as auth_urls
from django.urls import include, path
from django.views.generic import RedirectView

from conversations.views import workspace_page

# Django's account pages, but the login: conversations.account_urls has its
# own, which sends someone already signed in on to their threads.
AUTH_PAGES = [pattern for pattern in auth_urls.urlpatterns if pattern.name != "login"]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("conversations.account_urls")),
    path("accounts/", include(AUTH_PAGES)),
    path("threads/", include("conversations.urls")),
    # The page of one thread: every workspace panel and the chat. Lower apps
    # send people back here by this name after a plain (non-htmx) form post.
    path("threads/<uuid:thread_id>/workspace/", workspace_page, name="thread-page"),
    path("threads/<uuid:thread_id>/workspace/", include("workspace.urls")),
    path("", RedirectView.as_view(pattern_name="conversations:list", permanent=False)),
]
