"""Token limits (conversations.quotas, agent.usage): a turn that would start
over the person's daily or monthly limit is refused saying which limit and
when it resets, and the message stays in the box, nothing stored; a turn
that crosses the limit on the way finishes the model call that crossed it
and ends with a message, nothing lost. Driven through the socket with the
real ChatOpenAI against the scripted server reporting usage."""

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError
from django.test import Client
from django.utils import timezone

from agent import context as agent_context
from agent.builder import AgentProvider
from agent.context import TokenWindow
from agent.usage import DAY, MONTH, STOPPED_AT_LIMIT, limit_message, tokens_text
from conversations import quotas
from conversations.models import Account, ActivityLogEntry, ModelUsage, Turn
from conversations.services import thread_create
from conversations.turns import registry
from conversations.turns.outcome import TOKEN_LIMIT
from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import Misbehave, OpenAICompatibleServer
from workspace import selectors
from workspace.models import Thread, WorkspaceSnapshot

from .helpers import frames_until_turn_end

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model_server(settings, monkeypatch):
    with OpenAICompatibleServer(models=["scripted"]) as server:
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url, "test-key"
        settings.HAICO_MODEL, settings.HAICO_MODELS = "scripted", ["scripted"]
        settings.HAICO_MODEL_MAX_RETRIES = 0
        settings.HAICO_DAILY_TOKEN_LIMIT = settings.HAICO_MONTHLY_TOKEN_LIMIT = 0
        monkeypatch.setattr(registry, "agents", AgentProvider())
        yield server


def _used(user, tokens, *, when=None):
    ModelUsage.objects.create(
        user=user,
        provider_name="environment",
        model="scripted",
        input_tokens=tokens,
        output_tokens=0,
        created_at=when or timezone.now(),
    )


def _send(text):
    return json.dumps({"message": text, "HEADERS": {"HX-Request": "true"}})


async def _stored(thread):
    def read():
        return {
            "turns": list(Turn.objects.filter(thread=thread).values_list("index", "status")),
            "snapshots": WorkspaceSnapshot.objects.filter(thread=thread).count(),
            "turn_index": Thread.objects.get(pk=thread.pk).turn_index,
        }

    return await sync_to_async(read)()


# --- before a turn --------------------------------------------------------------------------


async def test_a_turn_over_the_daily_limit_is_refused_naming_the_limit_and_the_reset(
    owner, thread, model_server, sockets, settings
):
    settings.HAICO_DAILY_TOKEN_LIMIT = 100_000
    await sync_to_async(_used)(owner, 100_000)
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Draft the introduction"))
    html = await socket.receive_from(timeout=5)
    assert 'id="chat-notice"' in html
    # "in 3 h 12 min"; "in 12 h" on the hour; "in 40 min" in the day's last hour;
    # "in 1 day" in its first minute (run just after midnight).
    match = re.search(
        r"You have used your 100 000 tokens for today; the limit resets at 00:00 UTC \(in (\d+ h( \d+ min)?|\d+ min|1 day)\)\.",
        html,
    )
    assert match, html
    # Nothing is stored and no ack clears the box: the typed message stays there.
    assert 'id="chat-ack"' not in html and await socket.receive_nothing(timeout=0.3)
    assert await _stored(thread) == {"turns": [], "snapshots": 0, "turn_index": 0}
    assert model_server.requests == []


async def test_a_person_s_own_monthly_limit_overrides_the_site_s(owner, other_user, thread, model_server, sockets, settings):
    settings.HAICO_MONTHLY_TOKEN_LIMIT = 1_000_000

    def setup():
        Account.objects.create(user=owner, monthly_token_limit=2_000)
        _used(owner, 2_500)
        _used(other_user, 2_500)  # the site's limit is far off for them

    await sync_to_async(setup)()
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Hello"))
    html = await socket.receive_from(timeout=5)
    now = timezone.now()
    first = (now.replace(day=1) + timedelta(days=32)).replace(day=1)
    assert f"You have used your 2 000 tokens for this month; the limit resets on 1 {first:%B} at 00:00 UTC (in " in html
    assert await _stored(thread) == {"turns": [], "snapshots": 0, "turn_index": 0}


async def test_a_limit_of_0_for_a_person_means_none(owner, thread, model_server, sockets, settings):
    settings.HAICO_DAILY_TOKEN_LIMIT = 10

    def setup():
        Account.objects.create(user=owner, daily_token_limit=0)
        _used(owner, 5_000)

    await sync_to_async(setup)()
    model_server.script([Reply(text="Hello.")])
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Hello"))
    await frames_until_turn_end(socket)
    assert (await _stored(thread))["turns"] == [(1, Turn.Status.COMPLETE)]


async def test_yesterday_s_tokens_do_not_count_for_today(owner, thread, model_server, sockets, settings):
    settings.HAICO_DAILY_TOKEN_LIMIT = 1_000
    start_of_day = timezone.now().astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    await sync_to_async(_used)(owner, 50_000, when=start_of_day - timedelta(seconds=1))
    model_server.script([Reply(text="Hello.")])
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Hello"))
    await frames_until_turn_end(socket)
    assert (await _stored(thread))["turns"] == [(1, Turn.Status.COMPLETE)]


@pytest.mark.django_db
def test_regenerate_over_the_limit_is_refused_before_any_branch_is_made(owner, thread, settings):
    from conversations.turns import slot

    settings.OPENAI_BASE_URL, settings.HAICO_MODEL, settings.HAICO_MODELS = "http://127.0.0.1:9/v1", "m", ["m"]
    settings.HAICO_DAILY_TOKEN_LIMIT = 10
    turn, _ = slot.turn_begin(thread=thread, user_message="first")
    slot.turn_finish(thread=thread, turn_index=turn)
    _used(owner, 10)
    client = Client()
    client.force_login(owner)
    threads_before = Thread.objects.count()
    response = client.post(f"/threads/{thread.pk}/turns/1/regenerate/")
    assert response.status_code == 400 and "You have used your 10 tokens for today" in response.content.decode()
    assert Thread.objects.count() == threads_before


# --- during a turn ------------------------------------------------------------------------------


async def _notice_or_ack(socket, timeout=10.0):
    """Frames up to the first notice or acknowledgement."""
    frames = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        html = await socket.receive_from(timeout=max(0.1, deadline - loop.time()))
        frames.append(html)
        if 'id="chat-notice"' in html or 'id="chat-ack"' in html:
            return frames
    return frames


async def test_three_threads_sent_at_once_with_the_last_tokens_left_run_one_turn(owner, thread, model_server, sockets, settings):
    """10 of 1 000 tokens left, three messages sent at once in three
    threads: one turn runs; the others are refused, kept in their boxes,
    saying the running turn will use what is left (docs/adr/0064). Before,
    all three ran (3 x 800 tokens)."""
    settings.HAICO_DAILY_TOKEN_LIMIT = 1_000
    await sync_to_async(_used)(owner, 990)
    slow = Reply(text="Working on it. " * 10, token_delay=0.05, usage={"prompt_tokens": 700, "completion_tokens": 100})
    model_server.script([slow, slow, slow])
    threads = [thread, *[await sync_to_async(thread_create)(owner=owner, title=f"Other {n}") for n in range(2)]]
    socks = [await sockets(t.pk, owner) for t in threads]
    await asyncio.gather(*(s.send_to(text_data=_send(f"Question {n}")) for n, s in enumerate(socks)))
    first = await asyncio.gather(*(_notice_or_ack(s) for s in socks))
    acked = [n for n, frames in enumerate(first) if any('id="chat-ack"' in f for f in frames)]
    assert len(acked) == 1, first
    await frames_until_turn_end(socks[acked[0]], timeout=30)
    for n in set(range(3)) - set(acked):
        html = "".join(first[n])
        assert "Your turns running now will use about the 10 tokens left of your 1 000 for today" in html, html
        assert (await _stored(threads[n]))["turn_index"] == 0
    assert len(model_server.requests) == 1


async def test_a_turn_crossing_the_limit_finishes_its_model_call_and_ends_with_a_message(
    owner, thread, model_server, sockets, settings
):
    settings.HAICO_DAILY_TOKEN_LIMIT = 1_000
    await sync_to_async(_used)(owner, 200)
    model_server.script(
        [
            # 700 + 150 + 200 used before: 1 050, over the limit once this call is done.
            Reply(
                tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship the report")],
                usage={"prompt_tokens": 700, "completion_tokens": 150},
            ),
            Reply(text="must not be asked for"),
        ]
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Set the goal and write the report"))
    html = "".join(await frames_until_turn_end(socket, timeout=20))

    # The call that crossed the limit finished: its step ran, and nothing more was asked of the model.
    assert len(model_server.requests) == 1
    objective = await sync_to_async(selectors.objective_text_for)(thread=thread)
    assert objective == "Ship the report"
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    message = STOPPED_AT_LIMIT.format(limit="You have used your 1 000 tokens for today; the limit resets at 00:00 UTC (in ")
    assert turn.status == Turn.Status.COMPLETE and turn.answer.startswith(message.split(" (in ")[0])
    assert "Everything done so far is kept in the workspace." in turn.answer
    assert turn.notice == TOKEN_LIMIT
    # Shown in the chat, with the outcome under it, and in the activity log.
    assert "I stopped here: You have used your 1 000 tokens for today" in html and TOKEN_LIMIT in html
    entry = await sync_to_async(ActivityLogEntry.objects.get)(thread=thread, kind=ActivityLogEntry.Kind.CAP_REACHED)
    assert entry.message.startswith("The turn stopped at your token limit: You have used your 1 000 tokens for today")
    rows = await sync_to_async(
        lambda: list(ModelUsage.objects.filter(thread=thread).values_list("input_tokens", "output_tokens"))
    )()
    assert rows == [(700, 150)]
    # The page after a reload says the same.
    page = await sync_to_async(_page)(owner, thread)
    assert "I stopped here: You have used your 1 000 tokens" in page and TOKEN_LIMIT in page

    # And the next message is refused before it starts.
    await socket.send_to(text_data=_send("Go on"))
    refused = await socket.receive_from(timeout=5)
    assert "You have used your 1 000 tokens for today" in refused
    assert (await _stored(thread))["turn_index"] == 1


def _page(user, thread):
    client = Client()
    client.force_login(user)
    return client.get(f"/threads/{thread.pk}/workspace/").content.decode()


async def test_a_turn_under_the_limit_runs_every_call(owner, thread, model_server, sockets, settings):
    settings.HAICO_DAILY_TOKEN_LIMIT = 10_000
    model_server.script(
        [
            Reply(
                tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship it")],
                usage={"prompt_tokens": 700, "completion_tokens": 150},
            ),
            Reply(text="Done.", usage={"prompt_tokens": 800, "completion_tokens": 5}),
        ]
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Set the goal"))
    html = "".join(await frames_until_turn_end(socket, timeout=20))
    assert len(model_server.requests) == 2 and "Done." in html and TOKEN_LIMIT not in html


def _sets_the_objective_with_600_tokens_pausing(*, seconds: float) -> Misbehave:
    """A first call that sets the objective and uses 600 tokens, its stream
    pausing `seconds` after the first token (while something else happens)."""
    return Misbehave(
        reply=Reply(
            tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship the report")],
            usage={"prompt_tokens": 500, "completion_tokens": 100},
        ),
        pause_after_tokens=1,
        pause_seconds=seconds,
    )


async def test_a_turn_stops_at_the_limit_its_person_s_turn_in_another_thread_reached_meanwhile(
    owner, thread, model_server, sockets, settings, monkeypatch
):
    monkeypatch.setattr(agent_context, "USAGE_REREAD_SECONDS", 0.0)
    # The turn watcher stores a running call's estimate at its first round
    # (docs/adr/0154): its request's estimate alone, system prompt and tools,
    # is over this limit, so a round during the first call's pause refused
    # the other thread's turn at its start (on a loaded machine the message
    # came after one). That an estimate counts is docs/adr/0154's; this
    # test is about a turn end's usage reaching another running turn: no
    # round, and the second message sent once one would have come.
    monkeypatch.setattr(registry, "SAVE_ANSWERS_SECONDS", 600)
    settings.HAICO_DAILY_TOKEN_LIMIT = 1_000
    other_thread = await sync_to_async(thread_create)(owner=owner, title="Budget notes")
    model_server.script(
        [
            # The first thread's first call: 600 tokens, and the stream pauses before it ends.
            _sets_the_objective_with_600_tokens_pausing(seconds=3),
            # Meanwhile the other thread's whole turn: 500 tokens.
            Reply(text="Budget noted.", usage={"prompt_tokens": 450, "completion_tokens": 50}),
            Reply(text="must not be asked for"),
        ]
    )
    first = await sockets(thread.pk, owner)
    second = await sockets(other_thread.pk, owner)
    await first.send_to(text_data=_send("Set the goal and write the report"))
    while not model_server.pauses:
        await asyncio.sleep(0.02)
    await asyncio.sleep(1.0)  # two of the watcher's usual half-second rounds
    await second.send_to(text_data=_send("Note the budget"))
    assert "Budget noted." in "".join(await frames_until_turn_end(second, timeout=20))
    html = "".join(await frames_until_turn_end(first, timeout=20))

    # Together the two turns used 1 100 of the 1 000: the first thread's turn
    # does not go on as if the other had spent nothing (it would have used
    # its own 1 000 on top).
    assert len(model_server.requests) == 2
    assert "I stopped here: You have used your 1 000 tokens for today" in html and TOKEN_LIMIT in html
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.notice == TOKEN_LIMIT
    assert await sync_to_async(selectors.objective_text_for)(thread=thread) == "Ship the report"


@pytest.mark.parametrize("limit_before", [1_000_000, None], ids=["lowered", "given-where-there-was-none"])
async def test_a_limit_staff_set_below_what_a_running_turn_used_stops_it_at_its_next_call(
    owner, thread, model_server, sockets, monkeypatch, limit_before
):
    """Staff cut the owner's daily limit to 500 while their turn's first call
    (600 tokens) streams: the turn makes no further call, keeps what it did
    and says it stopped at the limit, whether the owner had a limit before or none."""
    monkeypatch.setattr(agent_context, "USAGE_REREAD_SECONDS", 0.0)
    await sync_to_async(Account.objects.create)(user=owner, daily_token_limit=limit_before)
    model_server.script(
        [
            _sets_the_objective_with_600_tokens_pausing(seconds=2),
            Reply(text="must not be asked for", usage={"prompt_tokens": 700, "completion_tokens": 10}),
        ]
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Set the goal and write the report"))
    while not model_server.pauses:
        await asyncio.sleep(0.02)
    await sync_to_async(Account.objects.filter(user=owner).update)(daily_token_limit=500)
    html = "".join(await frames_until_turn_end(socket, timeout=20))
    assert await sync_to_async(selectors.objective_text_for)(thread=thread) == "Ship the report"
    assert len(model_server.requests) == 1, "a model call was made past the limit staff set"
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.notice == TOKEN_LIMIT and "I stopped here" in html


async def test_a_database_blip_while_usage_is_read_again_leaves_the_turn_going_on_what_it_read(
    owner, thread, model_server, sockets, settings, monkeypatch, caplog
):
    monkeypatch.setattr(agent_context, "USAGE_REREAD_SECONDS", 0.0)
    settings.HAICO_DAILY_TOKEN_LIMIT = 100_000
    tried = []

    def reader(*, user_id, run, **_):
        async def read():
            tried.append(run)
            raise OperationalError("the database restarted")

        return read

    monkeypatch.setattr(quotas, "windows_reader", reader)
    model_server.script(
        [
            Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship the report")]),
            Reply(text="Goal set, all done."),
        ]
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Set the goal"))
    html = "".join(await frames_until_turn_end(socket, timeout=20))

    assert tried, "the usage was never read again"
    assert "Goal set, all done." in html
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.status == Turn.Status.COMPLETE
    assert [r for r in caplog.records if r.exc_info] == []  # a line for the operator, no traceback


@pytest.mark.django_db
def test_a_run_s_own_calls_are_left_out_when_its_person_s_usage_is_read_again(owner, thread, settings):
    settings.HAICO_DAILY_TOKEN_LIMIT = 10_000
    turn = Turn.objects.create(thread=thread, index=1, user_message="Go", person=owner)
    began = timezone.now()
    earlier_run = began - timedelta(minutes=5)  # the same turn before it waited for an approval

    def call(tokens, when, turn=None):
        ModelUsage.objects.create(
            user=owner,
            thread=thread,
            turn=turn,
            provider_name="environment",
            model="scripted",
            input_tokens=tokens,
            output_tokens=0,
            created_at=when,
        )

    call(100, earlier_run, turn)  # counted: before this run
    call(20, began + timedelta(seconds=1))  # counted: another thread's turn
    call(3_000, began + timedelta(seconds=2), turn)  # this run's own: its budget counts it
    run = quotas.RunMark(turn_id=turn.pk, started_at=began)
    (window,) = quotas.token_windows(user_id=owner.pk, account=None, outside_run=run)
    assert window.used == 120
    (everything,) = quotas.token_windows(user_id=owner.pk, account=None)
    assert everything.used == 3_120


# --- the windows and the words -----------------------------------------------------------------


def test_windows_are_utc_days_and_months():
    now = datetime(2026, 12, 31, 21, 48, tzinfo=UTC)
    assert quotas.day_window(now) == (datetime(2026, 12, 31, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    assert quotas.month_window(now) == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
    assert quotas.month_window(datetime(2027, 2, 10, tzinfo=UTC))[1] == datetime(2027, 3, 1, tzinfo=UTC)


def test_the_messages_name_the_limit_and_when_it_resets():
    now = datetime(2026, 12, 2, 20, 48, tzinfo=UTC)
    day = TokenWindow(period=DAY, limit=100_000, used=100_000, resets_at=datetime(2026, 12, 3, tzinfo=UTC))
    assert limit_message(day, now) == (
        "You have used your 100 000 tokens for today; the limit resets at 00:00 UTC (in 3 h 12 min)."
    )
    month = TokenWindow(period=MONTH, limit=2_000_000, used=2_000_001, resets_at=datetime(2027, 1, 1, tzinfo=UTC))
    assert limit_message(month, now) == (
        "You have used your 2 000 000 tokens for this month; the limit resets on 1 January at 00:00 UTC (in 29 days 3 h)."
    )
    assert limit_message(day, datetime(2026, 12, 2, 23, 59, 30, tzinfo=UTC)).endswith("(in 1 min).")
    assert tokens_text(999) == "999" and tokens_text(1_234_567) == "1 234 567"


@pytest.mark.django_db
def test_no_limit_reads_no_usage(owner, settings, django_assert_num_queries):
    settings.HAICO_DAILY_TOKEN_LIMIT = settings.HAICO_MONTHLY_TOKEN_LIMIT = 0
    with django_assert_num_queries(0):
        assert quotas.token_windows(user_id=owner.pk, account=None) == ()
