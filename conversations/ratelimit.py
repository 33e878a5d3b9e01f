"""Rate limits on what one address or one person may do in a while
(docs/adr/0051): sign-ups, password resets and failed logins per address,
reset mails per account, failed MCP logins per address, open pages per
person. Running turns per person are counted from the database instead
(conversations.turns.slot), where they already are.

Counts live in Django's cache: Redis when REDIS_URL is set (every server
process counts together), else this process's memory (one process: the
SQLite default). Each limit is a setting read as "N/period" ("10/hour",
"5/15min", "off"). The counters are fixed windows: a window's count is one
cache key that expires with it (`cache.incr` is atomic in both backends).
If the cache cannot be reached the limits are not applied, logged: a
broken cache must not lock everyone out.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import random
import re
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from . import outages

logger = logging.getLogger("haico.conversations.ratelimit")

UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}
RATE_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+?)s?\s*$")


@dataclass(frozen=True)
class Rate:
    count: int
    seconds: int

    def __str__(self) -> str:
        return f"{self.count} per {duration_text(self.seconds)}"


def parse_rate(text: str) -> Rate | None:
    """'10/hour', '5/15min', '3/d' as a Rate; 'off', '' or '0' as None (no limit)."""
    text = (text or "").strip().lower()
    if text in ("", "off", "0", "none"):
        return None
    match = RATE_RE.match(text)
    if match is None or match.group(3) not in UNITS:
        raise ValueError(f"not a rate: {text!r} (write it like 10/hour, 5/15min or off)")
    count, multiple, unit = int(match.group(1)), int(match.group(2) or 1), UNITS[match.group(3)]
    if count == 0:
        return None
    return Rate(count=count, seconds=multiple * unit)


def duration_text(seconds: float) -> str:
    """'45 seconds', '1 minute', '12 minutes', '2 hours': rounded up, as a person reads a wait."""
    seconds = max(1, math.ceil(seconds))
    for size, name in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = math.ceil(seconds / size)
            return f"{n} {name}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


def address_of(request_or_scope) -> str:
    """Who is asking, as far as the network says: the connecting address
    (behind a proxy that is the client's only when daphne runs with
    --proxy-headers). An IPv6 address counts as its /64, which one
    household or machine usually holds whole."""
    if isinstance(request_or_scope, dict):  # an ASGI scope
        client = request_or_scope.get("client") or ("", 0)
        raw = client[0] if client else ""
    else:
        raw = request_or_scope.META.get("REMOTE_ADDR", "")
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        return raw or "unknown"
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def _key(scope: str, who: str, window: int) -> str:
    # Hashed: an address or an email is not kept in the cache as written.
    return f"haico:rate:{scope}:{hashlib.sha256(who.encode()).hexdigest()[:32]}:{window}"


def hit(scope: str, who: str, rate: Rate | None) -> float | None:
    """Count one use of `scope` by `who`. None while within `rate`; once
    past it, the seconds until the window ends and it may be used again."""
    if rate is None:
        return None
    now = time.time()
    window = int(now // rate.seconds)
    key = _key(scope, who, window)
    try:
        cache.add(key, 0, timeout=rate.seconds + 1)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between the two calls
            cache.add(key, 1, timeout=rate.seconds + 1)
            count = 1
    except Exception as error:
        outages.note(logger, error, "the rate limit %s could not reach the cache; not applied", scope)
        return None
    if count > rate.count:
        return (window + 1) * rate.seconds - now
    return None


def over(scope: str, who: str, rate: Rate | None) -> float | None:
    """Like `hit` without counting: is `who` already past `rate`?"""
    if rate is None:
        return None
    now = time.time()
    window = int(now // rate.seconds)
    try:
        count = cache.get(_key(scope, who, window), 0)
    except Exception as error:
        outages.note(logger, error, "the rate limit %s could not reach the cache; not applied", scope)
        return None
    if count >= rate.count:
        return (window + 1) * rate.seconds - now
    return None


def rate_setting(name: str) -> Rate | None:
    return parse_rate(getattr(settings, name))


# -- open pages per person --
# A page's socket counts in the window it opened in and in every later one
# it is still open for (each open socket renews itself once per window, see
# conversations.consumers); a person's open pages are the larger of the
# current and the previous window's counts. A closed socket takes itself
# off both; one left by a server that died drops out within two windows.
# Each page renews at an offset of its own into the window: pages opened
# together (a team's tabs, a server's pages after a restart) would otherwise
# all renew in the same instant, a burst of cache calls once a minute on
# every server that stalls what the pages are being sent (docs/adr/0097).

SOCKET_WINDOW_SECONDS = 60


def _socket_key(user_id, window: int) -> str:
    return f"haico:sockets:{user_id}:{window}"


def socket_window(now: float | None = None) -> int:
    return int((now or time.time()) // SOCKET_WINDOW_SECONDS)


def socket_renewal_offset() -> float:
    """How far into each window one page renews its count: anywhere in the
    window's first half, well before it ends, so the page counts in every
    window it stays open for."""
    return random.uniform(0.5, SOCKET_WINDOW_SECONDS / 2)


def seconds_to_socket_renewal(offset: float, now: float | None = None) -> float:
    """Seconds from `now` to `offset` seconds into the next window."""
    now = time.time() if now is None else now
    return SOCKET_WINDOW_SECONDS - now % SOCKET_WINDOW_SECONDS + offset


def sockets_open(user_id) -> int:
    window = socket_window()
    try:
        counts = cache.get_many([_socket_key(user_id, window), _socket_key(user_id, window - 1)])
    except Exception as error:
        outages.note(logger, error, "open pages could not be counted (cache unreachable); not limited")
        return 0
    return max(counts.values(), default=0)


def socket_count(user_id, window: int, delta: int) -> None:
    """Add `delta` (1 or -1) to the person's count of open pages in `window`."""
    key = _socket_key(user_id, window)
    try:
        if delta > 0:
            cache.add(key, 0, timeout=3 * SOCKET_WINDOW_SECONDS)
            cache.incr(key, delta)
        else:
            cache.decr(key, -delta)
    except ValueError:
        pass  # the window's count expired: nothing left to take off
    except Exception as error:
        outages.note(logger, error, "open pages could not be counted (cache unreachable)")
