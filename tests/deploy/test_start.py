"""deploy/start.sh, the production start of `./dev prod`, the container and
CI, run for real: what it refuses, and a production server on SQLite that
serves its own static files (hashed names, cached for years, gzip and
brotli), writes its log in the documented format and stops on SIGTERM.
Several processes on PostgreSQL + Redis behind nginx:
tests/browser/test_behind_proxy.py."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

import brotli
import pytest

from tests.support.production import production_env, run_start

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+ .+")
STATIC_REF = re.compile(r'(?:href|src)="(/static/[^"]+)"')
FOREVER = "max-age=315360000, public, immutable"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url: str, **headers: str):
    request = urllib.request.Request(url, headers=headers)
    with _OPENER.open(request, timeout=10) as response:
        return response.status, response.headers, response.read()


@pytest.mark.parametrize(
    ("database", "redis", "says"),
    [
        ("sqlite:///{tmp}/db.sqlite3", "", "on SQLite and the in-memory channel layer"),
        ("postgres://haico:haico@127.0.0.1:9/haico", "", "on the in-memory channel layer (REDIS_URL is not set)"),
        ("sqlite:///{tmp}/db.sqlite3", "redis://127.0.0.1:9/0", "on SQLite (DATABASE_URL is not a postgres:// URL)"),
    ],
)
def test_several_processes_without_postgresql_and_redis_are_refused_before_anything_changes(tmp_path, database, redis, says):
    env = production_env(tmp_path, {"DATABASE_URL": database.format(tmp=tmp_path), "HAICO_WEB_PROCESSES": "2"})
    if redis:
        env["REDIS_URL"] = redis
    done = run_start(env, "8000")
    assert done.returncode == 2
    assert f"refusing to start 2 server processes {says}" in done.stderr
    assert "HAICO_WEB_PROCESSES=1" in done.stderr
    assert not (tmp_path / "db.sqlite3").exists()  # nothing migrated


@pytest.mark.parametrize("args", [["0"], ["65536"], ["eighty"], ["8000", "8001"]])
def test_a_bad_port_is_refused_with_the_usage(tmp_path, args):
    done = run_start(production_env(tmp_path), *args)
    assert done.returncode == 2
    assert "usage: deploy/start.sh [PORT]" in done.stderr


def test_a_deploy_check_warning_stops_the_start_before_anything_changes(tmp_path):
    env = production_env(tmp_path, {"SECRET_KEY": "short-and-guessable"})
    done = run_start(env, "8000", timeout=120)
    assert done.returncode == 1
    assert "security.W009" in done.stderr + done.stdout  # the weak SECRET_KEY, named
    assert "fix the settings it names" in done.stderr
    assert not (tmp_path / "db.sqlite3").exists()


def test_a_production_server_serves_hashed_compressed_static_files_and_logs_every_line_in_the_format(start_production):
    production = start_production()
    status, headers, body = get(f"{production.url}/accounts/login/")
    assert status == 200
    page = body.decode()
    references = STATIC_REF.findall(page)
    assert len(references) >= 5  # favicon, three stylesheets, htmx and its socket extension, our script
    for path in references:
        # The hashed name: the cache can keep it forever, a new version has another name.
        assert re.search(r"\.[0-9a-f]{12}\.(css|js|svg)$", path), path
        status, plain_headers, plain = get(production.url + path)
        assert status == 200
        assert plain_headers["Cache-Control"] == FOREVER
        if path.endswith((".css", ".js", ".svg")):
            _, gzip_headers, gzipped = get(production.url + path, **{"Accept-Encoding": "gzip"})
            _, br_headers, brotlied = get(production.url + path, **{"Accept-Encoding": "br, gzip"})
            assert gzip_headers["Content-Encoding"] == "gzip" and gzip.decompress(gzipped) == plain
            assert br_headers["Content-Encoding"] == "br" and brotli.decompress(brotlied) == plain
            assert br_headers["Cache-Control"] == FOREVER
            assert "Accept-Encoding" in br_headers["Vary"]
    # The plain name is not served: nothing asks for it, and it could be stale.
    with pytest.raises(urllib.error.HTTPError) as missing:
        get(f"{production.url}/static/css/haico.css")
    assert missing.value.code == 404
    assert json.loads(get(f"{production.url}/healthz")[2])["status"] == "ok"

    time.sleep(0.5)  # the access lines of the requests above
    lines = production.server_lines()
    assert lines, production.log()
    assert all(TEXT_LINE.match(line) or line.startswith(("Traceback", "  ")) for line in lines), "\n".join(lines)
    assert any(re.search(r' INFO daphne\.access 127\.0\.0\.1:\d+ "GET /healthz" 200 \d+$', line) for line in lines)
    assert any(" INFO daphne.server Listening on TCP address 127.0.0.1:" in line for line in lines)

    # SIGTERM (a supervisor's stop) stops the server and the script, cleanly.
    os.kill(production.process.pid, signal.SIGTERM)
    assert production.process.wait(30) == 0
    with pytest.raises(OSError):
        get(f"{production.url}/healthz")


def test_when_one_server_process_dies_the_script_stops_the_others_and_fails(start_production, tmp_path):
    production = start_production()
    [server] = subprocess.run(
        ["pgrep", "-P", str(production.process.pid), "-f", "haico_site.serve"], capture_output=True, text=True
    ).stdout.split()
    os.kill(int(server), signal.SIGKILL)
    assert production.process.wait(30) != 0
    assert "a server process ended" in production.log()
