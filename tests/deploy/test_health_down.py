"""`GET /healthz` of a production server (deploy/start.sh) on a PostgreSQL
cluster and a Redis of the test's own, each stopped and started again under
it: 503 naming the failing part, within the probe's bound, and 200 again
once it is back, with no restart. The shared servers are never touched."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def probe(url: str) -> tuple[int, dict, float]:
    started = time.monotonic()
    try:
        with _OPENER.open(f"{url}/healthz", timeout=10) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    return status, json.loads(body), time.monotonic() - started


def probe_until(url: str, status: int, timeout: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        got, body, _ = probe(url)
        if got == status or time.monotonic() > deadline:
            assert got == status, body
            return body
        time.sleep(0.5)


def test_healthz_names_the_part_that_is_down_and_recovers_without_a_restart(start_production, private_services):
    postgres, redis = private_services
    server = start_production({"DATABASE_URL": postgres.url, "REDIS_URL": redis.url}, processes=1).url
    ok = {"status": "ok", "database": "ok", "channel_layer": "ok", "checkpointer": "ok"}
    assert probe_until(server, 200) == ok

    redis.stop()
    status, body, took = probe(server)
    assert (status, body) == (503, {**ok, "status": "failing", "channel_layer": "failing"})
    assert took < 4.0  # each check is bounded (2 s), and they run at once
    redis.start()
    assert probe_until(server, 200) == ok

    postgres.stop()
    status, body, took = probe(server)
    assert status == 503
    assert body["status"] == body["database"] == "failing"
    assert body["channel_layer"] == "ok"
    assert took < 4.0
    # Nothing secret in the answer: no address, no error text, no version.
    assert set(body.values()) <= {"ok", "failing"}
    postgres.start()
    assert probe_until(server, 200, timeout=60) == ok
