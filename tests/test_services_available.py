"""The external services the integration tests use really answer.

Locally these skip when the URL is unset; CI sets the URLs and
HAICO_REQUIRE_ALL_TESTS=1, so a service that did not come up fails the run
here, with the connection error, instead of silently skipping its tests.
"""

import os

import pytest


def _url(name: str) -> str:
    url = os.environ.get(name, "")
    if not url:
        pytest.skip(f"{name} is not set (scripts/test_services.sh start prints it)")
    return url


@pytest.mark.postgres
def test_postgres_answers_with_a_version_django_supports():
    import psycopg

    with psycopg.connect(_url("HAICO_TEST_POSTGRES_URL"), connect_timeout=5) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        # Django 5.2 needs PostgreSQL 14 or newer.
        assert conn.info.server_version >= 140000, conn.info.server_version


@pytest.mark.redis
def test_redis_answers():
    import redis

    client = redis.Redis.from_url(_url("HAICO_TEST_REDIS_URL"), socket_connect_timeout=5)
    try:
        assert client.ping() is True
    finally:
        client.close()
