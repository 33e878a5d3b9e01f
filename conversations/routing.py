from django.urls import path

websocket_urlpatterns: list = [
    # ws/threads/<uuid>/ is added by the thread consumer (agent turn issue).
]
