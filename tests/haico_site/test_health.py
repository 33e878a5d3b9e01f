"""`GET /healthz` in the process: every part answering, the private Redis
stopped and started again, methods, and the plain-HTTP probe that is
answered rather than redirected. The same with PostgreSQL stopped, through
a real production server: tests/deploy/test_health_down.py."""

import json
import logging
import time

import pytest
from django.test import AsyncClient

from tests.support.services import PrivateRedis
from tests.support.turns import turn_environment  # noqa: F401  (autouse: the saver this opens is closed)

pytestmark = pytest.mark.django_db(transaction=True)

ALL_OK = {"status": "ok", "database": "ok", "channel_layer": "ok", "checkpointer": "ok"}


async def test_every_part_answering_is_200_with_a_small_json_and_nothing_else():
    response = await AsyncClient().get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == ALL_OK
    assert "no-store" in response["Cache-Control"]
    assert not response.cookies  # no session, nothing to remember
    assert "default-src 'self'" in response["Content-Security-Policy"]  # like every answer (test_csp.py)


async def test_it_takes_get_and_head_only():
    assert (await AsyncClient().post("/healthz")).status_code == 405
    assert (await AsyncClient().head("/healthz")).status_code == 200


async def test_a_plain_http_probe_is_answered_not_redirected_to_https(settings):
    settings.SECURE_SSL_REDIRECT = True
    assert (await AsyncClient().get("/healthz")).status_code == 200
    assert (await AsyncClient().get("/accounts/login/")).status_code == 301


@pytest.fixture
def private_redis(tmp_path, settings):
    if reason := PrivateRedis.available():
        pytest.skip(reason)
    redis = PrivateRedis(tmp_path)
    redis.start()
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis.url]}}}
    yield redis
    redis.close()


@pytest.mark.redis
async def test_with_redis_stopped_the_channel_layer_is_failing_and_503_comes_within_three_seconds(private_redis, caplog):
    assert json.loads((await AsyncClient().get("/healthz")).content) == ALL_OK

    private_redis.stop()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        response = await AsyncClient().get("/healthz")
    assert time.monotonic() - started < 3.0
    # One warning naming the part and the kind of failure; no ERROR line per probe.
    assert [(r.name, r.levelname) for r in caplog.records] == [("haico.health", "WARNING")]
    assert "channel_layer is failing" in caplog.records[0].getMessage()
    assert response.status_code == 503
    assert json.loads(response.content) == {
        "status": "failing",
        "database": "ok",
        "channel_layer": "failing",
        "checkpointer": "ok",
    }

    private_redis.start()
    deadline = time.monotonic() + 15
    while (response := await AsyncClient().get("/healthz")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert json.loads(response.content) == ALL_OK
