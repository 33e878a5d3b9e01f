from django.urls import path

from .consumers import StaffThreadConsumer, ThreadConsumer

websocket_urlpatterns: list = [
    path("ws/threads/<uuid:thread_id>/", ThreadConsumer.as_asgi(), name="thread-ws"),
    path("ws/staff/threads/<uuid:thread_id>/", StaffThreadConsumer.as_asgi(), name="staff-thread-ws"),
]
