"""One relay per server process: a thread's channel group holds each process
once, however many of its pages show the thread, and the relay hands what
another process sends to each of those pages (docs/adr/0091). Through a real
Redis, with two publishers standing for two server processes."""

import asyncio
import uuid

import pytest
from channels_redis.core import RedisChannelLayer

from conversations import live
from conversations.live import Publisher, group_name

pytestmark = [pytest.mark.redis]


class Page:
    """An open page of one process: what it is handed, in order."""

    def __init__(self, channel_name):
        self.channel_name = channel_name
        self.fragments: list[str] = []

    async def deliver(self, html):
        self.fragments.append(html)

    async def thread_fragment(self, event):
        self.fragments.append(event["html"])


@pytest.fixture
def redis_layer(redis_url, monkeypatch):
    layer = RedisChannelLayer(hosts=[redis_url.rsplit("/", 1)[0] + "/13"], prefix=f"haico-test-{uuid.uuid4().hex[:8]}")
    monkeypatch.setattr(live, "get_channel_layer", lambda: layer)
    return layer


async def _members_in_redis(layer, group) -> list[str]:
    async with layer.connection(layer.consistent_hash(group)) as connection:
        return [name.decode() for name in await connection.zrange(layer._group_key(group), 0, -1)]


async def _until(condition, timeout=3.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not within the time"
        await asyncio.sleep(0.01)


async def test_five_pages_of_one_process_are_one_member_of_the_threads_group(redis_layer):
    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    pages = [Page(await redis_layer.new_channel()) for _ in range(5)]
    for page in pages:
        await this_process.join(thread_id, page)

    assert await _members_in_redis(redis_layer, group_name(thread_id)) == [this_process._relay.channel]

    # Another process's fragments reach each page once, in order.
    other_process = Publisher()
    other_process.attach()
    other_process.publish(thread_id, "<p>first</p>")
    await asyncio.sleep(0.1)
    other_process.publish(thread_id, "<p>second</p>")
    await _until(lambda: all(len(page.fragments) == 2 for page in pages))
    assert all(page.fragments == ["<p>first</p>", "<p>second</p>"] for page in pages)

    for page in pages:
        await this_process.leave(thread_id, page)
    assert await _members_in_redis(redis_layer, group_name(thread_id)) == []


async def test_a_process_hands_its_own_pushes_to_its_pages_once(redis_layer):
    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    page = Page(await redis_layer.new_channel())
    await this_process.join(thread_id, page)
    # A page of another process shows the thread too, so the push also goes
    # through Redis, and comes back to our own relay as well.
    other_process = Publisher()
    other_process.attach()
    elsewhere = Page(await redis_layer.new_channel())
    await other_process.join(thread_id, elsewhere)

    this_process.publish(thread_id, "<p>token</p>")
    await _until(lambda: elsewhere.fragments == ["<p>token</p>"])
    await asyncio.sleep(0.2)
    assert page.fragments == ["<p>token</p>"]
    assert elsewhere.fragments == ["<p>token</p>"]
    await this_process.leave(thread_id, page)
    await other_process.leave(thread_id, elsewhere)


async def test_fragments_to_other_processes_go_by_one_publish_not_through_the_group(redis_layer, monkeypatch):
    """A token to another server is one Redis round trip (docs/adr/0094): the
    channel layer's group send, four of them, is not used for fragments."""
    thread_id = uuid.uuid4()
    receiving = Publisher()
    receiving.attach()
    page = Page(await redis_layer.new_channel())
    await receiving.join(thread_id, page)
    group_sends = []
    real_group_send = redis_layer.group_send

    async def counted_group_send(group, message):
        group_sends.append(message["type"])
        await real_group_send(group, message)

    monkeypatch.setattr(redis_layer, "group_send", counted_group_send)
    sending = Publisher()
    sending.attach()
    for n in range(3):
        sending.publish(thread_id, f"<p>{n}</p>")
        await asyncio.sleep(0.05)
    await _until(lambda: "".join(page.fragments) == "<p>0</p><p>1</p><p>2</p>")
    assert group_sends == []
    await receiving.leave(thread_id, page)


async def test_a_page_that_leaves_gets_nothing_more_while_the_others_still_do(redis_layer):
    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    staying, leaving = Page(await redis_layer.new_channel()), Page(await redis_layer.new_channel())
    await this_process.join(thread_id, staying)
    await this_process.join(thread_id, leaving)
    await this_process.leave(thread_id, leaving)

    other_process = Publisher()
    other_process.attach()
    other_process.publish(thread_id, "<p>after</p>")
    await _until(lambda: staying.fragments == ["<p>after</p>"])
    assert leaving.fragments == []
    await this_process.leave(thread_id, staying)


async def test_an_access_change_reaches_each_pages_own_channel(redis_layer):
    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    pages = [Page(await redis_layer.new_channel()) for _ in range(2)]
    for page in pages:
        await this_process.join(thread_id, page)
    group = group_name(thread_id)

    await redis_layer.group_send(group, {"type": "thread.access", "group": group, "user_id": 7})

    for page in pages:
        # Taken by the page's own consumer loop, in turn with what its socket receives.
        message = await asyncio.wait_for(redis_layer.receive(page.channel_name), 3)
        assert message == {"type": "thread.access", "group": group, "user_id": 7}
    for page in pages:
        await this_process.leave(thread_id, page)


async def test_joins_and_leaves_at_once_leave_the_relay_in_the_group_while_a_page_is_open(redis_layer):
    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    first, second = Page(await redis_layer.new_channel()), Page(await redis_layer.new_channel())
    await this_process.join(thread_id, first)
    # The first page closes as the second opens: the relay must stay for the second.
    await asyncio.gather(this_process.leave(thread_id, first), this_process.join(thread_id, second))
    assert await _members_in_redis(redis_layer, group_name(thread_id)) == [this_process._relay.channel]

    other_process = Publisher()
    other_process.attach()
    other_process.publish(thread_id, "<p>still here</p>")
    await _until(lambda: second.fragments == ["<p>still here</p>"])
    await this_process.leave(thread_id, second)


async def test_after_redis_lost_its_groups_the_relay_joins_them_again_and_pages_get_frames(redis_layer, monkeypatch):
    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    page = Page(await redis_layer.new_channel())
    await this_process.join(thread_id, page)
    monkeypatch.setattr(live, "RELAY_RETRY_SECONDS", 0.05)

    # Redis restarts empty: the group's members are gone, and the relay's
    # pending read fails once, while the page stays open.
    async with redis_layer.connection(redis_layer.consistent_hash(group_name(thread_id))) as connection:
        await connection.delete(redis_layer._group_key(group_name(thread_id)))
    real_receive = redis_layer.receive
    failed = []

    async def receive_failing_once(channel):
        if not failed:
            failed.append(channel)
            raise ConnectionError("Redis restarted")
        return await real_receive(channel)

    monkeypatch.setattr(redis_layer, "receive", receive_failing_once)
    this_process._relay._receiver.cancel()
    this_process._relay._receiver = asyncio.get_running_loop().create_task(this_process._relay._receive(redis_layer))
    await _until(lambda: bool(failed))

    other_process = Publisher()
    other_process.attach()

    async def member_again():
        return await _members_in_redis(redis_layer, group_name(thread_id)) == [this_process._relay.channel]

    deadline = asyncio.get_running_loop().time() + 3
    while not await member_again():
        assert asyncio.get_running_loop().time() < deadline, "the relay did not join the group again"
        await asyncio.sleep(0.02)
    other_process.publish(thread_id, "<p>after the restart</p>")
    await _until(lambda: page.fragments == ["<p>after the restart</p>"])
    await this_process.leave(thread_id, page)


async def test_after_its_redis_connection_is_cut_the_relay_subscribes_again_and_pages_get_frames(redis_layer):
    """Pub/sub keeps nothing for a process that is away: what is published
    while its connection is down is lost (its pages see the gap in the
    sequence numbers and fetch again), but the relay connects again by
    itself and what follows arrives."""
    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    page = Page(await redis_layer.new_channel())
    await this_process.join(thread_id, page)
    other_process = Publisher()
    other_process.attach()
    other_process.publish(thread_id, "<p>before</p>")
    await _until(lambda: page.fragments == ["<p>before</p>"])

    # Only this relay's subscription is cut (other tests share the Redis server).
    subscription = this_process._relay._fragments._pubsubs[0].connection
    host, port = subscription._writer.get_extra_info("sockname")[:2]
    async with redis_layer.connection(0) as connection:
        await connection.execute_command("CLIENT", "KILL", "ADDR", f"{host}:{port}")

    n = 0
    deadline = asyncio.get_running_loop().time() + 10
    while len(page.fragments) < 2:
        assert asyncio.get_running_loop().time() < deadline, "the relay did not subscribe again"
        n += 1
        other_process.publish(thread_id, f"<p>after {n}</p>")
        await asyncio.sleep(0.1)
    assert page.fragments[1].startswith("<p>after ")
    await this_process.leave(thread_id, page)


async def test_a_process_alone_on_a_thread_hands_its_pages_every_fragment_and_another_process_that_joins_gets_the_rest_in_order(
    redis_layer,
):
    """Once Redis says no other process took a thread's fragment, this
    process's pages get theirs without waiting for Redis; the copy still
    goes, in order, so a page that opens the thread on another server gets
    everything from its joining on (docs/adr/0168)."""
    thread_id = uuid.uuid4()
    group = group_name(thread_id)
    this_process = Publisher()
    this_process.attach()
    page = Page(await redis_layer.new_channel())
    await this_process.join(thread_id, page)
    for n in range(3):
        this_process.publish(thread_id, f"<p>{n}</p>")
        await asyncio.sleep(0.05)
    await _until(lambda: len(page.fragments) == 3)
    assert this_process._reached_others[group] is False

    other_process = Publisher()
    other_process.attach()
    elsewhere = Page(await redis_layer.new_channel())
    await other_process.join(thread_id, elsewhere)
    for n in range(3, 40):
        this_process.publish(thread_id, f"<p>{n}</p>")
        await asyncio.sleep(0.005 if n % 4 else 0.03)
    everything = "".join(f"<p>{n}</p>" for n in range(40))
    await _until(lambda: "".join(page.fragments) == everything)
    await _until(lambda: "".join(elsewhere.fragments).endswith("<p>39</p>"))
    assert "".join(elsewhere.fragments) == "".join(f"<p>{n}</p>" for n in range(3, 40))
    # Redis's answers said another process listens now: its copy goes first again.
    assert this_process._reached_others[group] is True
    await this_process.leave(thread_id, page)
    await other_process.leave(thread_id, elsewhere)


async def test_a_process_alone_on_a_thread_hands_its_page_the_first_fragment_without_waiting_for_a_slow_redis(
    redis_layer, monkeypatch
):
    """Until Redis says another process takes a thread's fragments, none is
    assumed to: under load a round trip took seconds, and the person's own
    page waited for it with every token behind it (docs/adr/0171)."""
    from redis.asyncio.client import Pipeline, Redis

    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    page = Page(await redis_layer.new_channel())
    await this_process.join(thread_id, page)
    real_publish, real_execute = Redis.publish, Pipeline.execute

    def slow_publish(client, *args, **kwargs):
        if isinstance(client, Pipeline):
            return real_publish(client, *args, **kwargs)  # queued: the pipeline's execute is slow

        async def after_a_second():
            await asyncio.sleep(1.0)
            return await real_publish(client, *args, **kwargs)

        return after_a_second()

    async def slow_execute(pipeline, *args, **kwargs):
        await asyncio.sleep(1.0)
        return await real_execute(pipeline, *args, **kwargs)

    monkeypatch.setattr(Redis, "publish", slow_publish)
    monkeypatch.setattr(Pipeline, "execute", slow_execute)
    for n in range(5):
        this_process.publish(thread_id, f"<p>{n}</p>")
        await asyncio.sleep(0.01)
    everything = "".join(f"<p>{n}</p>" for n in range(5))
    await _until(lambda: "".join(page.fragments) == everything, timeout=0.5)
    # Redis's answer comes in the end, and says no other process took them.
    await _until(lambda: this_process._reached_others.get(group_name(thread_id)) is False)
    await this_process.leave(thread_id, page)
    await _until(lambda: group_name(thread_id) not in this_process._outboxes)
    assert group_name(thread_id) not in this_process._reached_others


async def test_a_pause_in_a_turn_does_not_make_the_process_forget_that_another_server_shows_the_thread(redis_layer, monkeypatch):
    """A process keeps Redis's answer that another server shows the thread
    (so that server's copy goes first, docs/adr/0094) through a pause longer
    than a sender's idle time (a model that thinks), and forgets it once no
    page here shows the thread."""
    monkeypatch.setattr(live, "IDLE_SECONDS", 0.05)
    thread_id = uuid.uuid4()
    group = group_name(thread_id)
    this_process, other_process = Publisher(), Publisher()
    this_process.attach()
    other_process.attach()
    page, elsewhere = Page(await redis_layer.new_channel()), Page(await redis_layer.new_channel())
    await this_process.join(thread_id, page)
    await other_process.join(thread_id, elsewhere)
    this_process.publish(thread_id, "<p>before</p>")
    await _until(lambda: this_process._reached_others.get(group) is True)
    await _until(lambda: group not in this_process._outboxes)  # its sender ended
    assert this_process._reached_others.get(group) is True
    this_process.publish(thread_id, "<p>after</p>")
    await _until(lambda: elsewhere.fragments == ["<p>before</p>", "<p>after</p>"])
    await _until(lambda: page.fragments == ["<p>before</p>", "<p>after</p>"])
    await other_process.leave(thread_id, elsewhere)
    await this_process.leave(thread_id, page)
    await _until(lambda: group not in this_process._outboxes)
    assert group not in this_process._reached_others


async def test_fragments_of_many_threads_sent_at_once_reach_the_other_process_in_order_in_a_few_round_trips(
    redis_layer, monkeypatch
):
    from redis.asyncio.client import Pipeline, Redis

    threads = [uuid.uuid4() for _ in range(40)]
    receiving = Publisher()
    receiving.attach()
    pages = {thread_id: Page(await redis_layer.new_channel()) for thread_id in threads}
    for thread_id, page in pages.items():
        await receiving.join(thread_id, page)
    round_trips = []
    real_execute = Pipeline.execute

    async def counted_execute(pipeline, *args, **kwargs):
        round_trips.append(len(pipeline.command_stack))
        return await real_execute(pipeline, *args, **kwargs)

    real_publish = Redis.publish

    def counted_publish(client, channel, message, **kwargs):
        if not isinstance(client, Pipeline):
            round_trips.append(1)  # one published alone
        return real_publish(client, channel, message, **kwargs)

    monkeypatch.setattr(Pipeline, "execute", counted_execute)
    monkeypatch.setattr(Redis, "publish", counted_publish)
    sending = Publisher()
    sending.attach()
    for n in range(5):
        for thread_id in threads:
            sending.publish(thread_id, f"<p>{thread_id.hex[:6]} {n}</p>")
        await asyncio.sleep(0.04)
    expected = {thread_id: "".join(f"<p>{thread_id.hex[:6]} {n}</p>" for n in range(5)) for thread_id in threads}
    await _until(lambda: all("".join(page.fragments) == expected[t] for t, page in pages.items()))
    assert sum(round_trips) == 200
    assert len(round_trips) <= 25, f"{len(round_trips)} round trips for 200 fragments"
    for thread_id, page in pages.items():
        await receiving.leave(thread_id, page)


async def test_while_redis_refuses_a_process_alone_on_a_thread_still_hands_its_pages_everything_in_order(
    redis_layer, monkeypatch, caplog
):
    import redis.asyncio

    thread_id = uuid.uuid4()
    this_process = Publisher()
    this_process.attach()
    page = Page(await redis_layer.new_channel())
    await this_process.join(thread_id, page)
    this_process.publish(thread_id, "<p>0</p>")
    await _until(lambda: this_process._reached_others.get(group_name(thread_id)) is False)

    # Redis goes away: no server answers on the port any more.
    gone = redis.asyncio.Redis.from_url("redis://127.0.0.1:1/0")
    monkeypatch.setattr(redis_layer, "connection", lambda index: gone)
    for n in range(1, 20):
        this_process.publish(thread_id, f"<p>{n}</p>")
        await asyncio.sleep(0.01)
    everything = "".join(f"<p>{n}</p>" for n in range(20))
    await _until(lambda: "".join(page.fragments) == everything)
    await asyncio.sleep(0.2)
    assert "".join(page.fragments) == everything
    said = [record for record in caplog.records if record.name == "haico.conversations.live"]
    assert said and all(record.exc_info is None for record in said), [r.getMessage() for r in said]
    assert any("unreachable" in record.getMessage() for record in said)
    await this_process.leave(thread_id, page)
    await gone.aclose()
