"""The Redis channel layer the scale-out setup uses (REDIS_URL): a group
message sent by one layer instance reaches a channel added by another, as it
must between two server processes."""

import uuid

import pytest

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
