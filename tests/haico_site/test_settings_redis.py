"""The Redis channel layer the scale-out setup uses (REDIS_URL): a group
message sent by one layer instance reaches a channel added by another, as it
must between two server processes."""

import uuid

import pytest

from tests.support.ports import free_port

pytestmark = pytest.mark.redis


async def test_group_send_reaches_a_member_added_through_another_layer_instance(redis_url):
    from channels_redis.core import RedisChannelLayer

    # A unique prefix keeps parallel runs on one Redis apart.
    prefix = f"haico-test-{uuid.uuid4().hex[:8]}"
    receiver_side = RedisChannelLayer(hosts=[redis_url], prefix=prefix)
    sender_side = RedisChannelLayer(hosts=[redis_url], prefix=prefix)
    group = f"thread.{uuid.uuid4().hex}"
    try:
        channel = await receiver_side.new_channel()
        await receiver_side.group_add(group, channel)

        await sender_side.group_send(group, {"type": "thread.fragment", "html": "<p>token</p>"})
        message = await receiver_side.receive(channel)

        assert message == {"type": "thread.fragment", "html": "<p>token</p>"}

        await receiver_side.group_discard(group, channel)
        await sender_side.group_send(group, {"type": "thread.fragment", "html": "<p>late</p>"})
        other = await receiver_side.new_channel()
        await receiver_side.group_add(group, other)
        await sender_side.group_send(group, {"type": "thread.fragment", "html": "<p>only new</p>"})
        assert (await receiver_side.receive(other))["html"] == "<p>only new</p>"
    finally:
        await receiver_side.flush()
        await receiver_side.close_pools()
        await sender_side.close_pools()


class _PrivateRedis:
    """A redis-server of this test's own, to restart (the shared one is never touched)."""

    def __init__(self):
        self.port = free_port()
        self.process = None

    def start(self):
        import shutil
        import socket
        import subprocess
        import time

        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


@pytest.mark.redis
async def test_the_layer_goes_on_after_redis_closed_its_pooled_connections(redis_url, settings):
    """docs/adr/0044: a restart closes every pooled connection; the next send
    is tried again on a new one instead of failing."""
    from channels_redis.core import RedisChannelLayer
    from redis.exceptions import ConnectionError as RedisConnectionError

    server = _PrivateRedis()
    server.start()
    address = f"redis://127.0.0.1:{server.port}/0"
    ours = RedisChannelLayer(hosts=[{"address": address, **settings.REDIS_HOST_OPTIONS}])
    plain = RedisChannelLayer(hosts=[{"address": address}])
    group = f"thread.{uuid.uuid4().hex}"
    try:
        for layer in (ours, plain):
            channel = await layer.new_channel()
            await layer.group_add(group, channel)
            await layer.group_send(group, {"type": "thread.fragment", "html": "<p>before</p>"})
            assert (await layer.receive(channel))["html"] == "<p>before</p>"
        server.stop()
        server.start()  # same port, empty: a restart

        with pytest.raises(RedisConnectionError):
            await plain.group_send(group, {"type": "thread.fragment", "html": "<p>after</p>"})
        channel = await ours.new_channel()
        await ours.group_add(group, channel)
        await ours.group_send(group, {"type": "thread.fragment", "html": "<p>after</p>"})
        assert (await ours.receive(channel))["html"] == "<p>after</p>"
    finally:
        for layer in (ours, plain):
            await layer.close_pools()
        server.stop()


def _metadata_reads(monkeypatch) -> list[str]:
    """The package-metadata look-ups made from now on (each one scans every
    installed package's metadata: 3-4 ms of the interpreter)."""
    from importlib import metadata

    reads: list[str] = []
    real_version = metadata.version

    def version(name):
        reads.append(name)
        return real_version(name)

    monkeypatch.setattr(metadata, "version", version)
    return reads


async def test_the_layers_new_connections_name_their_version_without_reading_package_metadata(redis_url, settings, monkeypatch):
    import redis
    from channels_redis.core import RedisChannelLayer

    reads = _metadata_reads(monkeypatch)
    layer = RedisChannelLayer(
        hosts=[{"address": redis_url, **settings.REDIS_HOST_OPTIONS}], prefix=f"haico-test-{uuid.uuid4().hex[:8]}"
    )
    try:
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "thread.fragment", "html": "<p>x</p>"})
        assert (await layer.receive(channel))["html"] == "<p>x</p>"
        pool = layer.connection(0).connection_pool
        connection = await pool.get_connection()
        await pool.release(connection)
    finally:
        await layer.flush()
        await layer.close_pools()
    assert reads == []
    # What it names itself with to a Redis that asks (CLIENT SETINFO, Redis 7.2+).
    assert connection.driver_info.lib_version == redis.__version__


def test_the_caches_new_connections_name_their_version_without_reading_package_metadata(redis_url, settings, monkeypatch):
    import redis
    from django.core.cache.backends.redis import RedisCache

    reads = _metadata_reads(monkeypatch)
    prefix = f"haico-test-{uuid.uuid4().hex[:8]}"
    # As each request's or page's cache is made: a new instance, its own connections.
    for _ in range(3):
        cache = RedisCache(redis_url, {"OPTIONS": settings.REDIS_CACHE_OPTIONS, "KEY_PREFIX": prefix})
        cache.add("count", 0)
        cache.incr("count")
    assert cache.get("count") == 3
    assert reads == []
    pool = cache._cache.get_client().connection_pool
    connection = pool.get_connection()
    pool.release(connection)
    assert connection.driver_info.lib_version == redis.__version__
    cache.delete("count")
