"""Staff admin for the shared workspace.

Workspace contents belong to the person and the agent and change only
through workspace.services (which keep the plan a valid tree, bump document
versions and feed the live panels), so staff inspect them here read-only.
The one staff write is locking or unlocking a preference; it goes through
the service and is recorded as a moderation action on the thread.
"""

import json

from django.contrib import admin, messages
from django.db import transaction
from django.utils.html import format_html

from conversations import services as conversation_services
from conversations.admin import ReadOnlyAdminMixin
from conversations.models import ModerationAction

from . import services
from .models import Artifact, Document, Objective, Preference, Todo, WorkspaceSnapshot


def _pretty_json(value) -> str:
    return format_html(
        '<pre style="white-space: pre-wrap; margin: 0">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False)
    )


def _excerpt(text: str | None, limit: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def staff_set_preference_locked(*, preference: Preference, locked: bool, staff_user) -> bool:
    """Lock or unlock on behalf of staff and record it; False if it already
    was (or the person deleted it meanwhile), so nothing is recorded."""
    with transaction.atomic():
        current = Preference.objects.select_for_update().filter(pk=preference.pk).first()
        if current is None or current.locked == bool(locked):
            return False
        services.preference_set_locked(preference=current, locked=locked, respect_lock=False)
        conversation_services.moderation_record(
            thread=current.thread,
            staff_user=staff_user,
            action=ModerationAction.Action.LOCK_PREFERENCE if locked else ModerationAction.Action.UNLOCK_PREFERENCE,
            detail=f"Preference '{current.title}'",
        )
    preference.locked = bool(locked)
    return True


@admin.register(Preference)
class PreferenceAdmin(admin.ModelAdmin):
    list_display = ("title", "kind", "locked", "thread", "thread_owner", "position", "updated_at")
    list_display_links = ("title",)
    list_editable = ("locked",)
    list_filter = ("kind", "locked")
    search_fields = ("title", "subtitle", "thread__title", "thread__owner__username", "=thread__id")
    date_hierarchy = "updated_at"
    list_select_related = ("thread", "thread__owner")
    raw_id_fields = ("thread",)
    fields = ("thread", "title", "subtitle", "kind", "locked", "position", "created_at", "updated_at")
    # Only the lock is a staff matter; the wording is the person's.
    readonly_fields = tuple(f for f in fields if f != "locked")
    actions = ("lock_selected", "unlock_selected")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="Owner", ordering="thread__owner__username")
    def thread_owner(self, obj):
        return obj.thread.owner

    def save_model(self, request, obj, form, change):
        # Reached from the change form and from each changed list_editable row.
        if change and "locked" in form.changed_data:
            staff_set_preference_locked(preference=obj, locked=obj.locked, staff_user=request.user)

    def _set_locked(self, request, queryset, locked: bool):
        changed = sum(
            staff_set_preference_locked(preference=p, locked=locked, staff_user=request.user) for p in queryset
        )
        verb = "Locked" if locked else "Unlocked"
        self.message_user(request, f"{verb} {changed} preference(s); each change is recorded.", messages.SUCCESS)

    @admin.action(description="Lock selected preferences", permissions=["change"])
    def lock_selected(self, request, queryset):
        self._set_locked(request, queryset, True)

    @admin.action(description="Unlock selected preferences", permissions=["change"])
    def unlock_selected(self, request, queryset):
        self._set_locked(request, queryset, False)


@admin.register(Objective)
class ObjectiveAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("text_excerpt", "thread", "updated_at")
    search_fields = ("text", "thread__title", "=thread__id")
    date_hierarchy = "updated_at"
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)

    @admin.display(description="Objective")
    def text_excerpt(self, obj):
        return _excerpt(obj.text)


@admin.register(Todo)
class TodoAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("indented_text", "done", "thread", "position", "depth", "updated_at")
    list_filter = ("done", "depth")
    search_fields = ("text", "thread__title", "=thread__id")
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)
    ordering = ("thread", "position")

    @admin.display(description="Step", ordering="position")
    def indented_text(self, obj):
        return format_html('<span style="padding-left: {}em">{}</span>', obj.depth * 1.5, _excerpt(obj.text))


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("title", "thread", "version", "length", "updated_at")
    search_fields = ("title", "content", "thread__title", "=thread__id")
    date_hierarchy = "updated_at"
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)
    fields = ("thread", "title", "version", "updated_at", "content_text")

    @admin.display(description="Characters")
    def length(self, obj):
        return len(obj.content)

    @admin.display(description="Content")
    def content_text(self, obj):
        return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', obj.content)


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("id", "artifact_type", "title", "thread", "turn_index", "created_at")
    list_filter = ("artifact_type",)
    search_fields = ("title", "artifact_type", "thread__title", "=thread__id")
    date_hierarchy = "created_at"
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)
    fields = ("thread", "artifact_type", "title", "turn_index", "created_at", "payload_json")

    @admin.display(description="Payload")
    def payload_json(self, obj):
        return _pretty_json(obj.payload)


@admin.register(WorkspaceSnapshot)
class WorkspaceSnapshotAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Write-once record of what the agent saw at the start of a turn."""

    list_display = ("thread", "turn_index", "message_excerpt", "captured_at")
    search_fields = ("user_message", "thread__title", "=thread__id")
    date_hierarchy = "captured_at"
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)
    fields = (
        "thread",
        "turn_index",
        "captured_at",
        "user_message",
        "objective_text",
        "document_title",
        "document_content_text",
        "preferences_pretty",
        "todos_pretty",
    )

    @admin.display(description="User message")
    def message_excerpt(self, obj):
        return _excerpt(obj.user_message)

    @admin.display(description="Document content")
    def document_content_text(self, obj):
        return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', obj.document_content)

    @admin.display(description="Preferences")
    def preferences_pretty(self, obj):
        return _pretty_json(obj.preferences_json)

    @admin.display(description="Plan")
    def todos_pretty(self, obj):
        return _pretty_json(obj.todos_json)
