"""The activity log of a thread, one source per test: a turn driven through
the real ChatOpenAI (against the local OpenAI-compatible server, so the
SDK's own retries of a 429 really happen), the real agent and the thread's
socket. Each asserts the entry the log holds, in the person's words, with
the operator's detail, and that it reached the open tab."""

import json

import pytest
from channels.db import database_sync_to_async

from agent.events import ModelCallRetried
from conversations import activity
from conversations.models import ActivityLogEntry
from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import HTTPFailure, Misbehave
from workspace.services import preferences as preference_services

from .helpers import frames_until_turn_end, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

Kind = ActivityLogEntry.Kind


@pytest.fixture
def model_server(model_server, settings):
    """Two retries, so a log entry can say the model was tried three times."""
    settings.HAICO_MODEL_MAX_RETRIES = 2
    return model_server


@pytest.fixture
async def send(owner, thread, model_server):
    socket = await open_socket(thread.pk, owner)

    async def send(text: str) -> str:
        await socket.send_to(text_data=json.dumps({"message": text, "HEADERS": {"HX-Request": "true"}}))
        return "".join(await frames_until_turn_end(socket, timeout=20))

    yield send
    await socket.disconnect()


async def entries(thread) -> list[ActivityLogEntry]:
    return await database_sync_to_async(lambda: list(ActivityLogEntry.objects.filter(thread=thread).order_by("pk")))()


async def test_a_429_then_success_is_one_entry_saying_the_model_was_busy(send, thread, model_server):
    model_server.script(
        [HTTPFailure(429, "slow down", retry_after=0), HTTPFailure(429, "slow down", retry_after=0), Reply(text="Here it is.")]
    )
    html = await send("Draft the intro")
    assert "Here it is." in html
    [entry] = await entries(thread)
    assert (entry.kind, entry.level, entry.turn_index) == (Kind.RETRY, "info", 1)
    assert entry.message == "The model was busy; retried twice."
    assert entry.detail.count("HTTP 429") == 2 and "slow down" in entry.detail
    assert len(model_server.requests) == 3
    # The open tab got it as it was written, details one click away.
    assert 'hx-swap-oob="afterbegin"' in html and "The model was busy; retried twice." in html
    assert '<details class="activity-detail">' in html


async def test_rate_limited_beyond_the_retries_is_a_provider_error_with_its_status(send, thread, model_server):
    model_server.script([HTTPFailure(429, "quota exceeded", retry_after=0)] * 3 + [Reply(text="ok")])
    await send("Draft the intro")
    [entry] = await entries(thread)
    assert (entry.kind, entry.level) == (Kind.PROVIDER_ERROR, "error")
    assert "limiting requests" in entry.message and "tried 3 times" in entry.message
    assert "RateLimitError" in entry.detail and "HTTP 429" in entry.detail and "quota exceeded" in entry.detail


async def test_a_model_that_does_not_answer_in_time_says_it_was_retried(send, thread, model_server, settings):
    settings.HAICO_MODEL_MAX_RETRIES = 1
    model_server.script([Misbehave(hang_seconds=3), Reply(text="Back.")])
    html = await send("Hello?")
    assert "Back." in html
    [entry] = await entries(thread)
    assert entry.message == "The model did not answer in time; retried once."
    assert "no response" in entry.detail


async def test_a_blank_reply_asked_again_is_one_retry_entry(send, thread, model_server):
    model_server.script([Reply(text=""), Reply(text="Now I answer.")])
    await send("Anything?")
    [entry] = await entries(thread)
    assert (entry.kind, entry.message) == (Kind.RETRY, "The model gave an empty reply; retried once.")


async def test_an_answer_cut_off_at_the_output_limit_is_logged_with_the_setting(send, thread, model_server):
    model_server.script([Reply(text="The plan has three parts: first", finish_reason="length")])
    await send("Plan it")
    [entry] = await entries(thread)
    assert (entry.kind, entry.level) == (Kind.TRUNCATION, "warning")
    assert entry.message == "The model's reply was cut off at the model's output limit in the answer."
    assert "HAICO_MODEL_MAX_TOKENS" in entry.detail and "finish_reason=length" in entry.detail


async def test_an_answer_whose_stream_ends_early_is_logged_as_cut_off(send, thread, model_server):
    model_server.script([Misbehave(reply=Reply(text="The answer begins here"), no_finish_reason=True)])
    await send("Go")
    [entry] = await entries(thread)
    assert entry.kind == Kind.TRUNCATION and "ended before it said it was done" in entry.message


async def test_a_tool_failure_is_told_in_plain_words_with_its_arguments(send, thread, model_server):
    model_server.script(
        [
            Reply(tool_calls=[tool_call("toggle_todos", "Ticking step 9.", indices=[9])]),
            Reply(text="There is no step 9."),
        ]
    )
    await send("Tick step 9")
    [entry] = await entries(thread)
    assert (entry.kind, entry.level) == (Kind.TOOL_FAILURE, "warning")
    assert entry.message.startswith("A step did not work: “Ticking step 9.”.")
    assert "tool: toggle_todos" in entry.detail and '"indices": [9]' in entry.detail


async def test_a_call_with_broken_json_arguments_is_refused(send, thread, model_server):
    broken = Misbehave(
        reply=Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="x")]),
        raw_arguments=['{"action_and_reasoning": "Writing the goal.", "text": "Ship'],
    )
    model_server.script([broken, Reply(text="I could not.")])
    await send("Record the goal")
    [entry] = await entries(thread)
    assert (entry.kind, entry.level) == (Kind.REFUSED_CALL, "warning")
    assert entry.message == "Not run: “Writing the goal.”. The model sent its arguments as broken JSON."


async def test_a_call_of_an_unknown_tool_is_refused(send, thread, model_server):
    model_server.script([Reply(tool_calls=[tool_call("launch_rockets", "Launching.")]), Reply(text="Sorry.")])
    await send("Launch")
    [entry] = await entries(thread)
    assert entry.kind == Kind.REFUSED_CALL
    assert entry.message == "Not run: the model asked for a tool that does not exist (launch_rockets)."


async def test_a_call_on_a_locked_preference_is_refused(send, thread, model_server):
    def lock():
        preference = preference_services.preference_add(thread=thread, title="British spelling", respect_lock=False)
        preference_services.preference_set_locked(preference=preference, locked=True, respect_lock=False)

    await database_sync_to_async(lock)()
    model_server.script(
        [
            Reply(tool_calls=[tool_call("remove_preferences", "Dropping the spelling rule.", indices=[1])]),
            Reply(text="It is locked."),
        ]
    )
    await send("Drop the spelling rule")
    [entry] = await entries(thread)
    assert entry.kind == Kind.REFUSED_CALL and entry.message.startswith("Not run: “Dropping the spelling rule.”.")
    assert "locked" in entry.message.lower()


async def test_the_model_call_cap_is_logged(send, thread, model_server, settings):
    settings.HAICO_MODEL_CALL_LIMIT = 1
    model_server.script([Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="Ship it")])])
    await send("Go on and on")
    [entry] = await entries(thread)
    assert (entry.kind, entry.level) == (Kind.CAP_REACHED, "warning")
    assert entry.message.startswith("The turn stopped at the Execute mode's limit of 1 model calls.")
    assert "limit of 1 model calls (HAICO_MODEL_CALL_LIMIT)" in entry.detail


async def test_an_entry_is_escaped_in_the_tab(send, thread, model_server):
    model_server.script(
        [
            Reply(tool_calls=[tool_call("toggle_todos", "<img src=x>", indices=[7])]),
            Reply(text="No."),
        ]
    )
    html = await send("Tick")
    pushed = html[html.index('id="activity-entries"') :]
    assert "<img src=x>" not in pushed and "&lt;img src=x&gt;" in pushed


def test_a_call_retried_for_several_reasons_says_each_once():
    note = activity.retried(ModelCallRetried(reasons=("busy", "busy", "blank")))
    assert note.message == "The model call was retried 3 times: the model was busy (twice), the model gave an empty reply (once)."
    assert activity.retried(ModelCallRetried(reasons=())) is None
