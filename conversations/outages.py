"""A service that stops (Redis, the database) makes every caller fail at
once and again at each retry: a ten-second Redis stop under two open pages
wrote 130 tracebacks to the log, one per page's reconnect, per relay loop
and per page count. An operator needs to know that it is down, for how
long, and that it is back (docs/adr/0103).

`note` writes a failure that comes from a service being unreachable as one
warning line when the outage begins, then at most one line every
REMINDER_SECONDS while it lasts (with how many calls failed meanwhile), and
`answered` one line when a call to it succeeds again (for the database:
when Django opens a connection again, `database_connected`). Any other error is
logged whole, with its traceback, as before. An outage nobody reports the
end of is over once no call has failed for REMINDER_SECONDS: the next
failure begins a new one.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import psycopg
from django.db import InterfaceError, OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

REDIS = "Redis"
DATABASE = "the database"
REMINDER_SECONDS = 60.0
# A call that began while the service was away can fail just after another
# call found it back (a connection refused a moment before, reported a
# moment after): such a straggler belongs to the outage that ended, and is
# no new one. A service that goes away again is told by the next failure
# after this.
STRAGGLER_SECONDS = 1.0
# A PostgreSQL that is going away or not taking connections yet: admin
# shutdown, crash shutdown, "the database system is starting up". Class 08
# (connection exceptions) is checked by prefix; a failure to connect at all
# carries no SQLSTATE.
_SERVER_GOING_AWAY = frozenset({"57P01", "57P02", "57P03"})

logger = logging.getLogger("haico.outages")


class SocketClosedForOutage(Exception):
    """Ends a page's socket that an outage broke (conversations.consumers);
    logged already, so the server's record of it is dropped (haico_site.logs)."""


def unreachable_service(error: BaseException) -> str | None:
    """The service whose being unreachable `error` says, or None for an error
    of any other kind."""
    if isinstance(error, RedisConnectionError | RedisTimeoutError):
        return REDIS
    if _database_unreachable(error):
        return DATABASE
    return None


def _database_unreachable(error: BaseException) -> bool:
    """Whether `error` says PostgreSQL cannot be reached, as opposed to a
    statement it refused (a lock timeout, a cancelled query, a serialization
    failure), which is an error of its own and keeps its traceback. Django
    raises its own InterfaceError for a connection already closed, and wraps
    the driver's errors (their `__cause__`). SQLite is a file this process
    opens: none of its errors is an outage."""
    if isinstance(error, InterfaceError | psycopg.InterfaceError):
        return True
    driver_error = error if isinstance(error, psycopg.Error) else error.__cause__
    if not isinstance(error, OperationalError | psycopg.OperationalError) or not isinstance(
        driver_error, psycopg.OperationalError
    ):
        return False
    state = driver_error.sqlstate
    return state is None or state.startswith("08") or state in _SERVER_GOING_AWAY


@dataclass
class _Outage:
    began: float
    last_failure: float
    last_line: float
    unlogged: int = 0  # failures since the last line about it


_outages: dict[str, _Outage] = {}
_answered_at: dict[str, float] = {}  # when each service last answered again after an outage
_lock = threading.Lock()  # failures come from the event loop and from worker threads


def note(log: logging.Logger, error: BaseException, message: str, *args) -> None:
    """Log `message` % `args` about `error`, which the caller caught: as part
    of an outage if it says a service is unreachable, with its traceback
    otherwise."""
    service = unreachable_service(error)
    if service is None:
        log.error(message, *args, exc_info=error)
        return
    now = time.monotonic()
    with _lock:
        outage = _outages.get(service)
        if outage is None and now - _answered_at.get(service, -STRAGGLER_SECONDS) < STRAGGLER_SECONDS:
            return
        if outage is None or now - outage.last_failure > REMINDER_SECONDS:
            _outages[service] = _Outage(began=now, last_failure=now, last_line=now)
            text = "%s is unreachable (%s): " + message + "; failures are counted until it answers again"
            # On one line: the driver's message may hold its own line breaks.
            values = (service, " ".join(str(error).split()), *args)
        elif now - outage.last_line < REMINDER_SECONDS:
            outage.last_failure = now
            outage.unlogged += 1
            return
        else:
            text = "%s is still unreachable after %.0f s, %d calls failed since the last line (the latest: " + message + ")"
            values = (service, now - outage.began, outage.unlogged + 1, *args)
            outage.last_failure = outage.last_line = now
            outage.unlogged = 0
    log.warning(text, *values)


def answered(service: str) -> None:
    """A call to `service` succeeded: if it was down, say it is back."""
    if service not in _outages:  # the usual case, without the lock
        return
    with _lock:
        outage = _outages.pop(service, None)
        if outage is not None:
            _answered_at[service] = time.monotonic()
    if outage is not None:
        logger.warning("%s answers again after %.1f s", service, time.monotonic() - outage.began)


def database_connected(sender, connection, **kwargs) -> None:
    """`connection_created`'s receiver: Django opened a database connection,
    so the database answers (a failure to connect raises instead)."""
    answered(DATABASE)
