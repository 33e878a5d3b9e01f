"""A service that stops under open pages (conversations.outages,
docs/adr/0103): one line when it goes, a reminder a minute while it stays
away, one when it is back, and a traceback only for what is not an outage.
A page's socket that Redis stopped under is let go of whole: nothing of it
stays behind in the server process to keep its person shown as present."""

import asyncio
import logging
import sqlite3

import psycopg
import pytest
from channels.db import database_sync_to_async
from django.db import InterfaceError, OperationalError
from django.utils.html import escape
from redis.exceptions import ConnectionError as RedisConnectionError

from conversations import consumers, outages
from conversations.live import group_name, publisher
from conversations.models import OpenPage, Turn
from conversations.turns import registry
from tests.support.fake_model import Reply
from tests.support.outage_state import no_outage_on_record
from tests.support.services import PrivateRedis
from workspace.models import WorkspaceSnapshot

from .helpers import frame_containing, frames_until_turn_end, open_socket

LOGGER = logging.getLogger("haico.test.outages")


@pytest.fixture
def clock(monkeypatch):
    """outages' monotonic clock, moved by the test."""
    now = [1000.0]
    monkeypatch.setattr(outages.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(outages, "_outages", {})
    monkeypatch.setattr(outages, "_answered_at", {})
    return now


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen: list[logging.LogRecord] = []

    def emit(self, record):
        self.seen.append(record)


def _as_django_raises_it(driver_error: Exception) -> OperationalError:
    """The driver's error wrapped as Django's database layer wraps it (its cause)."""
    try:
        try:
            raise driver_error
        except Exception as cause:
            raise OperationalError(str(cause)) from cause
    except OperationalError as error:
        return error


def _lines(caplog):
    return [(record.levelname, record.getMessage(), record.exc_info is not None) for record in caplog.records]


def test_an_outage_is_a_line_when_it_begins_a_reminder_a_minute_and_a_line_when_it_ends(clock, caplog):
    caplog.set_level(logging.INFO)
    refused = RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    for second in range(0, 59):
        clock[0] = 1000.0 + second
        outages.note(LOGGER, refused, "could not send %d characters to %s", 12, "thread.a")
    assert _lines(caplog) == [
        (
            "WARNING",
            "Redis is unreachable (Error 111 connecting to 127.0.0.1:6379. Connection refused.): could not send 12 "
            "characters to thread.a; failures are counted until it answers again",
            False,
        )
    ]
    caplog.clear()
    clock[0] = 1061.0
    outages.note(LOGGER, refused, "the relay could not receive; trying again")
    assert _lines(caplog) == [
        (
            "WARNING",
            "Redis is still unreachable after 61 s, 59 calls failed since the last line (the latest: the relay "
            "could not receive; trying again)",
            False,
        )
    ]
    caplog.clear()
    clock[0] = 1070.5
    outages.answered(outages.REDIS)
    outages.answered(outages.REDIS)  # said once
    assert _lines(caplog) == [("WARNING", "Redis answers again after 70.5 s", False)]


def test_a_failure_long_after_the_last_one_begins_a_new_outage_per_service(clock, caplog):
    outages.note(LOGGER, RedisConnectionError("refused"), "first")
    closed = _as_django_raises_it(psycopg.OperationalError("the server closed the connection"))
    outages.note(LOGGER, closed, "a socket could not open")
    clock[0] += outages.REMINDER_SECONDS + 1
    outages.note(LOGGER, RedisConnectionError("refused"), "again")
    assert [line for _level, line, _traceback in _lines(caplog)] == [
        "Redis is unreachable (refused): first; failures are counted until it answers again",
        "the database is unreachable (the server closed the connection): a socket could not open; failures are "
        "counted until it answers again",
        "Redis is unreachable (refused): again; failures are counted until it answers again",
    ]


def test_a_call_refused_during_the_outage_and_told_just_after_it_ended_is_no_new_outage(clock, caplog):
    """A page's connection attempt refused while Redis was away can report
    after another call found Redis back: one outage, one line each way; a
    failure after that moment begins a new one."""
    refused = RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    outages.note(LOGGER, refused, "a page's socket was closed")
    clock[0] += 9.0
    outages.answered(outages.REDIS)
    clock[0] += 0.03
    outages.note(LOGGER, refused, "a page's socket was closed")
    assert [line for _level, line, _traceback in _lines(caplog)] == [
        "Redis is unreachable (Error 111 connecting to 127.0.0.1:6379. Connection refused.): a page's socket was "
        "closed; failures are counted until it answers again",
        "Redis answers again after 9.0 s",
    ]
    clock[0] += outages.STRAGGLER_SECONDS
    outages.note(LOGGER, refused, "the relay could not receive")
    assert _lines(caplog)[-1][1].startswith("Redis is unreachable (Error 111")


@pytest.mark.parametrize(
    "error",
    [
        _as_django_raises_it(psycopg.OperationalError("connection failed: Connection refused")),
        _as_django_raises_it(psycopg.errors.AdminShutdown("terminating connection due to administrator command")),
        _as_django_raises_it(psycopg.errors.CannotConnectNow("the database system is starting up")),
        _as_django_raises_it(psycopg.errors.ConnectionFailure("connection failure")),
        InterfaceError("connection already closed"),
        psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly"),
    ],
    ids=["refused", "shut-down", "starting-up", "connection-failure", "closed", "driver-error"],
)
def test_a_database_that_cannot_be_reached_is_an_outage(error):
    assert outages.unreachable_service(error) == outages.DATABASE


@pytest.mark.parametrize(
    "error",
    [
        _as_django_raises_it(psycopg.errors.LockNotAvailable("canceling statement due to lock timeout")),
        _as_django_raises_it(psycopg.errors.QueryCanceled("canceling statement due to statement timeout")),
        _as_django_raises_it(psycopg.errors.SerializationFailure("could not serialize access")),
        _as_django_raises_it(sqlite3.OperationalError("database is locked")),
        OperationalError("an error of unknown origin"),
    ],
    ids=["lock-timeout", "statement-timeout", "serialization", "sqlite-locked", "no-cause"],
)
def test_a_statement_the_database_refused_is_no_outage(error):
    assert outages.unreachable_service(error) is None


def test_an_error_that_is_no_outage_keeps_its_traceback(clock, caplog):
    try:
        raise ValueError("a bug")
    except ValueError as error:
        outages.note(LOGGER, error, "could not hand a fragment of %s to a page", "thread.a")
    assert _lines(caplog) == [("ERROR", "could not hand a fragment of thread.a to a page", True)]
    assert outages._outages == {}


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
async def test_a_page_whose_redis_stops_is_let_go_of_and_no_longer_present(owner, thread, settings, tmp_path, monkeypatch):
    if reason := PrivateRedis.available():
        pytest.skip(reason)
    no_outage_on_record(monkeypatch)
    redis, records = PrivateRedis(tmp_path), _Records()
    redis.start()
    try:
        settings.CHANNEL_LAYERS = {
            "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis.url]}}
        }
        socket = await open_socket(thread.pk, owner, presence=True)
        await frame_containing(socket, 'id="presence"')  # open, and shown as open
        group = group_name(thread.pk)
        assert len(publisher.members(group)) == 1
        assert await database_sync_to_async(OpenPage.objects.filter(thread=thread).count)() == 1

        logging.getLogger("haico").addHandler(records)
        redis.stop()
        # The server closes the socket (1011: the page reconnects) when the
        # application ends with this; its record of it is dropped (haico_site.logs).
        with pytest.raises(outages.SocketClosedForOutage):
            await socket.wait(timeout=5)

        assert publisher.members(group) == []
        assert await database_sync_to_async(OpenPage.objects.filter(thread=thread).count)() == 0
        assert not [record for record in records.seen if record.exc_info]
        assert any(record.getMessage().startswith("Redis is unreachable") for record in records.seen)
    finally:
        logging.getLogger("haico").removeHandler(records)
        redis.close()


def _database_away(*args, **kwargs):
    raise _as_django_raises_it(psycopg.OperationalError("connection failed: Connection refused"))


@pytest.mark.django_db(transaction=True)
async def test_a_page_s_actions_while_the_database_is_away_are_answered_and_a_stop_still_stops_a_turn_here(
    owner, thread, script, sockets, monkeypatch
):
    """The socket checks its session in the database before each message: a
    database restarting closed the socket then, and the Stop, answer or
    message on it was dropped without a word, the turn running on."""
    script(Reply(text=" ".join(f"word{i}" for i in range(400)), token_delay=0.02))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data='{"message": "Write at length", "HEADERS": {"HX-Request": "true"}}')
    for _ in range(200):
        running = registry._running.get(thread.pk)
        if running is not None and running.turn.draft:
            break
        await asyncio.sleep(0.02)
    real = consumers.session_signs_in
    monkeypatch.setattr(consumers, "session_signs_in", _database_away)

    await socket.send_to(text_data='{"message": "And another", "HEADERS": {"HX-Request": "true"}}')
    await frame_containing(socket, escape(consumers.DATABASE_AWAY_NOT_DONE[None]))
    await socket.send_to(text_data='{"action": "approval", "turn": 1, "decision": "approve"}')
    await frame_containing(socket, escape(consumers.DATABASE_AWAY_NOT_DONE["approval"]))
    await socket.send_to(text_data='{"action": "stop"}')
    await frame_containing(socket, escape(consumers.DATABASE_AWAY_STOPPING))
    await frames_until_turn_end(socket)

    monkeypatch.setattr(consumers, "session_signs_in", real)
    turn = await Turn.objects.aget(thread=thread, index=1)
    assert turn.status == Turn.Status.STOPPED and turn.answer.startswith("word0")
    assert [s async for s in WorkspaceSnapshot.objects.filter(thread=thread).values_list("user_message", flat=True)] == [
        "Write at length"
    ]
    # The same socket goes on once the database answers.
    await socket.send_to(text_data='{"action": "stop"}')
    await frame_containing(socket, "No turn is running.")


@pytest.mark.django_db(transaction=True)
async def test_the_turn_watcher_meeting_a_database_away_logs_a_line_not_a_traceback_every_round(
    thread, script, monkeypatch, caplog
):
    caplog.set_level(logging.INFO)
    no_outage_on_record(monkeypatch)
    monkeypatch.setattr(registry, "CANCEL_POLL_SECONDS", 0.0)
    monkeypatch.setattr(registry.slot, "cancel_requested_among", _database_away)
    script(Reply(text=" ".join(f"word{i}" for i in range(100)), token_delay=0.02))
    await registry.start_turn(thread=thread, user_message="Write")
    await registry.wait_for_turn(thread.pk)

    watcher = [r for r in caplog.records if "turn watcher" in r.getMessage()]
    assert watcher and all(r.exc_info is None for r in watcher)
    # The outage's first line; the rounds after it are counted. A database
    # connection opened meanwhile by any thread of this process (another
    # test's, under a parallel run) says the database answers again, and
    # the next failing round begins a new outage with its own first line.
    # The last outage may end after the last round too: the turn's own end
    # opens a connection that answers.
    answered_again = [r for r in caplog.records if r.name == "haico.outages" and "answers again" in r.getMessage()]
    assert len(answered_again) <= len(watcher) <= 1 + len(answered_again), [r.getMessage() for r in caplog.records]
