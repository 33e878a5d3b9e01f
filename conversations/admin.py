"""Staff admin for threads and what hangs off them.

Moderation goes through the same services the app uses, so a staff
soft-delete or restore is recorded as a ModerationAction (who, what, when)
and shows on the thread's page. The history itself is read-only: a record
of what staff did is only worth something if staff cannot edit it. Branch
links, feedback and the activity log are written by the app; staff inspect
them here rather than editing them past the services' validation.
"""

import json

from axes import admin as axes_admin
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET

from workspace import admin as workspace_admin
from workspace import content_store
from workspace import selectors as workspace_selectors
from workspace.admin import ReadOnlyAdminMixin
from workspace.errors import UserFacingError
from workspace.markdown import render_markdown
from workspace.models import (
    Artifact,
    ContentBlob,
    Document,
    DocumentRevision,
    Objective,
    ObjectiveRevision,
    PlanChange,
    Preference,
    Thread,
    ThreadMember,
    Todo,
    WorkspaceSnapshot,
)
from workspace.services import preferences as preference_services
from workspace.text import as_a_page_reads_it

from . import selectors, services, sharing, staff_view
from .chat import chat_turns
from .models import AccessToken, ActivityLogEntry, ArchiveImport, BranchLink, Feedback, ModerationAction, TurnSlot

admin.site.site_header = "HAICO administration"
admin.site.site_title = "HAICO administration"
admin.site.index_title = "Threads, workspaces and moderation"


class ModerationActionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = ModerationAction
    fk_name = "thread"
    fields = ("created_at", "action", "staff_user", "detail")
    readonly_fields = fields
    ordering = ("-created_at",)
    extra = 0
    verbose_name = "moderation action"
    verbose_name_plural = "Moderation history"


STALE_PAGE = "This page did not say what it showed; reload it and save again."


class ThreadAdminForm(forms.ModelForm):
    """The thread's title, with the title the page showed (`was_title`,
    hidden). Django fills a form's initial values from the row as it is
    when the form is posted, so a title someone else set meanwhile read as
    staff's change and the page's old title was put back (docs/adr/0129)."""

    was_title = forms.CharField(widget=forms.HiddenInput, required=False, strip=False)

    class Meta:
        model = Thread
        fields = ("title",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title_kept = None  # the title someone else set meanwhile, left as it is
        if self.instance.pk is not None:
            self.fields["was_title"].initial = self.instance.title

    def clean(self):
        data = super().clean()
        if self.instance.pk is None:
            return data
        if self.add_prefix("was_title") not in self.data:
            raise forms.ValidationError(STALE_PAGE)
        shown = as_a_page_reads_it(data.get("was_title", ""))
        # Locked until the admin's transaction ends: the rename below is checked against the row as it stays.
        now = Thread.objects.select_for_update().filter(pk=self.instance.pk).values_list("title", flat=True).first()
        if now is None or as_a_page_reads_it(now) == shown:
            return data
        posted = data.get("title")
        if posted is not None and as_a_page_reads_it(posted) == shown:
            self.title_kept = now  # staff left the title as shown: theirs stays, nothing is written over it
        elif posted is None or posted != now:
            # The page's base moves to the title as it is now: saving again replaces it knowingly.
            self.data = self.data.copy()
            self.data[self.add_prefix("was_title")] = now
            raise forms.ValidationError(
                {
                    "title": f"Someone else renamed this thread meanwhile: it is “{now}” now. Nothing was saved: "
                    "Save again to replace it with the title in the box, or reload the page to keep it."
                }
            )
        return data


class ThreadMemberForm(forms.ModelForm):
    """A row is one person's access: whom it is for is chosen when it is
    added. Changing it would be removing one person and adding another,
    which staff do as that (Delete, and a new row); a changed user on an
    existing row was saved as a role change and silently dropped.

    `was_role` (hidden) is the role the page showed: a row staff left as
    shown is not theirs to save, checked under the row's lock
    (sharing.thread_member_set_role, docs/adr/0129)."""

    was_role = forms.ChoiceField(choices=ThreadMember.Role.choices, widget=forms.HiddenInput, required=False)

    class Meta:
        model = ThreadMember
        fields = ("user", "role")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["user"].disabled = True
            self.fields["was_role"].initial = self.instance.role

    def clean(self):
        data = super().clean()
        if self.instance.pk is not None and not data.get("was_role") and not data.get("DELETE"):
            raise forms.ValidationError(STALE_PAGE)
        return data


class ThreadMemberInline(admin.TabularInline):
    """The people a thread is shared with (docs/adr/0084). What staff change
    here goes through conversations.sharing, like the owner's dialog: their
    sockets are told at once, and it is recorded in the moderation history."""

    model = ThreadMember
    form = ThreadMemberForm
    fk_name = "thread"
    fields = ("user", "role", "was_role", "via_link", "added_by", "created_at")
    readonly_fields = ("via_link", "added_by", "created_at")
    raw_id_fields = ("user",)
    extra = 0
    verbose_name = "person shared with"
    verbose_name_plural = "Shared with"


class RecordsStaffReads:
    """A staff member opening this admin's page of one row of a thread's
    content is recorded in that thread's moderation history (docs/adr/0050):
    what staff read of a person's work is as much on record as what they
    change. Only a page actually shown (GET, 200) is recorded.

    So is a list of the rows that reads as one thread's (docs/adr/0137): a
    list searched or filtered is recorded in the history of every thread
    whose rows it shows (searching a thread's id, or a phrase, picks what is
    read), and a list left whole is when all its rows are one thread's. A
    whole list of many threads' rows is not: it is the admin's browsing,
    which picks no one."""

    records_lists = True  # False where the list shows no content of a thread (the threads' own list)

    def read_of(self, obj) -> tuple[Thread, str]:
        """The thread `obj` belongs to, and what the record says was opened."""
        raise NotImplementedError

    def thread_id_of_row(self, obj):
        """The id of the thread a row of the list belongs to."""
        return obj.thread_id

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        changelist = (getattr(response, "context_data", None) or {}).get("cl")
        if self.records_lists and changelist is not None and request.method == "GET" and response.status_code == 200:
            shown = [t for t in dict.fromkeys(self.thread_id_of_row(row) for row in changelist.result_list) if t is not None]
            # Only a search term or a lookup narrows the list: Django's filter
            # params also hold sorting (o), an empty search (q=), "Show counts"
            # (_facets) and "Show all" (all), which pick no one and were recorded
            # as "filtered" reads of every thread shown.
            narrowed = bool(changelist.query or changelist.get_filters_params())
            if shown and (narrowed or len(shown) == 1):
                how = f"searched for “{changelist.query}”" if changelist.query else "filtered" if narrowed else "whole"
                staff_view.record_staff_list_read(
                    thread_ids=shown,
                    staff_user=request.user,
                    detail=f"Listed its {self.model._meta.verbose_name_plural} ({how})",
                )
        return response

    def change_view(self, request, object_id, form_url="", extra_context=None):
        response = super().change_view(request, object_id, form_url, extra_context)
        if request.method == "GET" and response.status_code == 200:
            obj = self.get_object(request, unquote(object_id))
            if obj is not None:
                thread, detail = self.read_of(obj)
                staff_view.record_staff_read(
                    thread=thread, staff_user=request.user, action=ModerationAction.Action.VIEW_ADMIN, detail=detail
                )
        return response


@admin.register(Thread)
class ThreadAdmin(RecordsStaffReads, admin.ModelAdmin):
    form = ThreadAdminForm
    records_lists = False  # titles and owners, what every list of the admin shows
    list_display = ("title", "owner", "turn_count", "mode", "last_activity_at", "is_deleted", "created_at")
    list_display_links = ("title",)
    list_filter = ("is_deleted", "mode", ("owner", admin.RelatedOnlyFieldListFilter), "last_activity_at")
    search_fields = ("title", "owner__username", "owner__email", "=id")
    list_select_related = ("owner",)
    ordering = ("-last_activity_at",)
    # Only the title is editable (through thread_rename); deletion state moves
    # only through the recorded actions below, the turn counter never by hand.
    fields = (
        "id",
        "staff_review",
        "activity_log",
        "title",
        "was_title",
        "owner",
        "turn_index",
        "mode",
        "chat_model",
        "turn_modes",
        "is_deleted",
        "deleted_at",
        "created_at",
        "last_activity_at",
        "running_turn",
    )
    readonly_fields = tuple(f for f in fields if f not in ("title", "was_title"))
    inlines = (ThreadMemberInline, ModerationActionInline)
    review_template = "admin/workspace/thread/review.html"
    actions = ("soft_delete_selected", "restore_selected")

    def has_add_permission(self, request):
        # A thread belongs to the person who starts it.
        return False

    def has_delete_permission(self, request, obj=None):
        # "Fork, never destroy": staff moderate with the recorded soft-delete.
        return False

    def read_of(self, obj):
        return obj, "Opened the thread's admin page"

    def view_on_site(self, obj):
        """The admin's "View on site": the thread's workspace, read-only for
        staff (conversations.staff_view), each visit recorded."""
        return reverse("conversations:staff-view", kwargs={"thread_id": obj.pk})

    @admin.display(description="Running turn")
    def running_turn(self, obj):
        """The thread's running-turn slot as stored (a claim its server stopped refreshing included)."""
        slot = TurnSlot.objects.filter(thread=obj).first() if obj is not None and obj.pk else None
        if slot is None or slot.turn_index is None:
            return "None"
        stop = "; a Stop was asked for" if slot.cancel_requested else ""
        return (
            f"Turn {slot.turn_index}, alive at {slot.since:%Y-%m-%d %H:%M:%S} UTC{stop}"
            if slot.since
            else f"Turn {slot.turn_index}{stop}"
        )

    @admin.display(description="Turns", ordering="turn_index")
    def turn_count(self, obj):
        return obj.turn_index

    @admin.display(description="Mode of each turn")
    def turn_modes(self, obj):
        """The mode each turn ran in (the thread's mode is for its next ones), runs of one mode together."""
        if obj is None or obj.pk is None:
            return "-"
        runs: list[list] = []
        for index, mode in obj.turns.order_by("index").values_list("index", "mode"):
            if runs and runs[-1][2] == mode and runs[-1][1] == index - 1:
                runs[-1][1] = index
            else:
                runs.append([index, index, mode])
        if not runs:
            return "No turns yet."
        return "; ".join(
            f"turn{'s' if first != last else ''} {first}{f'–{last}' if first != last else ''}: "
            f"{Thread.Mode(mode).label if mode in Thread.Mode.values else mode}"
            for first, last, mode in runs
        )

    @admin.display(description="Review")
    def staff_review(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        url = reverse("admin:workspace_thread_review", args=[obj.pk])
        return format_html('<a href="{}">Transcript, snapshots, branches, feedback and workspace (read-only)</a>', url)

    @admin.display(description="Activity log")
    def activity_log(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        count = obj.activity.count()
        url = reverse("admin:conversations_activitylogentry_changelist") + f"?thread__id__exact={obj.pk}"
        return format_html('<a href="{}">{} activity log entries (errors, retries, refused calls…)</a>', url, count)

    def save_model(self, request, obj, form, change):
        if change and form.title_kept is not None:
            messages.warning(request, f"Someone else renamed this thread meanwhile to “{form.title_kept}”; that title was kept.")
        elif change and "title" in form.changed_data:
            old_title = form.initial.get("title", "")
            with transaction.atomic():
                services.thread_rename(thread=obj, title=obj.title)
                services.moderation_record(
                    thread=obj,
                    staff_user=request.user,
                    action=ModerationAction.Action.RENAME,
                    detail=f"'{old_title}' -> '{obj.title}'",
                )

    def save_formset(self, request, form, formset, change):
        if formset.model is not ThreadMember:
            return super().save_formset(request, form, formset, change)
        thread = form.instance
        members = formset.save(commit=False)
        shown = {row.instance.pk: row.cleaned_data.get("was_role") for row in formset.initial_forms if row.instance.pk}
        try:
            with transaction.atomic():
                for member in formset.deleted_objects:
                    sharing.thread_member_remove(thread=thread, member_id=member.pk, by=request.user)
                for member in members:
                    if member.pk is None:
                        who = member.user.get_username()
                        sharing.thread_member_add(thread=thread, who=who, role=member.role, by=request.user)
                    else:
                        # A row left as the page showed it changes nothing: a role set meanwhile stays.
                        sharing.thread_member_set_role(
                            thread=thread, member_id=member.pk, role=member.role, by=request.user, shown=shown.get(member.pk)
                        )
        except UserFacingError as exc:
            messages.error(request, f"The sharing was not changed: {exc.message}")

    # -- the read-only review of one thread --

    def get_urls(self):
        review = path(
            "<path:object_id>/review/",
            self.admin_site.admin_view(require_GET(self.review_view)),
            name="workspace_thread_review",
        )
        return [review, *super().get_urls()]

    def review_view(self, request, object_id):
        """A thread as staff review it, read-only: its transcript, beside
        the snapshot each turn started from, the branch family, feedback,
        the moderation history, and the workspace as its owner sees it now.
        Nothing here writes; the recorded actions are on the thread's list."""
        thread = self.get_object(request, object_id)
        if thread is None:
            raise Http404("No such thread.")
        if not self.has_view_permission(request, thread):
            raise PermissionDenied
        staff_view.record_staff_read(
            thread=thread,
            staff_user=request.user,
            action=ModerationAction.Action.VIEW_REVIEW,
            detail="Opened the review: transcript, snapshots, feedback and workspace",
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": thread,
            "title": f"Review: {thread.title}",
            **thread_review(thread, review_page(request.GET.get("page"), turn_count=thread.turn_index)),
        }
        return TemplateResponse(request, self.review_template, context)

    @admin.action(description="Soft-delete selected threads", permissions=["change"])
    def soft_delete_selected(self, request, queryset):
        count = 0
        with transaction.atomic():
            for thread in queryset.select_for_update().filter(is_deleted=False):
                services.thread_soft_delete(thread=thread, staff_user=request.user)
                count += 1
        self.message_user(request, f"Soft-deleted {count} thread(s); each action is recorded.", messages.SUCCESS)

    @admin.action(description="Restore selected threads", permissions=["change"])
    def restore_selected(self, request, queryset):
        count = 0
        with transaction.atomic():
            # A branch or an import still being made is hidden as deleted
            # (docs/adr/0014, docs/adr/0049); it is not restorable.
            being_made = BranchLink.objects.filter(status=BranchLink.Status.PENDING).values("thread_id")
            being_imported = ArchiveImport.objects.values("thread_id")
            apart = []
            for thread in (
                queryset.select_for_update().filter(is_deleted=True).exclude(pk__in=being_made).exclude(pk__in=being_imported)
            ):
                services.thread_restore(thread=thread, staff_user=request.user)
                count += 1
                # Its family was split meanwhile (a branch shared alone):
                # a restore changes nobody's people, so the thread joins
                # only the threads with its people; the others stay apart
                # (docs/adr/0084).
                apart += [(thread, other) for other in selectors.linked_threads_with_other_people(thread=thread)]
        self.message_user(request, f"Restored {count} thread(s); each action is recorded.", messages.SUCCESS)
        for thread, other in apart:
            self.message_user(
                request,
                f"“{thread.title}” stays apart from “{other.title}”, which is shared with other people: "
                "neither shows the other on its map.",
                messages.INFO,
            )


# The review shows a page of turns at a time, newest first (docs/adr/0129):
# a thread of hundreds of turns was one page of megabytes, every snapshot
# in full beside its turn.
REVIEW_TURNS_SHOWN = 20
REVIEW_MODERATION_SHOWN = 50


def review_page(value, *, turn_count: int) -> int:
    """The page of turns asked for (`?page=`, 1 the newest), within the thread's pages."""
    pages = max(1, -(-turn_count // REVIEW_TURNS_SHOWN))
    try:
        page = int(value)
    except (TypeError, ValueError):
        return 1
    return min(max(page, 1), pages)


def _snapshot_summaries(thread: Thread, indices: list[int]) -> dict[int, dict]:
    """What the review says of each snapshot of the turns `indices`: the
    objective, how many preferences and plan steps, and the document's
    title and length (as stored: its text is not rebuilt). The preferences'
    and plans' blobs are read in one batch, each after the one before in
    turn order, so a delta against it costs only itself."""
    snapshots = list(
        WorkspaceSnapshot.objects.filter(thread=thread, turn_index__in=indices)
        .select_related("document_body")
        .defer("user_message", "document_body__text", "document_body__delta")
        .order_by("turn_index")
    )
    wanted = {pk for s in snapshots for pk in (s.preferences_body_id, s.todos_body_id)}
    blobs = ContentBlob.objects.in_bulk(wanted)
    texts: dict[int, str] = {}
    for field in ("preferences_body_id", "todos_body_id"):
        chain = [blobs[pk] for pk in dict.fromkeys(getattr(s, field) for s in snapshots) if pk not in texts]
        texts.update(zip([b.pk for b in chain], content_store.read_texts(ContentBlob, chain)))
    summaries = {}
    for snapshot in snapshots:
        preferences = json.loads(texts[snapshot.preferences_body_id])
        todos = json.loads(texts[snapshot.todos_body_id])
        summaries[snapshot.turn_index] = {
            "snapshot": snapshot,
            "objective": workspace_admin.excerpt(snapshot.objective_text, 200),
            "preferences": len(preferences),
            "locked": sum(1 for p in preferences if p.get("locked")),
            "steps": len(todos),
            "done": sum(1 for t in todos if t.get("done")),
            "document_length": snapshot.document_body.length,
            "url": reverse("admin:workspace_workspacesnapshot_change", args=[snapshot.pk]),
        }
    return summaries


def thread_review(thread: Thread, page: int = 1) -> dict:
    """What the review page shows, read from the rows and the checkpointer:
    a page of turns, newest first, each beside a summary of the snapshot it
    started from (linking to it in full)."""
    newest = thread.turn_index
    last = newest - (page - 1) * REVIEW_TURNS_SHOWN
    first = max(1, last - REVIEW_TURNS_SHOWN + 1)
    summaries = _snapshot_summaries(thread, list(range(first, last + 1)))
    feedback = list(
        Feedback.objects.filter(thread=thread, turn_index__gte=first, turn_index__lte=last)
        .select_related("user", "artifact")
        .order_by("turn_index", "pk")
    )
    turns = [
        {
            **turn,
            "snapshot": summaries.get(turn["turn_index"]),
            "feedback": [entry for entry in feedback if entry.turn_index == turn["turn_index"]],
        }
        for turn in reversed(chat_turns(thread=thread, keep=lambda index: first <= index <= last))
    ]
    parent_link = BranchLink.objects.filter(thread=thread).select_related("parent").first()
    document = workspace_selectors.document_for(thread=thread)
    moderation = thread.moderation_actions.select_related("staff_user")
    return {
        "thread": thread,
        "turns": turns,
        "turns_first": first,
        "turns_last": last,
        "newer_page": page - 1 if page > 1 else None,
        "older_page": page + 1 if first > 1 else None,
        "feedback_count": Feedback.objects.filter(thread=thread).count(),
        "parent_link": parent_link,
        "child_links": list(thread.child_links.select_related("thread").order_by("branch_point_turn", "created_at")),
        "moderation": list(moderation[:REVIEW_MODERATION_SHOWN]),
        "moderation_count": moderation.count(),
        "moderation_shown": REVIEW_MODERATION_SHOWN,
        "objective": workspace_selectors.objective_text_for(thread=thread),
        "preferences": workspace_selectors.preferences_for(thread=thread),
        "plan": workspace_selectors.plan_steps(thread=thread),
        "document": document,
        "document_html": render_markdown(document.content),
        "artifacts": workspace_selectors.artifacts_for(thread=thread),
    }


@admin.register(ModerationAction)
class ModerationActionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "action", "thread", "staff_user", "detail")
    list_filter = ("action", ("staff_user", admin.RelatedOnlyFieldListFilter), "created_at")
    search_fields = ("detail", "thread__title", "staff_user__username", "=thread__id")
    list_select_related = ("thread", "staff_user")
    raw_id_fields = ("thread", "staff_user")


@admin.register(BranchLink)
class BranchLinkAdmin(RecordsStaffReads, ReadOnlyAdminMixin, admin.ModelAdmin):
    """Which thread branched from which, at which turn; a link's page shows
    the reason the person gave for the branch (their own words), so opening
    it is a read of the branch, recorded like the other rows' pages, and so
    is a list of links searched or filtered (docs/adr/0050, 0137)."""

    list_display = ("thread", "parent", "branch_point_turn", "status", "created_at")
    list_filter = ("status", "created_at")
    # Not the reason: a person's own words (an imported archive carries any), and a hit
    # would tell which thread holds a phrase, unrecorded (docs/adr/0137).
    search_fields = ("thread__title", "parent__title", "=thread__id", "=parent__id")
    list_select_related = ("thread", "parent")
    raw_id_fields = ("thread", "parent")

    def read_of(self, obj):
        # The branch's history: the reason was written for it, by whoever made it.
        return obj.thread, f"Opened the link to the thread it branched from (turn {obj.branch_point_turn}) and its reason"


@admin.register(Feedback)
class FeedbackAdmin(RecordsStaffReads, ReadOnlyAdminMixin, admin.ModelAdmin):
    """What people thought of their turns, filterable by scope, aspect,
    rating, thread, person and date (the thread filter lists only threads
    that have feedback)."""

    list_display = (
        "created_at",
        "thread",
        "turn_index",
        "user",
        "about",
        "aspect",
        "rating",
        "comment_excerpt",
        "updated_at",
    )
    list_filter = (
        "scope",
        "aspect",
        "rating",
        ("thread", admin.RelatedOnlyFieldListFilter),
        ("user", admin.RelatedOnlyFieldListFilter),
        "created_at",
    )
    search_fields = ("comment", "artifact_title", "thread__title", "user__username", "=thread__id")
    ordering = workspace_admin.RECENT_THREADS_FIRST + ("turn_index", "created_at")
    list_select_related = ("thread", "user", "artifact")
    raw_id_fields = ("thread", "user", "artifact")

    def read_of(self, obj):
        return obj.thread, f"Opened feedback on turn {obj.turn_index} by {obj.user.get_username()}"

    @admin.display(description="About", ordering="scope")
    def about(self, obj):
        return obj.scope_label

    @admin.display(description="Comment")
    def comment_excerpt(self, obj):
        return obj.comment[:80]


@admin.register(ActivityLogEntry)
class ActivityLogEntryAdmin(RecordsStaffReads, ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "level", "kind", "thread", "turn_index", "person_name", "message_excerpt")
    list_filter = ("kind", "level", "created_at")
    # What staff look for: a thread, a person, a message's words. Not the
    # detail (a failed turn's multi-kilobyte trace): searching every trace
    # took seconds at a team's year of lines (docs/adr/0148). Nor a second
    # count of the whole log beside a search's.
    search_fields = ("message", "thread__title", "person_username", "=thread__id")
    show_full_result_count = False
    fields = ("thread", "turn_index", "created_at", "level", "kind", "person_name", "person_username", "message", "detail")
    readonly_fields = fields
    list_select_related = ("thread", "person")
    raw_id_fields = ("thread",)

    def read_of(self, obj):
        return obj.thread, f"Opened activity log entry: {workspace_admin.excerpt(obj.message)}"

    @admin.display(description="Message")
    def message_excerpt(self, obj):
        return obj.message[:120]


@admin.register(AccessToken)
class AccessTokenAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Who holds MCP tokens and when they were last used; the secrets are
    not stored, so there is nothing more to see."""

    list_display = ("name", "user", "prefix", "read_only", "created_at", "expires_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "read_only")
    search_fields = ("name", "prefix", "user__username")
    list_select_related = ("user",)
    fields = ("name", "user", "prefix", "read_only", "created_at", "expires_at", "last_used_at", "revoked_at")


def staff_set_preference_locked(*, preference: Preference, locked: bool, staff_user) -> bool:
    """Lock or unlock on behalf of staff and record it; False if it already
    was (or the person deleted it meanwhile), so nothing is recorded."""
    with transaction.atomic():
        current = Preference.objects.select_for_update().filter(pk=preference.pk).first()
        if current is None or current.locked == bool(locked):
            return False
        preference_services.preference_set_locked(preference=current, locked=locked, respect_lock=False)
        services.moderation_record(
            thread=current.thread,
            staff_user=staff_user,
            action=ModerationAction.Action.LOCK_PREFERENCE if locked else ModerationAction.Action.UNLOCK_PREFERENCE,
            detail=f"Preference '{current.title}'",
        )
    preference.locked = bool(locked)
    return True


LOCK_STATES = {"locked": True, "unlocked": False}


def _lock_word(locked: bool) -> str:
    return "locked" if locked else "unlocked"


class PreferenceLockForm(forms.ModelForm):
    """The lock, with what the page showed of it (`was_locked`, hidden): a
    Save on a page opened before the person locked or unlocked the
    preference writes nothing over their change (docs/adr/0125, 0129).
    Django fills a form's initial values from the row as it is when the
    form is posted, so without it an unchanged box read as a change."""

    was_locked = forms.ChoiceField(choices=[(k, k) for k in LOCK_STATES], widget=forms.HiddenInput, required=False)

    class Meta:
        model = Preference
        fields = ("locked",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["was_locked"].initial = _lock_word(self.instance.locked)

    def clean(self):
        data = super().clean()
        shown = data.get("was_locked")
        if shown not in LOCK_STATES:
            raise forms.ValidationError("This page did not say what it showed of the lock; reload it and save again.")
        # Locked until the admin's transaction ends, so the lock saved below is checked against the row as it stays.
        now = Preference.objects.select_for_update().filter(pk=self.instance.pk).values_list("locked", flat=True).first()
        if now is None:
            raise forms.ValidationError("This preference was removed meanwhile; nothing was saved.")
        if now != LOCK_STATES[shown] and data.get("locked") != now:
            # The page's base moves to the row as it is now: saving again replaces the change knowingly.
            self.data = self.data.copy()
            self.data[self.add_prefix("was_locked")] = _lock_word(now)
            raise forms.ValidationError(
                f"Someone else {_lock_word(now)} this preference meanwhile: it is {_lock_word(now)} now. "
                f"Nothing was saved: Save again to make it {_lock_word(not now)}, or leave the page to keep it {_lock_word(now)}."
            )
        return data


@admin.register(Preference)
class PreferenceAdmin(RecordsStaffReads, admin.ModelAdmin):
    """Staff lock and unlock here, on one preference's page (checked against
    what the page showed) or with the Lock / Unlock actions of the list,
    which change only rows not already so. The list has no editable lock
    column: its Save posts every row's box as the list showed it, so it
    undid the locks people set after the list was loaded (docs/adr/0129)."""

    form = PreferenceLockForm
    list_display = ("title", "kind", "locked", "thread", "thread_owner", "position", "updated_at")
    list_display_links = ("title",)
    list_filter = ("kind", "locked", "updated_at")
    search_fields = ("title", "subtitle", "thread__title", "thread__owner__username", "=thread__id")
    list_select_related = ("thread", "thread__owner")
    raw_id_fields = ("thread",)
    fields = ("thread", "title", "subtitle", "kind", "locked", "was_locked", "position", "created_at", "updated_at")
    # Only the lock is a staff matter; the wording is the person's.
    readonly_fields = tuple(f for f in fields if f not in ("locked", "was_locked"))
    actions = ("lock_selected", "unlock_selected")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def read_of(self, obj):
        return obj.thread, f"Opened the preference '{workspace_admin.excerpt(obj.title)}'"

    @admin.display(description="Owner", ordering="thread__owner__username")
    def thread_owner(self, obj):
        return obj.thread.owner

    def save_model(self, request, obj, form, change):
        # Reached from the change form, checked against what it showed (PreferenceLockForm).
        if change and "locked" in form.changed_data:
            staff_set_preference_locked(preference=obj, locked=obj.locked, staff_user=request.user)

    def _set_locked(self, request, queryset, locked: bool):
        changed = sum(staff_set_preference_locked(preference=p, locked=locked, staff_user=request.user) for p in queryset)
        verb = "Locked" if locked else "Unlocked"
        self.message_user(request, f"{verb} {changed} preference(s); each change is recorded.", messages.SUCCESS)

    @admin.action(description="Lock selected preferences", permissions=["change"])
    def lock_selected(self, request, queryset):
        self._set_locked(request, queryset, True)

    @admin.action(description="Unlock selected preferences", permissions=["change"])
    def unlock_selected(self, request, queryset):
        self._set_locked(request, queryset, False)


# --- staff reads of a thread's content in the workspace's admin pages ----------
# workspace.admin cannot record them (the moderation log is this app's,
# docs/adr/0006); the same admins are registered again here, recording.


class RecordedDocumentAdmin(RecordsStaffReads, workspace_admin.DocumentAdmin):
    def read_of(self, obj):
        return obj.thread, "Opened the document and its list of versions"


class RecordedDocumentRevisionAdmin(RecordsStaffReads, workspace_admin.DocumentRevisionAdmin):
    def get_queryset(self, request):
        return super().get_queryset(request).select_related("document__thread")

    def read_of(self, obj):
        return obj.document.thread, f"Opened version {obj.version} of the document"

    def thread_id_of_row(self, obj):
        return obj.document.thread_id


class RecordedWorkspaceSnapshotAdmin(RecordsStaffReads, workspace_admin.WorkspaceSnapshotAdmin):
    def read_of(self, obj):
        return obj.thread, f"Opened the snapshot of turn {obj.turn_index}"


class RecordedArtifactAdmin(RecordsStaffReads, workspace_admin.ArtifactAdmin):
    def read_of(self, obj):
        return obj.thread, f"Opened the artifact '{workspace_admin.excerpt(obj.title)}' ({obj.artifact_type})"


class RecordedObjectiveAdmin(RecordsStaffReads, workspace_admin.ObjectiveAdmin):
    def read_of(self, obj):
        return obj.thread, "Opened the objective"


class RecordedObjectiveRevisionAdmin(RecordsStaffReads, workspace_admin.ObjectiveRevisionAdmin):
    def read_of(self, obj):
        return obj.thread, "Opened a past value of the objective"


class RecordedTodoAdmin(RecordsStaffReads, workspace_admin.TodoAdmin):
    def read_of(self, obj):
        return obj.thread, "Opened a step of the plan"


class RecordedPlanChangeAdmin(RecordsStaffReads, workspace_admin.PlanChangeAdmin):
    def read_of(self, obj):
        return obj.thread, "Opened an entry of the plan's history"


for model, model_admin in (
    (Document, RecordedDocumentAdmin),
    (DocumentRevision, RecordedDocumentRevisionAdmin),
    (WorkspaceSnapshot, RecordedWorkspaceSnapshotAdmin),
    (Artifact, RecordedArtifactAdmin),
    (Objective, RecordedObjectiveAdmin),
    (ObjectiveRevision, RecordedObjectiveRevisionAdmin),
    (Todo, RecordedTodoAdmin),
    (PlanChange, RecordedPlanChangeAdmin),
):
    admin.site.unregister(model)
    admin.site.register(model, model_admin)


# --- the login rate limit's records (django-axes) ------------------------------


class AccessAttemptAdmin(axes_admin.AccessAttemptAdmin):
    """axes' own admin, with its "Clean up expired attempts" action working:
    axes 8.3.1 reads the cool-off threshold from `request.axes_attempt_time`,
    which only its login handling sets, so the action was a 500 on every use."""

    @admin.action(description="Clean up expired attempts")
    def cleanup_expired_attempts(self, request, queryset):
        if not hasattr(request, "axes_attempt_time"):
            request.axes_attempt_time = None  # "now", as axes counts it
        return super().cleanup_expired_attempts(request, queryset)


admin.site.unregister(AccessAttempt)
admin.site.register(AccessAttempt, AccessAttemptAdmin)


# Who may get in: invites, approval and token limits; and the model usage (modules of their own).
from . import admin_accounts, admin_usage  # noqa: E402,F401
