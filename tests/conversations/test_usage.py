"""Model usage (conversations.usage, agent.usage): one row per model call,
with the tokens the provider reported (the real ChatOpenAI against the
scripted OpenAI-compatible server, streaming with usage as OpenAI sends
it), estimated and marked so when it reports none; the person's own usage
page; staff's totals per person, model and day in the admin."""

import asyncio
import json
import re
from datetime import timedelta
from html import unescape

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError, connections
from django.test import Client
from django.utils import timezone

from agent.builder import AgentProvider
from agent.models import CatalogueModel, Provider
from conversations.models import Account, ModelUsage, Turn
from conversations.turns import registry, run
from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import HTTPFailure, Misbehave, OpenAICompatibleServer
from workspace.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model_server(settings, monkeypatch):
    with OpenAICompatibleServer(models=["scripted"]) as server:
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url, "test-key"
        settings.HAICO_MODEL, settings.HAICO_MODELS = "scripted", ["scripted"]
        settings.HAICO_MODEL_MAX_RETRIES = 0
        monkeypatch.setattr(registry, "agents", AgentProvider())
        yield server


async def _turn(thread, message="Set the goal", model=None):
    index = await registry.start_turn(thread=thread, user_message=message, model_name=model)
    await registry.wait_for_turn(thread.pk)
    return await sync_to_async(Turn.objects.get)(thread=thread, index=index)


def _rows(thread):
    return list(ModelUsage.objects.filter(thread=thread).order_by("created_at", "pk"))


async def _estimate_stored(thread, model_server, *, within: float) -> ModelUsage:
    """The one row the turn watcher stored of the call the model server
    holds now (its first round after the call starts), waited for: on a
    loaded machine the call and the watcher's round come late."""
    while not model_server.requests:
        await asyncio.sleep(0.02)
    deadline = asyncio.get_running_loop().time() + within
    while not (rows := await sync_to_async(_rows)(thread)) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    [estimate] = rows
    return estimate


async def test_every_model_call_is_a_row_with_the_tokens_the_provider_reported(thread, owner, model_server):
    model_server.script(
        [
            Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship the report")]),
            Reply(text="The objective is set."),
        ]
    )
    turn = await _turn(thread)
    assert turn.status == Turn.Status.COMPLETE
    # Streamed, and asked for usage the way OpenAI needs it.
    assert all(r["stream"] and r["stream_options"] == {"include_usage": True} for r in model_server.requests)
    reported = model_server.usages
    assert len(reported) == 2 and all(u is not None for u in reported)
    rows = await sync_to_async(_rows)(thread)
    assert [(r.input_tokens, r.output_tokens, r.estimated) for r in rows] == [
        (u["prompt_tokens"], u["completion_tokens"], False) for u in reported
    ]
    for row in rows:
        assert (row.user_id, row.turn_id, row.turn_index) == (owner.pk, turn.pk, 1)
        assert (row.provider_id, row.provider_name, row.model, row.model_key) == (None, "environment", "scripted", "env:scripted")
    # The second call carries the first call's tool result: it was sent more.
    assert rows[1].input_tokens > rows[0].input_tokens


async def test_a_provider_that_reports_no_usage_gets_an_estimate_marked_so(thread, model_server):
    long_answer = "word " * 400
    model_server.script([Misbehave(reply=Reply(text=long_answer), no_usage=True)])
    await _turn(thread)
    assert model_server.usages == [None]
    [row] = await sync_to_async(_rows)(thread)
    assert row.estimated
    # About a token per four characters, of what was sent (the prompt and its tools) and written.
    sent_chars = len(str(model_server.requests[0]["messages"]))
    assert sent_chars // 8 < row.input_tokens < sent_chars // 2
    assert len(long_answer) // 8 < row.output_tokens < len(long_answer) // 2


async def test_a_reply_asked_again_is_two_calls_paid_for(thread, model_server):
    """A blank reply is asked again (agent.middleware.retry): both calls cost tokens."""
    model_server.script(
        [
            Reply(text="", usage={"prompt_tokens": 50, "completion_tokens": 1}),
            Reply(text="Here it is.", usage={"prompt_tokens": 52, "completion_tokens": 4}),
        ]
    )
    await _turn(thread)
    rows = await sync_to_async(_rows)(thread)
    assert [(r.input_tokens, r.output_tokens) for r in rows] == [(50, 1), (52, 4)]


async def test_a_call_stopped_mid_answer_is_counted_from_what_it_was_sent_and_wrote(thread, owner, model_server):
    """A Stop closes the stream before the provider reports usage; the call
    was paid for, so it is counted, estimated and marked so, and a person
    cannot spend tokens past their limit by stopping every answer."""
    words = [f"word{i} " for i in range(400)]
    model_server.script([Reply(text="".join(words), token_delay=0.02)])
    await registry.start_turn(thread=thread, user_message="Write a long answer")
    for _ in range(200):  # until the answer has begun streaming
        await asyncio.sleep(0.05)
        if model_server.requests and registry._running[thread.pk].turn.draft:
            break
    await asyncio.sleep(0.3)
    assert await registry.request_stop(thread=thread)
    await registry.wait_for_turn(thread.pk)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.status == Turn.Status.STOPPED
    # The stream was closed before the provider's usage chunk, which comes last.
    [row] = await sync_to_async(_rows)(thread)
    assert row.estimated and (row.user_id, row.turn_id, row.model) == (owner.pk, turn.pk, "scripted")
    sent_chars = len(str(model_server.requests[0]["messages"]))
    assert sent_chars // 8 < row.input_tokens < sent_chars // 2
    # What it wrote before the Stop: some of the answer, not all of it.
    assert 0 < row.output_tokens < len("".join(words)) // 4
    assert abs(row.output_tokens - len(turn.answer) / 4) <= 2


async def test_a_call_stopped_while_it_writes_a_tool_call_is_counted_from_the_arguments_it_wrote(thread, owner, model_server):
    """A model that writes a long tool call (a whole document) is paid for
    those characters as for an answer's: stopped half-way, the call counts
    them, estimated."""
    content = "".join(f"Paragraph {n}: " + "lorem ipsum " * 8 + "\n\n" for n in range(300))
    reply = Reply(tool_calls=[tool_call("update_document", "Rewriting.", content=content)])
    # In 400-character pieces: at 12 a piece, the half before the pause was
    # some 1 500 events, which the OpenAI client parses at about 0.6 ms each,
    # and a loaded machine had not read them all in the half second below.
    model_server.args_chunk_chars = 400
    pieces = len(json.dumps({"action_and_reasoning": "Rewriting.", "content": content})) // model_server.args_chunk_chars
    model_server.script([Misbehave(reply=reply, pause_after_tokens=pieces // 2, pause_seconds=5)])
    await registry.start_turn(thread=thread, user_message="Rewrite the document")
    while not model_server.pauses:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)  # what was sent before the pause is read
    assert await registry.request_stop(thread=thread)
    await registry.wait_for_turn(thread.pk)

    [row] = await sync_to_async(_rows)(thread)
    assert row.estimated and row.user_id == owner.pk
    # About half the arguments, at four characters a token.
    assert len(content) / 4 * 0.3 < row.output_tokens < len(content) / 4 * 0.7


async def _stored_while_streaming(thread, model_server):
    """The thread's usage rows once the model server paused mid-answer and
    the turn watcher had a second to store what was streamed (it stores
    twice a second)."""
    while not model_server.pauses:
        await asyncio.sleep(0.01)
    await asyncio.sleep(1.0)
    assert thread.pk in registry._running  # still streaming
    streamed = len("".join(registry._running[thread.pk].turn.draft))
    return await sync_to_async(_rows)(thread), streamed


async def test_a_streaming_call_is_counted_as_it_streams_and_its_reported_figure_replaces_the_estimate(
    thread, owner, model_server
):
    """A server killed mid-call loses at most the last half second's usage
    (docs/adr/0063): the call's estimate is stored while it streams, and
    the provider's figure takes its place at the end: one row, one call."""
    reply = Reply(text="word " * 200, usage={"prompt_tokens": 700, "completion_tokens": 100})
    model_server.script([Misbehave(reply=reply, pause_after_tokens=60, pause_seconds=2)])
    await registry.start_turn(thread=thread, user_message="Write a long answer")
    [estimate], streamed = await _stored_while_streaming(thread, model_server)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert estimate.estimated and (estimate.user_id, estimate.turn_id, estimate.model) == (owner.pk, turn.pk, "scripted")
    sent_chars = len(str(model_server.requests[0]["messages"]))
    assert sent_chars // 8 < estimate.input_tokens < sent_chars // 2
    assert streamed and abs(estimate.output_tokens - streamed / 4) <= 2  # what it streamed before the pause

    await registry.wait_for_turn(thread.pk)
    rows = await sync_to_async(_rows)(thread)
    assert [(r.pk, r.input_tokens, r.output_tokens, r.estimated) for r in rows] == [(estimate.pk, 700, 100, False)]


async def test_a_streaming_call_cut_off_is_counted_once_from_what_it_streamed(thread, owner, model_server):
    """A call whose stream broke after its estimate was stored: the estimate
    of all it streamed replaces the stored one; no second row."""
    reply = Reply(text="word " * 200)
    model_server.script([Misbehave(reply=reply, pause_after_tokens=40, pause_seconds=1.5, cut_after_tokens=80)])
    await registry.start_turn(thread=thread, user_message="Write a long answer")
    [estimate], _ = await _stored_while_streaming(thread, model_server)
    await registry.wait_for_turn(thread.pk)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.cut_off
    rows = await sync_to_async(_rows)(thread)
    assert [(r.pk, r.estimated) for r in rows] == [(estimate.pk, True)]
    assert estimate.output_tokens < rows[0].output_tokens and len(turn.answer) // 4 <= rows[0].output_tokens


async def test_a_streaming_calls_estimate_the_database_missed_once_is_still_counted_once(thread, model_server, monkeypatch):
    """The database away for a round of the watcher (docs/adr/0122): the
    estimate it could not store is made again the next round, never kept
    as a call of its own; the reported figure then replaces it."""
    real = registry.model_usage.usage_record
    calls = []

    def flaky(*, rows):
        if rows:
            calls.append(len(rows))
            if len(calls) == 1:
                raise OperationalError("the database is restarting")
        return real(rows=rows)

    monkeypatch.setattr(registry.model_usage, "usage_record", flaky)
    reply = Reply(text="word " * 200, usage={"prompt_tokens": 700, "completion_tokens": 100})
    model_server.script([Misbehave(reply=reply, pause_after_tokens=60, pause_seconds=2.5)])
    await registry.start_turn(thread=thread, user_message="Write a long answer")
    while not model_server.pauses:
        await asyncio.sleep(0.01)
    await asyncio.sleep(1.5)
    assert len(calls) == 2  # the first round failed, the next stored it
    [estimate] = await sync_to_async(_rows)(thread)
    assert estimate.estimated
    await registry.wait_for_turn(thread.pk)
    rows = await sync_to_async(_rows)(thread)
    assert [(r.pk, r.input_tokens, r.output_tokens, r.estimated) for r in rows] == [(estimate.pk, 700, 100, False)]


async def test_an_attempt_that_failed_before_writing_is_not_counted_and_the_one_that_answered_is(thread, model_server, settings):
    settings.HAICO_MODEL_MAX_RETRIES = 1
    model_server.script(
        [
            HTTPFailure(status=500),
            Reply(text="Here it is.", usage={"prompt_tokens": 52, "completion_tokens": 4}),
        ]
    )
    turn = await _turn(thread)
    assert turn.status == Turn.Status.COMPLETE
    rows = await sync_to_async(_rows)(thread)
    assert [(r.input_tokens, r.output_tokens, r.estimated) for r in rows] == [(52, 4, False)]


async def test_a_call_the_provider_refused_is_not_counted(thread, model_server):
    model_server.script([HTTPFailure(status=500)])
    turn = await _turn(thread)
    assert turn.status == Turn.Status.FAILED
    assert await sync_to_async(_rows)(thread) == []


def _answers_lost(monkeypatch, *modules, times: int = 1) -> dict:
    """The database commits the next `times` batches of usage rows (stored
    through any of `modules`' usage_record) and the connection breaks
    before the commit's answer arrives, as a failover or a cut network
    does: the turn hears what it hears when the database is away
    (docs/adr/0154)."""
    lost = {"n": 0, "armed": False}
    real_record = registry.model_usage.usage_record
    wrapper = type(connections["default"])
    real_commit = wrapper._commit

    def commit(self):
        committed = real_commit(self)
        if lost["armed"]:
            lost["armed"] = False
            lost["n"] += 1
            # As Django raises psycopg's error (conversations.outages reads its cause).
            broken = "server closed the connection unexpectedly"
            raise OperationalError(broken) from psycopg.OperationalError(broken)
        return committed

    def usage_record(*, rows):
        lost["armed"] = bool(rows) and lost["n"] < times
        try:
            return real_record(rows=rows)
        finally:
            lost["armed"] = False

    monkeypatch.setattr(wrapper, "_commit", commit)
    for module in modules:
        monkeypatch.setattr(module, "usage_record", usage_record)
    return lost


def _figures(thread):
    return [(r.input_tokens, r.output_tokens, r.estimated) for r in _rows(thread)]


LONG = " ".join(f"word{i}" for i in range(120))


async def test_the_watcher_s_batch_stored_without_its_answer_reaching_the_turn_counts_each_call_once(
    thread, model_server, monkeypatch
):
    """The database took the watcher's batch (the first call's figure, the
    second call's estimate) and the answer was lost: the batch stored again
    finds its rows there. The owner's usage shows two calls, not four."""
    lost = _answers_lost(monkeypatch, registry.model_usage, run)
    model_server.script(
        [
            Reply(
                tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship it")],
                usage={"prompt_tokens": 700, "completion_tokens": 150},
            ),
            Reply(text=LONG, token_delay=0.02, usage={"prompt_tokens": 800, "completion_tokens": 80}),
        ]
    )
    turn = await _turn(thread)
    assert lost["n"] == 1 and turn.status == Turn.Status.COMPLETE
    assert sorted(await sync_to_async(_figures)(thread)) == [(700, 150, False), (800, 80, False)]


async def test_a_turn_end_s_usage_stored_without_its_answer_reaching_the_turn_is_counted_once(thread, model_server, monkeypatch):
    lost = _answers_lost(monkeypatch, run)
    model_server.script([Reply(text="Hello.", usage={"prompt_tokens": 800, "completion_tokens": 80})])
    turn = await _turn(thread, "hi")
    assert lost["n"] == 1 and (turn.status, turn.answer) == (Turn.Status.COMPLETE, "Hello.")
    assert await sync_to_async(_figures)(thread) == [(800, 80, False)]


async def test_a_streaming_call_s_estimate_stored_without_its_answer_is_replaced_by_its_figure(thread, model_server, monkeypatch):
    """The watcher's first estimate of a streaming call was stored and its
    answer lost: the next estimates and the call's figure replace it (the
    call's key), none is left beside as a call of its own."""
    lost = _answers_lost(monkeypatch, registry.model_usage)
    model_server.script([Reply(text=LONG, token_delay=0.02, usage={"prompt_tokens": 900, "completion_tokens": 120})])
    await _turn(thread, "Write")
    assert lost["n"] == 1
    assert await sync_to_async(_figures)(thread) == [(900, 120, False)]


async def test_a_call_slow_to_its_first_token_is_counted_from_its_request_before_it_streams(thread, owner, model_server):
    """A server killed while the model thinks (or right after a quick
    call) would otherwise leave the whole prompt counted nowhere: the
    request's estimate is stored at the watcher's first round after the
    call starts (docs/adr/0154), then the call's figure replaces it."""
    reply = Reply(text="Here it is.", usage={"prompt_tokens": 30_000, "completion_tokens": 4})
    model_server.script([Misbehave(reply=reply, pause_after_tokens=0, pause_seconds=4.0)])
    await registry.start_turn(thread=thread, user_message="Think hard")
    estimate = await _estimate_stored(thread, model_server, within=3.0)
    assert (estimate.user_id, estimate.estimated, estimate.output_tokens) == (owner.pk, True, 0)
    assert estimate.input_tokens > 0
    await registry.wait_for_turn(thread.pk)
    rows = await sync_to_async(_rows)(thread)
    assert [(r.pk, r.input_tokens, r.output_tokens, r.estimated) for r in rows] == [(estimate.pk, 30_000, 4, False)]


async def test_a_call_that_timed_out_before_writing_is_not_counted_though_its_request_was_stored(thread, model_server, settings):
    settings.HAICO_MODEL_TIMEOUT = 3.0
    model_server.script([Misbehave(hang_seconds=8)])
    await registry.start_turn(thread=thread, user_message="Hello?")
    estimate = await _estimate_stored(thread, model_server, within=2.5)
    assert estimate.estimated and estimate.output_tokens == 0
    await registry.wait_for_turn(thread.pk, timeout=20)
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.status == Turn.Status.FAILED
    assert await sync_to_async(_rows)(thread) == []


async def test_a_retry_after_an_attempt_that_timed_out_takes_its_stored_estimate_s_row(thread, model_server, settings):
    settings.HAICO_MODEL_TIMEOUT, settings.HAICO_MODEL_MAX_RETRIES = 3.0, 1
    model_server.script([Misbehave(hang_seconds=8), Reply(text="Back.", usage={"prompt_tokens": 52, "completion_tokens": 4})])
    await registry.start_turn(thread=thread, user_message="Hello?")
    estimate = await _estimate_stored(thread, model_server, within=2.5)
    await registry.wait_for_turn(thread.pk, timeout=20)
    rows = await sync_to_async(_rows)(thread)
    assert [(r.pk, r.input_tokens, r.output_tokens, r.estimated) for r in rows] == [(estimate.pk, 52, 4, False)]


async def test_a_catalogue_model_s_rows_name_its_provider(thread, owner, model_server, settings):
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = settings.HAICO_MODEL = ""
    settings.HAICO_MODELS = []

    def catalogue():
        provider = Provider.objects.create(name="Lab", base_url=model_server.base_url, api_key="sk-lab-000000001")
        return provider, CatalogueModel.objects.create(provider=provider, name="scripted", label="Lab scripted")

    provider, model = await sync_to_async(catalogue)()
    model_server.script([Reply(text="Hello.", usage={"prompt_tokens": 321, "completion_tokens": 12})])
    await _turn(thread, model=f"catalogue:{model.pk}")
    [row] = await sync_to_async(_rows)(thread)
    assert (row.provider_id, row.provider_name, row.model, row.model_key) == (
        provider.pk,
        "Lab",
        "scripted",
        f"catalogue:{model.pk}",
    )
    assert (row.input_tokens, row.output_tokens) == (321, 12)


# --- the person's page --------------------------------------------------------------------


def _usage(user, *, days_ago=0, model="gpt-mini", provider="OpenAI", tokens=(100, 20), thread=None, estimated=False):
    return ModelUsage.objects.create(
        user=user,
        thread=thread,
        provider_name=provider,
        model=model,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        estimated=estimated,
        created_at=timezone.now() - timedelta(days=days_ago),
    )


@pytest.mark.django_db
def test_the_person_sees_today_this_month_per_model_and_their_limits(owner, other_user, settings):
    settings.HAICO_DAILY_TOKEN_LIMIT, settings.HAICO_MONTHLY_TOKEN_LIMIT = 1000, 0
    Account.objects.create(user=owner, monthly_token_limit=100_000)
    now = timezone.now()
    _usage(owner, tokens=(300, 40))
    _usage(owner, model="llama3.1", provider="environment", tokens=(200, 10), estimated=True)
    if now.day > 1:
        _usage(owner, days_ago=1, tokens=(5000, 500))  # earlier this month
    _usage(owner, days_ago=40, tokens=(99_999, 1))  # an earlier month
    _usage(other_user, tokens=(7777, 7))  # not theirs
    client = Client()
    client.force_login(owner)
    page = client.get("/accounts/usage/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Your usage" in html and "7777" not in html and "7 777" not in html
    month_total = 550 + (5500 if now.day > 1 else 0)
    assert 'data-usage="today" data-tokens="550"' in html
    assert f'data-usage="month" data-tokens="{month_total}"' in html
    assert "gpt-mini" in html and "llama3.1" in html and "estimated" in html
    # The limits: the site's daily one and their own monthly one.
    assert "1 000 tokens" in html and "100 000 tokens" in html and "450 left" in html.replace("\u00a0", " ")
    # The top bar links to it.
    assert 'href="/accounts/usage/">Usage</a>' in html


@pytest.mark.django_db
def test_a_reached_limit_says_so_and_when_it_resets(owner, settings):
    settings.HAICO_DAILY_TOKEN_LIMIT = 100
    _usage(owner, tokens=(90, 20))
    client = Client()
    client.force_login(owner)
    html = client.get("/accounts/usage/").content.decode()
    assert "You have used your 100 tokens for today; the limit resets at 00:00 UTC (in " in html


# --- staff's totals ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_staff_see_totals_per_person_model_and_day_with_a_chart_from_the_admin_index(staff, owner, other_user):
    _usage(owner, tokens=(1000, 100))
    _usage(owner, model="llama3.1", tokens=(10, 1), days_ago=2)
    _usage(other_user, tokens=(500, 50))
    client = Client()
    client.force_login(staff)
    index = client.get("/admin/").content.decode()
    assert "Usage and quotas" in index and "/admin/conversations/modelusage/totals/" in index
    page = client.get("/admin/conversations/modelusage/totals/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "owner" in html and "intruder" in html and "gpt-mini" in html and "llama3.1" in html
    assert 'data-person="owner" data-tokens="1111"' in html and 'data-person="intruder" data-tokens="550"' in html
    assert 'data-model="gpt-mini" data-tokens="1650"' in html
    # The chart: server-drawn SVG bars, one per day of the range, nothing from another origin.
    assert (
        "<svg" in html and html.count('class="usage-bar"') == 30 and "https://" not in html.split("<svg", 1)[1].split("</svg>")[0]
    )
    # Filters: one person, one model, a date range.
    one = client.get(f"/admin/conversations/modelusage/totals/?user={owner.pk}&model=gpt-mini").content.decode()
    assert 'data-person="owner" data-tokens="1100"' in one and "intruder" not in one.split("Per person")[1]
    today = timezone.now().date()
    narrow = client.get(f"/admin/conversations/modelusage/totals/?since={today}&until={today}").content.decode()
    assert narrow.count('class="usage-bar"') == 1 and 'data-person="owner" data-tokens="1100"' in narrow


@pytest.mark.django_db
def test_staff_tell_apart_one_model_name_served_by_two_providers_on_the_totals_page(staff, owner):
    """Two local Ollamas both serve llama3.1: the Model choice lists each with
    its provider, and choosing one totals that provider's calls only."""
    _usage(owner, model="llama3.1", provider="Ollama A", tokens=(1000, 0))
    _usage(owner, model="llama3.1", provider="Ollama B", tokens=(10, 0))
    client = Client()
    client.force_login(staff)
    html = client.get("/admin/conversations/modelusage/totals/").content.decode()
    select = html.split('name="model"', 1)[1].split("</select>", 1)[0]
    options = re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', select)
    labels = [label for _, label in options]
    assert labels == ["Every model", "llama3.1 (Ollama A)", "llama3.1 (Ollama B)"]
    value = dict((label, value) for value, label in options)["llama3.1 (Ollama B)"]
    one = client.get("/admin/conversations/modelusage/totals/", {"model": unescape(value)}).content.decode()
    assert 'class="errornote"' not in one
    assert "in 1 model calls" in one and 'data-model="llama3.1" data-tokens="10"' in one and 'data-tokens="1000"' not in one
    # An older address naming the model alone still totals it at every provider.
    both = client.get("/admin/conversations/modelusage/totals/", {"model": "llama3.1"}).content.decode()
    assert "in 2 model calls" in both


@pytest.mark.django_db
def test_the_totals_page_reads_only_the_calls_of_its_range_once(staff, owner, django_assert_max_num_queries):
    """At a team's year of calls the page stayed over a second: its filter
    form was built twice, each listing every model and person of every call
    ever. Every read of the calls is bounded by the page's range now."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _usage(owner, tokens=(5, 5))
    _usage(owner, days_ago=200, model="old-model", tokens=(7, 7))
    client = Client()
    client.force_login(staff)
    with CaptureQueriesContext(connection) as queries:
        html = client.get("/admin/conversations/modelusage/totals/").content.decode()
    calls = [q["sql"] for q in queries.captured_queries if "conversations_modelusage" in q["sql"]]
    assert len(calls) == 6 and all("created_at" in sql for sql in calls), calls
    assert "old-model" not in html  # not used in the 30 days shown
    wide = client.get("/admin/conversations/modelusage/totals/", {"since": str(timezone.now().date() - timedelta(days=300))})
    assert "old-model (OpenAI)" in wide.content.decode()


@pytest.mark.django_db
def test_the_totals_per_day_fall_on_their_utc_day(staff, owner):
    from datetime import UTC, datetime

    from conversations import usage

    today = timezone.now().astimezone(UTC).date()
    midnight = datetime(today.year, today.month, today.day, tzinfo=UTC)
    for when, tokens in (
        (midnight - timedelta(microseconds=1), 1),
        (midnight, 10),
        (midnight + timedelta(hours=23, minutes=59), 100),
    ):
        row = _usage(owner, tokens=(tokens, 0))
        ModelUsage.objects.filter(pk=row.pk).update(created_at=when)
    days = usage.totals(since=today - timedelta(days=1), until=today)["per_day"]
    assert [(row["day"], row["total"], row["calls"]) for row in days] == [(today - timedelta(days=1), 1, 1), (today, 110, 2)]


@pytest.mark.django_db
def test_the_totals_page_refuses_bad_filters_with_a_message(staff):
    client = Client()
    client.force_login(staff)
    for query in (
        "since=2026-13-01",
        "since=2026-02-01&until=2026-01-01",
        "user=²",
        "user=99999999999999999999",
        "since=2020-01-01&until=2026-01-01",
        "model=" + "x" * 300,
        'model=["OpenAI"]',
        'model=["OpenAI", "' + "x" * 300 + '"]',
    ):
        response = client.get(f"/admin/conversations/modelusage/totals/?{query}")
        assert response.status_code == 200, query
        assert 'class="errornote"' in response.content.decode(), query


@pytest.mark.django_db
def test_the_model_calls_are_read_only_in_the_admin(staff, owner, thread):
    row = _usage(owner, thread=thread)
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/conversations/modelusage/").status_code == 200
    assert client.get(f"/admin/conversations/modelusage/{row.pk}/change/").status_code == 200
    assert client.get("/admin/conversations/modelusage/add/").status_code == 403
    assert client.post(f"/admin/conversations/modelusage/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ModelUsage.objects.filter(pk=row.pk).exists() and Thread.objects.filter(pk=thread.pk).exists()
