"""Staff's view of model usage (docs/adr/0063): every model call, read-only,
and the totals per person, model and day with a bar chart drawn on the
server (an SVG, nothing from another origin), reachable from the admin
index under "Usage and quotas" (templates/admin/index.html)."""

import json
import re
from datetime import date, timedelta

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone

from agent.models import MODEL_NAME_MAX_CHARS, PROVIDER_NAME_MAX_CHARS
from workspace.admin import ReadOnlyAdminMixin

from . import usage
from .models import ModelUsage

DEFAULT_DAYS = 30
MAX_DAYS = 366
CHART_HEIGHT, CHART_BASE, BAR_WIDTH, BAR_GAP = 180, 160, 16, 4


def _model_value(provider_name: str, model: str) -> str:
    """The Model choice's value: the provider and the model name, since one
    name may be served by two providers (two local Ollamas), each its own bill."""
    return json.dumps([provider_name, model])


def _chosen_model(value) -> tuple[str | None, str] | None:
    """(provider name, model name) of a Model choice; a plain model name
    (an older address) means that model at any provider; None for what is
    neither."""
    if not isinstance(value, str) or not value:
        return None
    if value.startswith("["):
        try:
            pair = json.loads(value)
        except ValueError:
            return None
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(part, str) and part for part in pair):
            provider_name, model = pair
            if len(provider_name) <= PROVIDER_NAME_MAX_CHARS and len(model) <= MODEL_NAME_MAX_CHARS:
                return provider_name, model
        return None
    return (None, value) if len(value) <= MODEL_NAME_MAX_CHARS else None


def default_range(since: date | None = None, until: date | None = None) -> tuple[date, date]:
    until = until or timezone.now().date()
    return since or until - timedelta(days=DEFAULT_DAYS - 1), until


class TotalsFilter(forms.Form):
    """The totals page's filters. Its Person and Model choices are who and
    what was used in the range asked for (read over that range through the
    time index, docs/adr/0148), plus a choice the address names."""

    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    user = forms.TypedChoiceField(required=False, coerce=int, empty_value=None, label="Person")
    model = forms.ChoiceField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        since, until = default_range(self._date("since"), self._date("until"))
        if since > until or (until - since).days + 1 > MAX_DAYS:
            since, until = default_range(until=until)
        people, models = usage.used_between(since=since, until=until)
        chosen_user = self.data.get("user") if self.is_bound else None
        if isinstance(chosen_user, str) and re.fullmatch(r"[0-9]{1,18}", chosen_user) and int(chosen_user) not in dict(people):
            people += list(get_user_model().objects.filter(pk=int(chosen_user)).values_list("pk", "username")[:1])
        self.fields["user"].choices = [("", "Everyone"), *people]
        choices = [(_model_value(provider_name, model), f"{model} ({provider_name})") for provider_name, model in models]
        chosen = self.data.get("model") if self.is_bound else None
        picked = _chosen_model(chosen)
        if picked is not None and chosen not in {value for value, _ in choices}:
            provider_name, model = picked
            choices.append((chosen, f"{model} ({provider_name or 'any provider'})"))
        self.fields["model"].choices = [("", "Every model"), *choices]

    def _date(self, name: str) -> date | None:
        if not self.is_bound:
            return None
        try:
            return self.fields[name].clean(self.data.get(name))
        except forms.ValidationError:
            return None

    def clean_model(self):
        return _chosen_model(self.cleaned_data.get("model"))

    def clean(self):
        data = super().clean()
        since, until = default_range(data.get("since"), data.get("until"))
        if since > until:
            raise forms.ValidationError("The start date comes after the end date.")
        if (until - since).days + 1 > MAX_DAYS:
            raise forms.ValidationError(f"Choose at most {MAX_DAYS} days.")
        data["since"], data["until"] = since, until
        return data


def chart(per_day: list[dict]) -> dict:
    """Bar geometry for the per-day SVG: bar heights in proportion to the busiest day."""
    peak = max((row["total"] for row in per_day), default=0)
    label_every = max(1, len(per_day) // 8)
    bars = []
    for i, row in enumerate(per_day):
        height = round((CHART_BASE - 10) * row["total"] / peak) if peak else 0
        bars.append(
            {
                "x": i * (BAR_WIDTH + BAR_GAP) + BAR_GAP,
                "y": CHART_BASE - height,
                "height": height,
                "day": row["day"],
                "total": row["total"],
                "label": i % label_every == 0,
            }
        )
    return {
        "bars": bars,
        "peak": peak,
        "bar_width": BAR_WIDTH,
        "base": CHART_BASE,
        "height": CHART_HEIGHT,
        "label_y": CHART_HEIGHT - 6,
        "width": max(200, len(per_day) * (BAR_WIDTH + BAR_GAP) + BAR_GAP),
    }


def recently_used_filter(field: str, label: str, parameter: str) -> type[admin.SimpleListFilter]:
    """A list filter whose choices are the values of the latest calls (a
    bounded read; listing every value ever recorded scanned every call,
    docs/adr/0148). A value chosen by link or address stays listed."""

    class RecentlyUsed(admin.SimpleListFilter):
        title = label
        parameter_name = parameter

        def lookups(self, request, model_admin):
            values = usage.recently_used(field)
            chosen = self.value()
            if chosen and chosen not in values:
                values = sorted([*values, chosen])
            return [(value, value) for value in values]

        def queryset(self, request, queryset):
            return queryset.filter(**{field: self.value()}) if self.value() else queryset

    return RecentlyUsed


@admin.register(ModelUsage)
class ModelUsageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "created_at",
        "user",
        "model",
        "provider_name",
        "input_tokens",
        "output_tokens",
        "estimated",
        "thread",
        "turn_index",
    )
    # Narrow by time with the date filter (or the totals page's range), and by
    # provider, model and person among the latest calls: no list of years over
    # every call, no DISTINCT over the table (docs/adr/0148).
    list_filter = (
        "estimated",
        recently_used_filter("provider_name", "provider", "provider"),
        recently_used_filter("model", "model", "model"),
        recently_used_filter("user__username", "person", "person"),
        "created_at",
    )
    search_fields = ("user__username", "model", "provider_name", "=thread__id")
    list_select_related = ("user", "thread")
    raw_id_fields = ("user", "thread", "turn", "provider")

    def get_urls(self):
        totals = path("totals/", self.admin_site.admin_view(self.totals_view), name="conversations_modelusage_totals")
        return [totals, *super().get_urls()]

    def totals_view(self, request):
        """Totals per person, model and day, filtered by dates, person and model."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = TotalsFilter(request.GET or None)
        errors = []
        if form.is_bound and form.is_valid():
            data = form.cleaned_data
        else:
            if form.is_bound:
                errors = [error for field_errors in form.errors.values() for error in field_errors]
            # The defaults, without a second form (its choices cost two more reads).
            since, until = default_range()
            data = {"since": since, "until": until}
        provider_name, model = data.get("model") or (None, None)
        result = usage.totals(
            since=data["since"], until=data["until"], user_id=data.get("user"), model=model, provider_name=provider_name
        )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Usage per person, model and day",
            "form": form,
            "errors": errors,
            "since": data["since"],
            "until": data["until"],
            "result": result,
            "chart": chart(result["per_day"]),
        }
        return TemplateResponse(request, "admin/conversations/modelusage/totals.html", context)
