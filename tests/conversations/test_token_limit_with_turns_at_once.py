"""A person's token limit when several of their turns run at once, in
different threads (docs/adr/0064, 0155): together they pass the limit by at
most the model calls in flight when it was reached, one per running turn,
not by a turn's worth each, and every turn says why it stopped. Driven
through the socket with the real ChatOpenAI against the scripted server
reporting each call's usage, with the re-read interval a site runs with."""

import asyncio
import functools
import json

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agent import context as agent_context
from conversations import quotas
from conversations.models import ModelUsage, Turn, TurnSlot
from conversations.services import thread_create
from conversations.turns import slot
from conversations.turns.outcome import TOKEN_LIMIT
from tests.support.fake_model import Reply, tool_call
from workspace.models import Thread

from .helpers import frames_until_turn_end

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 10_000
PER_CALL = 1_000  # 900 in, 100 out, as the provider reports


@pytest.fixture
def model_server(model_server, settings):
    """The local model server (tests.support.model_server), no retries, the owner's daily limit LIMIT,
    and time for a model call on a loaded machine."""
    settings.HAICO_MODEL_MAX_RETRIES = 0
    settings.HAICO_MODEL_TIMEOUT = 30.0
    settings.HAICO_DAILY_TOKEN_LIMIT = LIMIT
    settings.HAICO_MONTHLY_TOKEN_LIMIT = 0
    return model_server


def _send(text):
    return json.dumps({"message": text, "HEADERS": {"HX-Request": "true"}})


def _adding_a_step(n, *, words=0):
    """A reply that adds one step to the plan and uses 1 000 tokens; with
    `words`, it streams them first (about half a second for five)."""
    return Reply(
        text=" ".join(["Adding"] * words),
        token_delay=0.05,
        tool_calls=[tool_call("add_todos", f"Adding step {n}.", steps=[{"text": f"Step {n}", "depth": 0}])],
        usage={"prompt_tokens": 900, "completion_tokens": 100},
    )


async def _plans_at_once(owner, sockets, model_server, *, threads, words):
    """The owner asks for a long plan in `threads` threads at once; returns
    what each page showed, the tokens stored and the turns' outcomes."""
    assert agent_context.USAGE_REREAD_SECONDS == 5.0  # the interval a site runs with
    counter = iter(range(1, 1000))
    model_server.script([lambda body: _adding_a_step(next(counter), words=words)] * 80)
    made = [await sync_to_async(thread_create)(owner=owner, title=f"Thread {n}") for n in range(threads)]
    pages = [await sockets(thread.pk, owner) for thread in made]
    await asyncio.gather(*(page.send_to(text_data=_send(f"Plan {n} step by step")) for n, page in enumerate(pages)))
    html = await asyncio.gather(*(frames_until_turn_end(page, timeout=90) for page in pages))

    def stored():
        rows = ModelUsage.objects.filter(user=owner).values_list("input_tokens", "output_tokens")
        notices = Turn.objects.filter(user_message__startswith="Plan").values_list("notice", flat=True)
        return sum(i + o for i, o in rows), list(notices)

    used, notices = await sync_to_async(stored)()
    return ["".join(frames) for frames in html], used, notices


async def test_two_turns_of_the_owner_at_once_pass_the_daily_limit_by_at_most_a_call_each(owner, model_server, sockets):
    """Before: each turn spent the whole limit on its own in its first five
    seconds (20 calls, 20 000 tokens of 10 000, in 0.6 s)."""
    pages, used, notices = await _plans_at_once(owner, sockets, model_server, threads=2, words=0)
    assert notices == [TOKEN_LIMIT, TOKEN_LIMIT]
    assert all("I stopped here: You have used your 10 000 tokens for today" in html for html in pages)
    assert LIMIT <= used <= LIMIT + 2 * PER_CALL, f"{used} tokens used against a limit of {LIMIT}"


async def test_three_turns_of_the_owner_at_a_provider_s_pace_pass_the_limit_by_at_most_a_call_each(owner, model_server, sockets):
    """Calls of about half a second each, three turns at once (of the five a
    person may run): before, 30 calls, 30 000 tokens of 10 000, in 5.4 s."""
    pages, used, notices = await _plans_at_once(owner, sockets, model_server, threads=3, words=5)
    assert notices == [TOKEN_LIMIT] * 3
    assert all("I stopped here" in html for html in pages)
    assert LIMIT <= used <= LIMIT + 3 * PER_CALL, f"{used} tokens used against a limit of {LIMIT}"


async def test_a_turn_of_the_owner_alone_spends_up_to_its_limit_and_says_why_it_stopped(owner, thread, model_server, sockets):
    """Alone, a turn crosses the limit with the call that reaches it and
    makes no further call: ten calls of 1 000 for a limit of 10 000."""
    counter = iter(range(1, 1000))
    model_server.script([lambda body: _adding_a_step(next(counter))] * 40)
    page = await sockets(thread.pk, owner)
    await page.send_to(text_data=_send("Plan step by step"))
    html = "".join(await frames_until_turn_end(page, timeout=60))
    assert "I stopped here" in html
    assert len(model_server.requests) == LIMIT // PER_CALL
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.notice == TOKEN_LIMIT


def _owner_s_turn_running_on_another_server(owner):
    """A thread of the owner's with its turn claimed, as another server's
    claim leaves it: the turn running, its slot fresh."""
    other = thread_create(owner=owner, title="Elsewhere")
    Thread.objects.filter(pk=other.pk).update(turn_index=1)
    TurnSlot.objects.update_or_create(thread=other, defaults={"turn_index": 1, "since": timezone.now()})
    return Turn.objects.create(thread=other, index=1, status=Turn.Status.RUNNING, person=owner, user_message="Elsewhere")


def _this_server_s_turn(owner):
    mine = thread_create(owner=owner, title="Here")
    return Turn.objects.create(thread=mine, index=1, status=Turn.Status.RUNNING, person=owner, user_message="Here")


def _stored_by_the_other_server(owner, turn, tokens):
    ModelUsage.objects.create(
        user=owner, thread=turn.thread, turn=turn, provider_name="environment", model="scripted", input_tokens=tokens
    )


@pytest.mark.parametrize("elsewhere", [True, False], ids=["beside-a-turn-elsewhere", "alone"])
async def test_a_run_beside_the_owner_s_turn_on_another_server_reads_its_usage_before_every_call(owner, settings, elsewhere):
    """Once a re-read found the owner's turn running on another server, the
    run reads the usage that server stores before its every next call, and
    stops at the limit that turn reached; alone and far from the limit, it
    keeps its five-second cadence (nothing read, the limit not seen yet)."""
    settings.HAICO_DAILY_TOKEN_LIMIT, settings.HAICO_MONTHLY_TOKEN_LIMIT = LIMIT, 0
    other = await sync_to_async(_owner_s_turn_running_on_another_server)(owner) if elsewhere else None
    here = await sync_to_async(_this_server_s_turn)(owner)
    run = quotas.RunMark(turn_id=here.pk, started_at=timezone.now())
    windows = await sync_to_async(quotas.token_windows)(user_id=owner.pk, account=None)
    budget = quotas.live_budget(windows, user_id=owner.pk, run=run, running=functools.partial(slot.running_turns_of, owner.pk))
    quotas.run_began(budget)
    try:
        budget.count(PER_CALL)  # the turn's first call
        budget.read_at -= agent_context.USAGE_REREAD_SECONDS  # five seconds on: its re-read is due
        await budget.reread_if_due()
        assert budget.exhausted() is None
        # The other server's turn (or an earlier one) stores 9 000 tokens.
        await sync_to_async(_stored_by_the_other_server)(owner, other or here, 9_000)
        await budget.reread_if_due()  # before the next call, at once
    finally:
        quotas.run_ended(budget)
    if elsewhere:
        window = budget.exhausted()
        assert window is not None and window.used == 9_000
    else:
        assert budget.exhausted() is None and budget.windows[0].used == 0
