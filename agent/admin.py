"""Staff manage the model catalogue here (docs/adr/0062): providers (name,
OpenAI-compatible base URL, API key), the models each offers, who may use
each, and the site's default.

The API key is write-only: the form's field is a password input that is
never filled in (a blank one keeps the stored key, "Remove the stored key"
clears it), and every page shows only whether a key is set."""

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count

from .models import CatalogueModel, Provider


class ProviderForm(forms.ModelForm):
    base_url = forms.URLField(
        label="Base URL",
        max_length=500,
        assume_scheme="https",
        help_text="The OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or http://localhost:11434/v1.",
    )
    new_api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Type a key to set or replace it; leave blank to keep the stored one. It is never shown again.",
    )
    remove_api_key = forms.BooleanField(label="Remove the stored key", required=False)

    class Meta:
        model = Provider
        fields = ("name", "base_url", "enabled")

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if data.get("new_api_key") and data.get("remove_api_key"):
            raise forms.ValidationError("Either type a new key or remove the stored one, not both.")
        return data

    def save(self, commit=True):
        provider = super().save(commit=False)
        if self.cleaned_data.get("remove_api_key"):
            provider.api_key = ""
        elif self.cleaned_data.get("new_api_key"):
            provider.api_key = self.cleaned_data["new_api_key"]
        if commit:
            provider.save()
        return provider


class CatalogueModelInline(admin.TabularInline):
    model = CatalogueModel
    fields = ("name", "label", "enabled", "everyone")
    extra = 1
    show_change_link = True


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    form = ProviderForm
    list_display = ("name", "base_url", "enabled", "api_key_state", "model_count", "updated_at")
    list_filter = ("enabled",)
    search_fields = ("name", "base_url")
    readonly_fields = ("api_key_state", "created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "base_url", "enabled")}),
        ("API key", {"fields": ("api_key_state", "new_api_key", "remove_api_key")}),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )
    inlines = (CatalogueModelInline,)

    @admin.display(description="API key")
    def api_key_state(self, obj):
        return "set" if obj is not None and obj.has_api_key else "not set"

    def get_queryset(self, request):
        # The list's model counts in its one query, not one count per provider.
        return super().get_queryset(request).annotate(models_count=Count("models"))

    @admin.display(description="Models", ordering="models_count")
    def model_count(self, obj):
        return obj.models_count


@admin.action(description="Make the selected model the site's default", permissions=["change"])
def make_default(modeladmin, request, queryset):
    chosen = list(queryset[:2])
    if len(chosen) != 1:
        modeladmin.message_user(request, "Choose exactly one model to make the default.", messages.ERROR)
        return
    with transaction.atomic():
        CatalogueModel.objects.filter(is_default=True).exclude(pk=chosen[0].pk).update(is_default=False)
        CatalogueModel.objects.filter(pk=chosen[0].pk).update(is_default=True)
    modeladmin.message_user(request, f"{chosen[0]} is the site's default model now.", messages.SUCCESS)


class CatalogueModelForm(forms.ModelForm):
    class Meta:
        model = CatalogueModel
        fields = ("provider", "name", "label", "enabled", "everyone", "people", "is_default")

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if data.get("is_default"):
            others = CatalogueModel.objects.filter(is_default=True)
            if self.instance.pk:
                others = others.exclude(pk=self.instance.pk)
            other = others.select_related("provider").first()
            if other is not None:
                self.add_error(
                    "is_default", f"{other} is the default; use the list's action to make this one the default instead."
                )
        return data


@admin.register(CatalogueModel)
class CatalogueModelAdmin(admin.ModelAdmin):
    form = CatalogueModelForm
    list_display = ("__str__", "name", "provider", "enabled", "everyone", "is_default")
    list_filter = ("enabled", "everyone", "is_default", "provider")
    search_fields = ("name", "label", "provider__name")
    list_select_related = ("provider",)
    filter_horizontal = ("people",)
    actions = (make_default,)
