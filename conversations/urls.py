from django.urls import path

from . import archive_views, share_views, views

app_name = "conversations"

urlpatterns = [
    path("", views.thread_list, name="list"),
    path("new/", views.thread_create, name="create"),
    path("switch/", views.thread_switcher, name="switcher"),
    path("layout/", views.layout_save, name="layout"),
    path("import/", archive_views.thread_import, name="import"),
    path("<uuid:thread_id>/export/", archive_views.thread_export, name="export"),
    path("<uuid:thread_id>/rename/", views.thread_rename, name="rename"),
    path("<uuid:thread_id>/delete/", views.thread_delete, name="delete"),
    path("<uuid:thread_id>/share/", share_views.share_dialog, name="share"),
    path("<uuid:thread_id>/share/add/", share_views.share_add, name="share-add"),
    path("<uuid:thread_id>/share/names/<int:pk>/role/", share_views.share_role, name="share-role"),
    path("<uuid:thread_id>/share/names/<int:pk>/remove/", share_views.share_remove, name="share-remove"),
    # A dialog rendered before the names (docs/adr/0137) posts a member's id here.
    path("<uuid:thread_id>/share/<int:pk>/<str:action>/", share_views.share_line_from_before, name="share-line-from-before"),
    path("<uuid:thread_id>/share/link/", share_views.share_link_make, name="share-link-make"),
    path("<uuid:thread_id>/share/link/revoke/", share_views.share_link_revoke, name="share-link-revoke"),
    # The read-only link a thread's owner hands out (docs/adr/0084).
    path("link/<str:key>/", share_views.share_link_open, name="share-link"),
    path("<uuid:thread_id>/mode/", views.thread_mode, name="mode"),
    path("<uuid:thread_id>/model/", views.thread_choose_model, name="model"),
    path("<uuid:thread_id>/staff-view/", views.staff_workspace_page, name="staff-view"),
    path("<uuid:thread_id>/activity/", views.thread_activity, name="activity"),
    path("<uuid:thread_id>/chat/from/<turn:turn_index>/", views.chat_from, name="chat-from"),
    path("<uuid:thread_id>/chat/before/<turn:turn_index>/", views.chat_earlier, name="chat-earlier"),
    path("<uuid:thread_id>/turns/<int:turn_index>/feedback/", views.feedback_turn, name="feedback"),
    path("<uuid:thread_id>/feedback/<int:pk>/", views.feedback_edit, name="feedback-edit"),
    path("<uuid:thread_id>/feedback/<int:pk>/delete/", views.feedback_delete, name="feedback-delete"),
    # A turn's preview: the map lists one per lane, its turn left to fill in (static/js/trajectory.js).
    path("<uuid:thread_id>/trajectory/", views.trajectory_map, name="trajectory-map"),
    path("<uuid:thread_id>/trajectory/<turn:turn_index>/", views.trajectory_turn, name="trajectory-turn"),
    path("<uuid:thread_id>/turns/<int:turn_index>/regenerate/", views.turn_regenerate, name="turn-regenerate"),
    path("<uuid:thread_id>/turns/<int:turn_index>/edit/", views.turn_edit, name="turn-edit"),
]
