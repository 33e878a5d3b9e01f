from django.urls import path

app_name = "conversations"

urlpatterns: list = []  # filled by the UI work
