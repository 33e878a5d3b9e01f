"""Model usage: storing each model call's tokens, and reading them back for
the person's usage page and staff's totals (docs/adr/0063).

The turn runner (conversations.turns.run) collects one row per model call
from the agent's ModelCallUsage events and stores them a batch at a time,
in the database hops that save the answers anyway (turns.registry) and
record the turn's end: no write per token, and no round trip of its own on
a turn's path."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import cast

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import CharField, Count, Q, Sum
from django.db.models.functions import Cast, Coalesce, Substr, TruncDate
from django.utils import timezone

from agent.context import TokenWindow
from agent.models import Provider
from agent.usage import DAY, MONTH, limit_message, tokens_text
from workspace.models import Thread

from .models import Account, ModelUsage, Turn
from .quotas import day_window, limits_for, month_window, used_since


def usage_record(*, rows: list[dict]) -> int:
    """Store model calls' usage rows (ModelUsage fields), in a transaction
    of their own; returns how many were stored.

    Each row names its call by its `key` (docs/adr/0154), made when the
    turn counted the call (a row without one is given one here, on the
    caller's dict, so the caller's next try names the same call). A row
    whose key is stored replaces that row: a call's estimate stored while
    it streamed becomes its real figure (docs/adr/0063), and a batch stored
    again counts each call once, whether its last try was refused or
    committed with its answer lost (a failover or a cut connection, which
    the caller cannot tell from the database being away). A row marked
    `withdrawn` (its key alone) takes its call's stored estimate back: the
    provider refused the call, nothing was paid for.

    A call is paid for whatever was deleted while it ran: a row naming a
    provider, thread or turn that is gone is stored without the link (the
    provider's name stays), as the rows already stored keep theirs
    (SET_NULL). Only a row whose person is gone is left out, as their
    stored rows go with their account (a stored estimate went with them).
    Call it outside a transaction: the links are checked when its own
    transaction commits."""
    if not rows:
        return 0
    for row in rows:
        if row.get("key") is None:
            row["key"] = uuid.uuid4()
    withdrawn = [row["key"] for row in rows if row.get("withdrawn")]
    rows = [row for row in rows if not row.get("withdrawn")]
    try:
        # The links are checked at commit (deferred constraints), so the
        # commit is what fails when one points at a deleted row.
        with transaction.atomic():
            _write(rows, withdrawn)
    except IntegrityError:
        rows = _with_links_that_exist(rows)
        with transaction.atomic():
            _write(rows, withdrawn)
    return len(rows)


# What a row stored again changes: every field but the row's id and its key.
_FIELDS = [field for field in ModelUsage._meta.concrete_fields if not field.primary_key]
_KEY = ModelUsage._meta.get_field("key")
_REPLACED_FIELDS = [field for field in _FIELDS if field is not _KEY]


def _write(rows: list[dict], withdrawn: list) -> None:
    """Store the rows by their keys, and delete the withdrawn keys' rows.

    One plain statement run for every row (`executemany`), as the answers
    so far are stored (docs/adr/0135): the turn watcher stores every
    streaming call's estimate twice a second, and the ORM's `bulk_update`
    built a CASE WHEN per row and field, tens of milliseconds of CPU at 200
    running turns (docs/adr/0063)."""
    if rows:
        values = [
            [
                field.get_db_prep_save(row[field.attname] if field.attname in row else field.get_default(), connection)
                for field in _FIELDS
            ]
            for row in rows
        ]
        with connection.cursor() as cursor:
            cursor.executemany(_upsert(connection.vendor), values)
    if withdrawn:
        ModelUsage.objects.filter(key__in=withdrawn).delete()


@functools.cache
def _upsert(vendor: str) -> str:
    """The insert that replaces the row of the same key (PostgreSQL's and
    SQLite's INSERT ... ON CONFLICT), built from the model's metadata (as
    workspace.write_counts builds its statements), so a renamed column or
    table follows; one per database vendor."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(cast(str, field.column)) for field in _FIELDS)
    placeholders = ", ".join(["%s"] * len(_FIELDS))
    replaced = ", ".join(
        f"{quote(cast(str, field.column))} = excluded.{quote(cast(str, field.column))}" for field in _REPLACED_FIELDS
    )
    return (
        f"INSERT INTO {quote(ModelUsage._meta.db_table)} ({columns}) VALUES ({placeholders}) "
        f"ON CONFLICT ({quote(cast(str, _KEY.column))}) DO UPDATE SET {replaced}"
    )


def _with_links_that_exist(rows: list[dict]) -> list[dict]:
    """The rows whose person still exists, with the links that still exist."""

    def existing(model, key: str) -> set:
        return set(model.objects.filter(pk__in={row[key] for row in rows if row.get(key)}).values_list("pk", flat=True))

    users = existing(get_user_model(), "user_id")
    links = {key: existing(model, key) for key, model in (("provider_id", Provider), ("thread_id", Thread), ("turn_id", Turn))}
    return [
        {**row, **{key: row.get(key) if row.get(key) in present else None for key, present in links.items()}}
        for row in rows
        if row["user_id"] in users
    ]


def _sums(queryset) -> dict:
    return queryset.aggregate(
        input=Coalesce(Sum("input_tokens"), 0),
        output=Coalesce(Sum("output_tokens"), 0),
        calls=Count("pk"),
        estimated=Count("pk", filter=Q(estimated=True)),
    )


@dataclass(frozen=True)
class Totals:
    input: int
    output: int
    calls: int
    estimated: int

    @property
    def total(self) -> int:
        return self.input + self.output

    @classmethod
    def of(cls, sums: dict) -> Totals:
        return cls(sums["input"], sums["output"], sums["calls"], sums["estimated"])


def person_usage(*, user: AbstractBaseUser, now: datetime | None = None) -> dict:
    """What the person's usage page shows: today, this month, this month per
    model, and their limits (used, left, when each resets)."""
    now = now or timezone.now()
    day_start, day_end = day_window(now)
    month_start, month_end = month_window(now)
    mine = ModelUsage.objects.filter(user=user)
    per_model = (
        mine.filter(created_at__gte=month_start)
        .values("provider_name", "model")
        .annotate(
            input=Coalesce(Sum("input_tokens"), 0),
            output=Coalesce(Sum("output_tokens"), 0),
            calls=Count("pk"),
            estimated=Count("pk", filter=Q(estimated=True)),
            total=Coalesce(Sum("input_tokens"), 0) + Coalesce(Sum("output_tokens"), 0),
        )
        .order_by("-total", "model")
    )
    daily, monthly = limits_for(Account.objects.filter(user=user).first())
    today_used, month_used = used_since(user_id=user.pk, now=now)
    limits = []
    for period, limit, used, resets_at, name in (
        (DAY, daily, today_used, day_end, "Today"),
        (MONTH, monthly, month_used, month_end, "This month"),
    ):
        if not limit:
            continue
        window = TokenWindow(period=period, limit=limit, used=used, resets_at=resets_at)
        limits.append(
            {
                "name": name,
                "limit": tokens_text(limit),
                "used": tokens_text(used),
                "left": tokens_text(max(0, limit - used)),
                "reached": used >= limit,
                "percent": min(100, round(100 * used / limit)),
                "resets_at": resets_at,
                "message": limit_message(window, now) if used >= limit else "",
            }
        )
    return {
        "today": Totals.of(_sums(mine.filter(created_at__gte=day_start))),
        "month": Totals.of(_sums(mine.filter(created_at__gte=month_start))),
        "per_model": list(per_model),
        "limits": limits,
        "day_start": day_start,
        "month_start": month_start,
    }


# --- staff's totals (the admin's Usage page) -----------------------------------------------


def _day_range(since: date, until: date) -> tuple[datetime, datetime]:
    start = datetime(since.year, since.month, since.day, tzinfo=UTC)
    return start, datetime(until.year, until.month, until.day, tzinfo=UTC) + timedelta(days=1)


def _per_day(rows) -> dict[date, dict]:
    """Sums per UTC day. PostgreSQL truncates in SQL; on SQLite Django's
    TruncDate calls back into Python for every row (a third of a second at a
    team's month of calls), while the stored text's first ten characters are
    already the UTC day (datetimes are stored in UTC)."""
    sums = {
        "input": Coalesce(Sum("input_tokens"), 0),
        "output": Coalesce(Sum("output_tokens"), 0),
        "calls": Count("pk"),
        "estimated": Count("pk", filter=Q(estimated=True)),
    }
    if connection.vendor == "sqlite":
        grouped = rows.annotate(day=Substr(Cast("created_at", CharField()), 1, 10)).values("day").annotate(**sums)
        return {date.fromisoformat(row["day"]): row for row in grouped.order_by()}
    grouped = rows.annotate(day=TruncDate("created_at", tzinfo=UTC)).values("day").annotate(**sums)
    return {row["day"]: row for row in grouped.order_by()}


def totals(
    *, since: date, until: date, user_id: int | None = None, model: str | None = None, provider_name: str | None = None
) -> dict:
    """Totals per person, per model and per day between two UTC dates
    (inclusive), optionally for one person and/or one model (at one
    provider when `provider_name` is given: one model name may be served
    by two providers, each with its own bill)."""
    start, end = _day_range(since, until)
    rows = ModelUsage.objects.filter(created_at__gte=start, created_at__lt=end)
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    if model:
        rows = rows.filter(model=model)
    if provider_name:
        rows = rows.filter(provider_name=provider_name)
    tokens = {
        "input": Coalesce(Sum("input_tokens"), 0),
        "output": Coalesce(Sum("output_tokens"), 0),
        "calls": Count("pk"),
        "estimated": Count("pk", filter=Q(estimated=True)),
        "total": Coalesce(Sum("input_tokens"), 0) + Coalesce(Sum("output_tokens"), 0),
    }

    def grouped(*fields, order):
        return list(rows.values(*fields).annotate(**tokens).order_by(*order))

    # Per person grouped on the column alone, the names read after for the
    # few people listed (no join of every row with the accounts).
    per_person = grouped("user_id", order=("-total", "user_id"))
    names = dict(get_user_model().objects.filter(pk__in=[row["user_id"] for row in per_person]).values_list("pk", "username"))
    for row in per_person:
        row["user__username"] = names.get(row["user_id"], "")
    per_person.sort(key=lambda row: (-row["total"], row["user__username"]))
    per_day = _per_day(rows)
    days = []
    day = since
    while day <= until:
        row = per_day.get(day, {"input": 0, "output": 0, "calls": 0, "estimated": 0})
        days.append(
            {"day": day, **{k: row[k] for k in ("input", "output", "calls", "estimated")}, "total": row["input"] + row["output"]}
        )
        day += timedelta(days=1)
    return {
        "overall": Totals.of(_sums(rows)),
        "per_person": per_person,
        "per_model": grouped("provider_name", "model", order=("-total", "model")),
        "per_day": days,
    }


def used_between(*, since: date, until: date) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """Who used a model and which (provider, model) pairs were used between
    two UTC dates: the totals page's choices, read over the range it shows
    (through the time index), not every call ever recorded."""
    start, end = _day_range(since, until)
    rows = ModelUsage.objects.filter(created_at__gte=start, created_at__lt=end)
    people = list(
        get_user_model()
        .objects.filter(pk__in=rows.values("user_id").distinct())
        .order_by("username")
        .values_list("pk", "username")
    )
    models = list(rows.order_by("model", "provider_name").values_list("provider_name", "model").distinct())
    return people, models


RECENT_CALLS = 5000


def recently_used(field: str, *, calls: int = RECENT_CALLS) -> list[str]:
    """The values of `field` (a model, a provider, a username) among the latest
    `calls` model calls, sorted: the admin list's filter choices, read through
    the time index instead of a DISTINCT over every call (docs/adr/0148)."""
    latest = ModelUsage.objects.order_by("-created_at").values_list(field, flat=True)[:calls]
    return sorted({value for value in latest if value})
