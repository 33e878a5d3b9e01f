"""Staff admin for who may get in (docs/adr/0061): invite links, accounts
waiting for approval, and each person's token limits (docs/adr/0064).

An invite's link is shown once, on the page that answers its creation
(never cached, never stored: only its digest is); an invite is not edited
afterwards, only deleted (which revokes it). Approving goes through
conversations.approval, from the "Approve" action of the people list or of
the accounts list."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.utils import timezone

from workspace import selectors as workspace_selectors
from workspace.models import Thread

from . import approval, signup
from .models import AccessToken, Account, Feedback, Invite, ModelUsage

User = get_user_model()


class InviteForm(forms.Form):
    email = forms.EmailField(
        required=False,
        label="Email (optional)",
        help_text="The address the invitation is for: sign-up with it uses this address. Blank: whoever holds the link.",
    )
    days = forms.IntegerField(
        min_value=1,
        max_value=signup.INVITE_DAYS_MAX,
        label="Valid for (days)",
        help_text="The link stops working after this many days, or once it has made an account.",
    )
    note = forms.CharField(required=False, max_length=200, label="Note (optional)", help_text="For staff: who it is for.")


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ("created_at", "email", "note", "created_by", "expires_at", "state", "used_by", "used_at")
    list_filter = (("used_at", admin.EmptyFieldListFilter), "created_at")
    search_fields = ("email", "note", "created_by__username", "used_by__username")
    list_select_related = ("created_by", "used_by")
    fields = ("email", "note", "created_by", "created_at", "expires_at", "used_by", "used_at")
    readonly_fields = fields
    date_hierarchy = "created_at"
    add_template = "admin/conversations/invite/add.html"

    def has_change_permission(self, request, obj=None):
        return False  # an invite is made once and then only used or deleted

    @admin.display(description="State")
    def state(self, obj):
        if obj.used_at is not None:
            return "Used"
        return "Expired" if obj.expires_at <= timezone.now() else "Open"

    def add_view(self, request, form_url="", extra_context=None):
        """Make an invite; its link is on the answer, once."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = InviteForm(request.POST if request.method == "POST" else None, initial={"days": settings.HAICO_INVITE_DAYS})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Make an invite link",
            "form": form,
            "signup_mode": settings.HAICO_SIGNUP,
        }
        if request.method == "POST" and form.is_valid():
            invite, secret = signup.invite_create(
                created_by=request.user,
                email=form.cleaned_data["email"],
                days=form.cleaned_data["days"],
                note=form.cleaned_data["note"],
            )
            self.log_addition(request, invite, [{"added": {}}])
            context.update(title="Invite link made", invite=invite, link=request.build_absolute_uri(signup.invite_path(secret)))
            response = TemplateResponse(request, "admin/conversations/invite/created.html", context)
            # The link is on this page only: never cached, never offered again.
            response["Cache-Control"] = "no-store"
            return response
        return TemplateResponse(request, self.add_template, context, status=400 if form.errors else 200)


@admin.action(description="Approve the selected accounts", permissions=["change"])
def approve_accounts(modeladmin, request, queryset):
    user_ids = queryset.values_list("user_id" if queryset.model is Account else "pk", flat=True)
    approved = approval.accounts_approve(user_ids=user_ids, staff_user=request.user)
    modeladmin.message_user(request, f"Approved {approved} account(s); they can use HAICO now.", messages.SUCCESS)


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    """Approval (read-only here: the "Approve" action approves) and token limits per person."""

    list_display = ("user", "waiting_for_approval", "approved_at", "approved_by", "daily_token_limit", "monthly_token_limit")
    list_filter = ("waiting_for_approval",)
    search_fields = ("user__username", "user__email")
    list_select_related = ("user", "approved_by")
    raw_id_fields = ("user",)
    fields = ("user", "waiting_for_approval", "approved_at", "approved_by", "daily_token_limit", "monthly_token_limit")
    readonly_fields = ("waiting_for_approval", "approved_at", "approved_by")
    actions = (approve_accounts,)

    def get_readonly_fields(self, request, obj=None):
        # The person of an existing row stays theirs.
        return (*self.readonly_fields, "user") if obj is not None else self.readonly_fields


class AccountInline(admin.StackedInline):
    model = Account
    fk_name = "user"
    fields = ("waiting_for_approval", "approved_at", "daily_token_limit", "monthly_token_limit")
    readonly_fields = ("waiting_for_approval", "approved_at")
    can_delete = False
    max_num = 1
    extra = 0
    verbose_name = "approval and token limits"
    verbose_name_plural = "approval and token limits"


# What an account's deletion takes with it by design (their foreign keys
# cascade): its model calls (conversations.usage), its access tokens and the
# feedback it left. Their admins are read-only, so Django's check that staff
# may delete each related row refused every such account ("Cannot delete
# user … model call"). Threads the account owns are not among them: a
# thread is soft-deleted, never destroyed (docs/adr/0129).
GOES_WITH_THE_ACCOUNT = (ModelUsage, AccessToken, Feedback)


class PeopleAdmin(UserAdmin):
    """Django's user admin, with approval and token limits."""

    def get_deleted_objects(self, objs, request):
        # Refused before Django collects every related row: for an owner of a
        # year of threads that walk took seconds, only to say "Cannot delete
        # user" (docs/adr/0129). The delete page and the list's "delete
        # selected" both ask here; "thread" is what blocks, as before.
        if workspace_selectors.any_owns_threads(user_ids=[obj.pk for obj in objs]):
            return [], {}, {str(Thread._meta.verbose_name)}, []
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        theirs = {str(model._meta.verbose_name) for model in GOES_WITH_THE_ACCOUNT}
        return deleted, counts, {name for name in perms_needed if str(name) not in theirs}, protected

    inlines = (*UserAdmin.inlines, AccountInline)
    list_display = (*UserAdmin.list_display, "waiting")
    list_filter = (*UserAdmin.list_filter, "account__waiting_for_approval")
    actions = (approve_accounts,)

    @admin.display(description="Waiting for approval", boolean=True)
    def waiting(self, obj):
        account = getattr(obj, "account", None)
        return bool(account and account.waiting_for_approval)

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("account")


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, PeopleAdmin)
