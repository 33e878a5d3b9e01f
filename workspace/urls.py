from django.urls import path

app_name = "workspace"

urlpatterns: list = []  # filled by the UI work
