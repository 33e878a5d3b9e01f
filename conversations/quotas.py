"""Token limits per person (docs/adr/0064): how many tokens (input + output,
as ModelUsage holds them) one person may use per UTC day and per UTC month.

The site's limits are HAICO_DAILY_TOKEN_LIMIT and HAICO_MONTHLY_TOKEN_LIMIT
(0: none); staff override them per person in the admin
(conversations.models.Account: empty is the site's, 0 is none). A turn
that would start with a limit reached is refused before anything is
stored (`turn_start_check`), saying which limit and when it resets; a turn
that reaches one on the way ends before its next model call
(agent.usage.TokenLimitMiddleware), with the windows computed here."""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from channels.db import database_sync_to_async
from django.conf import settings
from django.db.models import Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from agent.context import TokenBudget, TokenWindow
from agent.usage import DAY, MONTH, limit_message, tokens_text

from .errors import ConversationError
from .models import Account, ModelUsage, Turn


class TokenLimitReached(ConversationError):
    """The person's token limit is reached: no turn starts until it resets."""


def day_window(now: datetime) -> tuple[datetime, datetime]:
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def month_window(now: datetime) -> tuple[datetime, datetime]:
    start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return start, end


def limits_for(account: Account | None) -> tuple[int, int]:
    """(daily, monthly) tokens the person may use; 0 for no limit."""
    daily = settings.HAICO_DAILY_TOKEN_LIMIT
    monthly = settings.HAICO_MONTHLY_TOKEN_LIMIT
    if account is not None:
        daily = daily if account.daily_token_limit is None else account.daily_token_limit
        monthly = monthly if account.monthly_token_limit is None else account.monthly_token_limit
    return max(0, daily or 0), max(0, monthly or 0)


def used_since(
    *, user_id: int, now: datetime, outside_run: RunMark | None = None, others: Sequence[tuple[RunMark, int]] = ()
) -> tuple[int, int]:
    """Tokens the person used (today, this month), UTC, in one query; with
    `outside_run`, without the calls that run made (its own budget counts them);
    with `others` (the person's other runs going on here, and what each
    spent: `live_budget`), each run's spending from its budget, which counts
    a call as it returns, rather than from its rows, stored every half
    second (docs/adr/0155)."""
    day_start, _ = day_window(now)
    month_start, _ = month_window(now)
    total = Coalesce(Sum("input_tokens"), 0) + Coalesce(Sum("output_tokens"), 0)
    today = Coalesce(Sum("input_tokens", filter=Q(created_at__gte=day_start)), 0) + Coalesce(
        Sum("output_tokens", filter=Q(created_at__gte=day_start)), 0
    )
    rows = ModelUsage.objects.filter(user_id=user_id, created_at__gte=min(day_start, month_start))
    for run in [*([outside_run] if outside_run is not None else []), *(mark for mark, _ in others)]:
        rows = rows.exclude(turn_id=run.turn_id, created_at__gte=run.started_at)
    row = rows.aggregate(month=total, today=today)
    # A run began today (a few seconds ago): what it spent is today's and this month's.
    spent = sum(tokens for _, tokens in others)
    return row["today"] + spent, row["month"] + spent


@dataclass(frozen=True)
class RunMark:
    """One run of a turn (its start, or its going on after an approval): its
    model calls are the usage rows of that turn stored since it began."""

    turn_id: int
    started_at: datetime


def token_windows(
    *,
    user_id: int,
    account: Account | None,
    now: datetime | None = None,
    outside_run: RunMark | None = None,
    others: Sequence[tuple[RunMark, int]] = (),
) -> tuple[TokenWindow, ...]:
    """The person's limits with what they used of each, daily first; () with
    no limit (and then nothing is read)."""
    daily, monthly = limits_for(account)
    if not daily and not monthly:
        return ()
    now = now or timezone.now()
    today, month = used_since(user_id=user_id, now=now, outside_run=outside_run, others=others)
    windows = []
    if daily:
        windows.append(TokenWindow(period=DAY, limit=daily, used=today, resets_at=day_window(now)[1]))
    if monthly:
        windows.append(TokenWindow(period=MONTH, limit=monthly, used=month, resets_at=month_window(now)[1]))
    return tuple(windows)


def turn_start_check(windows: tuple[TokenWindow, ...], now: datetime | None = None) -> None:
    """Raise TokenLimitReached (nothing is stored) when a limit is reached."""
    for window in windows:
        if window.used >= window.limit:
            raise TokenLimitReached(limit_message(window, now))


def in_flight_tokens(*, user_id: int, running) -> int:
    """The tokens the person's running turns (`running`: a Turn queryset,
    theirs, running now) will have used and have not stored yet: each that
    has stored no model call's usage counts as the person's last call (its
    first call sends the same prompt about the same workspace). A turn that
    stored its calls' usage (its streaming call's estimate is stored twice
    a second, docs/adr/0063) is counted by those rows already."""
    waiting = running.filter(model_usage__isnull=True).count()
    if not waiting:
        return 0
    last = (
        ModelUsage.objects.filter(user_id=user_id)
        .order_by("-created_at", "-pk")
        .values_list("input_tokens", "output_tokens")
        .first()
    )
    return waiting * sum(last) if last else 0


def in_flight_check(windows: tuple[TokenWindow, ...], in_flight: int, now: datetime | None = None) -> None:
    """TokenLimitReached when the person's turns running now will take what
    is left of a limit (docs/adr/0064): nothing is stored."""
    if not in_flight:
        return
    for window in windows:
        if window.used < window.limit <= window.used + in_flight:
            raise TokenLimitReached(
                f"Your turns running now will use about the {tokens_text(window.limit - window.used)} tokens left of "
                f"your {tokens_text(window.limit)} for {'today' if window.period == DAY else 'this month'}; wait for them "
                "to finish, then send this again. Nothing was sent."
            )


# The runs going on in this process, per person, with their budgets: a run
# of a person with a limit reads what their other runs here spent from
# those budgets, up to their last call (docs/adr/0155). Runs on other
# servers are known from the database: `_elsewhere` holds the runs whose
# last read found one.
_live: dict[int, dict[TokenBudget, RunMark]] = {}
_elsewhere: set[RunMark] = set()
_marks: weakref.WeakKeyDictionary[TokenBudget, tuple[int, RunMark]] = weakref.WeakKeyDictionary()


def _others_here(user_id: int, run: RunMark | None) -> list[tuple[RunMark, int]]:
    return [(mark, budget.spent) for budget, mark in _live.get(user_id, {}).items() if mark != run]


def live_budget(
    windows: tuple[TokenWindow, ...], *, user_id: int, run: RunMark, running: Callable[[], QuerySet[Turn]]
) -> TokenBudget:
    """A run's token budget, read again as the run goes on (`windows_reader`),
    knowing whether another run of its person is going on: here (once
    `run_began`), or on another server as the last read found (`running`:
    the person's running turns, on any server). Nothing is registered
    before `run_began`."""
    budget = TokenBudget(
        windows=windows,
        reread=windows_reader(user_id=user_id, run=run, running=running),
        others_running=lambda: run in _elsewhere or any(mark != run for mark in _live.get(user_id, {}).values()),
    )
    _marks[budget] = (user_id, run)
    return budget


def run_began(budget: TokenBudget) -> None:
    """The run of `budget` (a `live_budget`) is going on in this process."""
    if budget in _marks:
        user_id, run = _marks[budget]
        _live.setdefault(user_id, {})[budget] = run


def run_ended(budget: TokenBudget) -> None:
    if budget not in _marks:
        return
    user_id, run = _marks[budget]
    runs = _live.get(user_id, {})
    runs.pop(budget, None)
    if not runs:
        _live.pop(user_id, None)
    _elsewhere.discard(run)


def windows_reader(
    *, user_id: int, run: RunMark | None, running: Callable[[], QuerySet[Turn]] | None = None
) -> Callable[[], Awaitable[tuple[TokenWindow, ...]]]:
    """What a running turn calls to read its person's windows again
    (agent.context.TokenBudget): the limits staff set now, and what the
    person used outside the run, in their other turns, here (from their
    budgets) and on any other server (their stored rows). With a limit and
    `running`, it also notes whether a turn of theirs runs on another
    server (one indexed query): then the run reads again before every
    model call."""

    def read(others: list[tuple[RunMark, int]]) -> tuple[tuple[TokenWindow, ...], bool]:
        account = Account.objects.filter(user_id=user_id).first()
        windows = token_windows(user_id=user_id, account=account, outside_run=run, others=others)
        if not windows or running is None:
            return windows, False
        here = {mark.turn_id for mark, _ in others} | ({run.turn_id} if run is not None else set())
        return windows, running().exclude(pk__in=here).exists()

    async def reread() -> tuple[TokenWindow, ...]:
        windows, elsewhere = await database_sync_to_async(read)(_others_here(user_id, run))
        if run is not None:
            if elsewhere and run in _live.get(user_id, {}).values():
                _elsewhere.add(run)
            else:
                _elsewhere.discard(run)
        return windows

    return reread
