"""The log's lines (haico_site.logs, docs/adr/0060): time, level, logger and
message on every line, one JSON object a line with HAICO_LOG_FORMAT=json,
the thread and turn on what a turn writes, daphne's access log and uncaught
exceptions in the same format. A real server's stderr:
tests/deploy/test_start.py and tests/browser/test_behind_proxy.py."""

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from conversations.turns.logcontext import TurnIds, current_turn
from haico_site.logs import AccessLog, JsonFormatter, TextFormatter, TurnFilter

BASE_DIR = Path(__file__).resolve().parents[2]
TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+ .+")


def record(message="hello %s", args=("world",), level=logging.WARNING, name="haico.test", exc_info=None):
    made = logging.LogRecord(name, level, __file__, 1, message, args, exc_info)
    TurnFilter().filter(made)
    return made


def test_a_text_line_has_time_level_logger_and_message():
    line = TextFormatter().format(record())
    assert TEXT_LINE.match(line), line
    assert line.endswith(" WARNING haico.test hello world")


def test_a_json_line_is_one_object_with_time_level_logger_and_message():
    entry = json.loads(JsonFormatter().format(record()))
    assert entry.keys() == {"time", "level", "logger", "message"}
    assert (entry["level"], entry["logger"], entry["message"]) == ("WARNING", "haico.test", "hello world")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"])


def test_a_traceback_stays_inside_its_json_line():
    try:
        raise RuntimeError("disk on fire")
    except RuntimeError:
        line = JsonFormatter().format(record(exc_info=sys.exc_info()))
    assert "\n" not in line
    assert "RuntimeError: disk on fire" in json.loads(line)["exc"]


def test_lines_written_inside_a_turn_name_its_thread_and_turn_also_from_tasks_it_starts():
    async def turn():
        current_turn.set(TurnIds(thread_id="t-1", turn_index=3))
        inner = await asyncio.create_task(asyncio.to_thread(record))
        return record(), inner

    own, from_thread = asyncio.run(turn())
    for made in (own, from_thread):
        entry = json.loads(JsonFormatter().format(made))
        assert (entry["thread_id"], entry["turn"]) == ("t-1", 3)
    assert "[thread=t-1 turn=3]" in TextFormatter().format(own)
    # Outside the turn, nothing is named.
    assert "thread_id" not in json.loads(JsonFormatter().format(record()))


def test_daphnes_access_events_become_access_log_records(caplog):
    with caplog.at_level(logging.INFO, logger="daphne.access"):
        AccessLog(sys.stdout)(
            "http", "complete", {"client": "10.0.0.1:5000", "method": "GET", "path": "/x", "status": 200, "size": 12}
        )
        AccessLog(sys.stdout)("websocket", "connected", {"client": "10.0.0.1:5001", "path": "/ws/threads/1/"})
    http, socket = caplog.records
    assert http.getMessage() == '10.0.0.1:5000 "GET /x" 200 12'
    assert json.loads(JsonFormatter().format(http))["status"] == 200
    assert socket.getMessage() == '10.0.0.1:5001 "WSCONNECT /ws/threads/1/"'


UNCAUGHT = """
import threading, django
django.setup()
from haico_site.logs import log_uncaught_exceptions
log_uncaught_exceptions()
thread = threading.Thread(target=lambda: 1 / 0, name="worker")
thread.start(); thread.join()
raise RuntimeError("nothing caught this")
"""


def test_uncaught_exceptions_go_through_the_log_format(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "HAICO_", "DATABASE_"))},
        "DJANGO_SETTINGS_MODULE": "haico_site.settings",
        "HAICO_LOG_FORMAT": "json",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    done = subprocess.run([sys.executable, "-c", UNCAUGHT], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    entries = [json.loads(line) for line in done.stderr.splitlines()]  # every line is one JSON object
    thread_error, main_error = entries
    assert thread_error["message"] == "uncaught exception in thread worker"
    assert "ZeroDivisionError" in thread_error["exc"]
    assert (main_error["level"], main_error["logger"]) == ("CRITICAL", "haico.uncaught")
    assert "RuntimeError: nothing caught this" in main_error["exc"]
