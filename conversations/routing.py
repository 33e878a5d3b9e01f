from django.urls import path

from .consumers import ThreadConsumer

websocket_urlpatterns: list = [
    path("ws/threads/<uuid:thread_id>/", ThreadConsumer.as_asgi(), name="thread-ws"),
]
