"""The server's log lines (settings.LOGGING, docs/adr/0060).

Every line carries its time (UTC, milliseconds), level, logger and message.
`TextFormatter` writes them as one readable line (a traceback follows on
its own lines); `JsonFormatter` (HAICO_LOG_FORMAT=json) as one JSON object a
line, a traceback included as a string, for a log collector.

`TurnFilter` adds the thread and turn of the running turn
(conversations.turns.logcontext) to every record written inside it.
`AccessLog` replaces daphne's access log, which writes straight to stdout
in its own format, with records of the `daphne.access` logger, and
`log_uncaught_exceptions` sends what nothing caught (in the main thread or
another) through logging too.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from datetime import UTC, datetime

from conversations import outages
from conversations.outages import SocketClosedForOutage
from conversations.turns.logcontext import current_turn

# Record attributes of our own, written to the JSON object when present.
EXTRA_FIELDS = ("thread_id", "turn", "client", "method", "path", "status", "size")


def _time(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DropSocketsClosedForOutage(logging.Filter):
    """The server's "Exception inside application" record, with its
    traceback, of a socket an outage closed: the outage said so in one line
    (conversations.outages)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, SocketClosedForOutage)


class DatabaseOutageAsLine(logging.Filter):
    """Django's record, with its traceback, of a request that failed because
    the database could not be reached (answered 503: haico_site.views and
    haico_site.middleware.LostConnectionMiddleware): it becomes part of the
    outage's lines (conversations.outages), so a restart under a busy site
    is a few lines, not a traceback for every request. Anything else passes."""

    logger = logging.getLogger("haico.site")

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        request = getattr(record, "request", None)
        if error is None or outages.unreachable_service(error) != outages.DATABASE:
            # Django's record of the 503 that answered it (without the
            # exception, which was noted already: haico_site.middleware).
            return not getattr(request, "_database_unreachable", False)
        outages.note(self.logger, error, "could not answer %s %s", getattr(request, "method", "?"), getattr(request, "path", "?"))
        return False


class TurnFilter(logging.Filter):
    """Names the thread and turn on every line written while a turn runs."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = current_turn.get()
        if ids is not None and not hasattr(record, "thread_id"):
            record.thread_id = ids.thread_id
            record.turn = ids.turn_index
        return True


def _exception_text(formatter: logging.Formatter, record: logging.LogRecord) -> str:
    # A filter may have set the text already (agent.secrets.RedactSecrets
    # blanks API keys out of it): use that, as logging.Formatter does.
    if not record.exc_text:
        record.exc_text = formatter.formatException(record.exc_info)
    return record.exc_text


class TextFormatter(logging.Formatter):
    """`2026-12-02T10:00:00.123Z WARNING haico.agent [thread=… turn=3] message`."""

    def format(self, record: logging.LogRecord) -> str:
        where = f" [thread={record.thread_id} turn={record.turn}]" if hasattr(record, "thread_id") else ""
        line = f"{_time(record)} {record.levelname} {record.name}{where} {record.getMessage()}"
        if record.exc_info or record.exc_text:
            line += "\n" + _exception_text(self, record)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and what else the record knows."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Which server process wrote the line, where several write to one log (deploy/start.sh).
        self.instance = os.environ.get("HAICO_INSTANCE", "")

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": _time(record), "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if self.instance:
            entry["instance"] = self.instance
        for name in EXTRA_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info or record.exc_text:
            entry["exc"] = _exception_text(self, record)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


access_logger = logging.getLogger("daphne.access")
# daphne's own names for the WebSocket events.
WEBSOCKET_ACTIONS = {
    "connecting": "WSCONNECTING",
    "rejected": "WSREJECT",
    "connected": "WSCONNECT",
    "disconnected": "WSDISCONNECT",
}


class AccessLog:
    """daphne's action logger (its `AccessLogGenerator`'s place): one INFO
    record per finished HTTP request and per WebSocket event."""

    def __init__(self, stream=None):
        pass  # daphne hands over the stream it would have written to; logging decides instead

    def __call__(self, protocol, action, details):
        client = details.get("client") or "-"
        if protocol == "http" and action == "complete":
            method, path, status, size = details["method"], details["path"], details["status"], details.get("size")
            access_logger.info(
                '%s "%s %s" %s %s',
                client,
                method,
                path,
                status,
                size if size is not None else "-",
                extra={"client": client, "method": method, "path": path, "status": status, "size": size},
            )
        elif protocol == "websocket" and action in WEBSOCKET_ACTIONS:
            method, path = WEBSOCKET_ACTIONS[action], details.get("path", "")
            access_logger.info('%s "%s %s"', client, method, path, extra={"client": client, "method": method, "path": path})


uncaught_logger = logging.getLogger("haico.uncaught")


def log_uncaught_exceptions() -> None:
    """Exceptions nothing caught go through logging (its format, its handler)."""

    def main_thread_hook(kind, value, traceback):
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, value, traceback)
            return
        uncaught_logger.critical("uncaught exception", exc_info=(kind, value, traceback))

    def thread_hook(args):
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "?"
        uncaught_logger.critical(
            "uncaught exception in thread %s", name, exc_info=(args.exc_type, args.exc_value, args.exc_traceback)
        )

    sys.excepthook = main_thread_hook
    threading.excepthook = thread_hook
