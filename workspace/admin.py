"""Staff admin for the shared workspace, read-only.

Workspace contents belong to the person and the agent and change only
through workspace.services (which keep the plan a valid tree, bump document
versions and announce every change to the open tabs), so staff inspect them
here. The staff writes (locking a preference, moderating a thread) are
recorded moderation actions: they live in conversations/admin.py.
"""

import json

from django.contrib import admin
from django.db.models.functions import Length
from django.forms.models import BaseInlineFormSet
from django.urls import reverse
from django.utils.html import format_html

from .models import Artifact, Document, DocumentRevision, Objective, ObjectiveRevision, PlanChange, Todo, WorkspaceSnapshot

# The lists of a thread's rows show the most recently active threads first.
# The models order by the thread's column instead, which needs no join
# (docs/adr/0099).
RECENT_THREADS_FIRST = ("-thread__last_activity_at", "thread_id")


class ReadOnlyAdminMixin:
    """View-only: records written by the app (or by staff actions) that
    nobody should add, edit or remove by hand."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def _pretty_json(value) -> str:
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))


def excerpt(text: str | None, limit: int = 80) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@admin.register(Objective)
class ObjectiveAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("text_excerpt", "thread", "updated_at")
    list_filter = ("updated_at",)
    search_fields = ("text", "thread__title", "=thread__id")
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)

    @admin.display(description="Objective")
    def text_excerpt(self, obj):
        return excerpt(obj.text)


@admin.register(ObjectiveRevision)
class ObjectiveRevisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Write-once: every value the objective has had, by whom and when."""

    list_display = ("text_excerpt", "author", "person_name", "token_name", "turn_index", "thread", "created_at")
    list_filter = ("author", "created_at")
    ordering = RECENT_THREADS_FIRST + ("-id",)
    search_fields = ("text", "thread__title", "person_username", "=thread__id")
    list_select_related = ("thread", "person")
    raw_id_fields = ("thread",)
    fields = ("thread", "author", "person_name", "person_username", "token_name", "turn_index", "created_at", "text")
    readonly_fields = fields

    @admin.display(description="Objective")
    def text_excerpt(self, obj):
        return excerpt(obj.text)


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
        return format_html('<span style="padding-left: {}em">{}</span>', obj.depth * 1.5, excerpt(obj.text))


@admin.register(PlanChange)
class PlanChangeAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Write-once: every change of a plan, by whom and when (docs/adr/0090)."""

    list_display = ("summary_excerpt", "action", "author", "person_name", "token_name", "turn_index", "thread", "created_at")
    list_filter = ("action", "author", "created_at")
    ordering = RECENT_THREADS_FIRST + ("-id",)
    search_fields = ("summary", "thread__title", "person_username", "=thread__id")
    list_select_related = ("thread", "person")
    raw_id_fields = ("thread",)
    fields = ("thread", "action", "author", "person_name", "person_username", "token_name", "turn_index", "created_at", "summary")
    readonly_fields = fields

    @admin.display(description="Change")
    def summary_excerpt(self, obj):
        return excerpt(obj.summary)


# A document saved all day has thousands of versions: its page lists the
# latest, and links to the list of all of them.
ADMIN_VERSIONS_SHOWN = 50


class LatestRevisionsFormSet(BaseInlineFormSet):
    def get_queryset(self):
        # Read once: the formset asks for its rows for every form it builds.
        if not hasattr(self, "_latest"):
            self._latest = list(super().get_queryset()[:ADMIN_VERSIONS_SHOWN])
        return self._latest


class DocumentRevisionInline(ReadOnlyAdminMixin, admin.TabularInline):
    """The latest versions of the document, newest first; each links to its text."""

    model = DocumentRevision
    formset = LatestRevisionsFormSet
    verbose_name_plural = f"Latest versions (at most {ADMIN_VERSIONS_SHOWN})"
    fields = ("version_link", "author", "person_name", "token_name", "title", "length", "created_at")
    readonly_fields = fields
    ordering = ("-version",)
    extra = 0
    can_delete = False
    show_change_link = False

    def get_queryset(self, request):
        # The stored length of each text, not the text (or delta) itself.
        return super().get_queryset(request).select_related("body", "person").defer("body__text", "body__delta")

    @admin.display(description="Version")
    def version_link(self, obj):
        url = reverse("admin:workspace_documentrevision_change", args=[obj.pk])
        return format_html('<a href="{}">v{}</a>', url, obj.version)

    @admin.display(description="Characters")
    def length(self, obj):
        return obj.body.length  # as stored: the list rebuilds no text


@admin.register(Document)
class DocumentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("title", "thread", "version", "length", "updated_at")
    # Not the text: a search of every person's document for a phrase would
    # tell which thread holds it, though the list shows no text (docs/adr/0137).
    list_filter = ("updated_at",)
    search_fields = ("title", "thread__title", "=thread__id")
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)
    fields = ("thread", "title", "version", "updated_at", "all_versions", "content_text")
    inlines = [DocumentRevisionInline]

    def get_queryset(self, request):
        # The list shows each text's length, not the text.
        return super().get_queryset(request).annotate(characters=Length("content")).defer("content")

    @admin.display(description="Characters")
    def length(self, obj):
        return obj.characters

    @admin.display(description="Versions")
    def all_versions(self, obj):
        count = DocumentRevision.objects.filter(document=obj).count()
        url = reverse("admin:workspace_documentrevision_changelist") + f"?document__id__exact={obj.pk}"
        return format_html('<a href="{}">All {} versions</a>', url, count)

    @admin.display(description="Content")
    def content_text(self, obj):
        return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', obj.content)


@admin.register(DocumentRevision)
class DocumentRevisionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Write-once: each version of a document as it was written, and by whom."""

    list_display = ("document", "version", "author", "person_name", "token_name", "title", "created_at")
    list_filter = ("author", "created_at")
    # Texts are stored by content, most as deltas (docs/adr/0078): not searchable.
    search_fields = ("title", "document__thread__title", "person_username", "=document__thread__id")
    raw_id_fields = ("document",)

    def get_queryset(self, request):
        # Each row names its document: not its whole current text with it.
        return super().get_queryset(request).select_related("document", "person").defer("document__content")

    fields = (
        "document",
        "version",
        "author",
        "person_name",
        "person_username",
        "token_name",
        "created_at",
        "title",
        "content_text",
    )

    @admin.display(description="Content")
    def content_text(self, obj):
        return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', obj.content)


@admin.register(Artifact)
class ArtifactAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("id", "artifact_type", "title", "thread", "turn_index", "created_at")
    list_filter = ("artifact_type", "created_at")
    search_fields = ("title", "artifact_type", "thread__title", "=thread__id")
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)
    fields = ("thread", "artifact_type", "title", "turn_index", "created_at", "payload_json")

    def get_queryset(self, request):
        # A table's rows are read only on its own page, not for the list.
        return super().get_queryset(request).defer("payload")

    @admin.display(description="Payload")
    def payload_json(self, obj):
        return _pretty_json(obj.payload)


@admin.register(WorkspaceSnapshot)
class WorkspaceSnapshotAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Write-once record of what the agent saw at the start of a turn."""

    list_display = ("thread", "turn_index", "message_excerpt", "captured_at")
    list_filter = ("captured_at",)
    search_fields = ("user_message", "thread__title", "=thread__id")
    ordering = RECENT_THREADS_FIRST + ("turn_index",)
    list_select_related = ("thread",)
    raw_id_fields = ("thread",)
    # The document text, preferences and plan are read back from their
    # content blobs (docs/adr/0015) by the model's properties.
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
        return excerpt(obj.user_message)

    @admin.display(description="Document content")
    def document_content_text(self, obj):
        return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', obj.document_content)

    @admin.display(description="Preferences")
    def preferences_pretty(self, obj):
        return _pretty_json(obj.preferences_json)

    @admin.display(description="Plan")
    def todos_pretty(self, obj):
        return _pretty_json(obj.todos_json)
