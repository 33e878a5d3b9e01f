from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("conversations.account_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("threads/", include("conversations.urls")),
    path("threads/<uuid:thread_id>/workspace/", include("workspace.urls")),
    path("", RedirectView.as_view(pattern_name="conversations:list", permanent=False)),
]
