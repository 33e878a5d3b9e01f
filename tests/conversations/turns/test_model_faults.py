"""A misbehaving model server, through the real ChatOpenAI, the real agent and
the thread's socket: one test per fault.

Each asserts what the person keeps (their message as a turn row and the
turn's snapshot), that the workspace holds nothing a broken reply asked
for, what the chat shows at the end of the turn, and that the next turn on
the same thread works."""

import json

import pytest
from channels.db import database_sync_to_async

from agent.middleware.replies import TRUNCATED_CALL_ERROR
from conversations.models import Turn
from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import HTTPFailure, Misbehave, OpenAICompatibleServer
from workspace import selectors
from workspace.models import WorkspaceSnapshot

from ..helpers import frames_until_turn_end, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

NEXT = Reply(text="Next turn works.")


class Chat:
    """One person's tab on the thread."""

    def __init__(self, socket, thread):
        self.socket, self.thread = socket, thread

    async def send(self, text: str) -> str:
        await self.socket.send_to(text_data=json.dumps({"message": text, "HEADERS": {"HX-Request": "true"}}))
        frames = await frames_until_turn_end(self.socket, timeout=20)
        return "".join(frames)

    async def rows(self):
        return await database_sync_to_async(
            lambda: list(Turn.objects.filter(thread=self.thread).order_by("index").values_list("index", "user_message", "status"))
        )()

    async def snapshots(self):
        return await database_sync_to_async(
            lambda: list(WorkspaceSnapshot.objects.filter(thread=self.thread).values_list("turn_index", "user_message"))
        )()

    async def objective(self):
        return await database_sync_to_async(lambda: getattr(selectors.objective_for(thread=self.thread), "text", None))()

    async def kept_and_recovers(self, message: str, status: str) -> None:
        """The person's message is stored with its snapshot, and the thread takes the next turn."""
        assert (await self.rows())[-1] == (1, message, status)
        assert (await self.snapshots()) == [(1, message)]
        html = await self.send("and now?")
        assert "Next turn works." in html
        assert (await self.rows())[-1] == (2, "and now?", "complete")


@pytest.fixture
async def chat(owner, thread, model_server):
    socket = await open_socket(thread.pk, owner)
    yield Chat(socket, thread)
    await socket.disconnect()


def _turn_failure_lines(caplog):
    return [
        (record.levelname, record.exc_info is not None)
        for record in caplog.records
        if record.name == "haico.conversations.turns" and record.levelname != "INFO"
    ]


async def test_a_model_that_never_answers_times_out_with_a_message_and_retry(chat, model_server, caplog):
    model_server.script([Misbehave(hang_seconds=3), Misbehave(hang_seconds=3), NEXT])
    html = await chat.send("Draft the intro")
    assert "“scripted” did not answer in time." in html and "Retry turn 1" in html
    # An expected event at the provider: one line for the operator, no traceback of our own code.
    assert _turn_failure_lines(caplog) == [("WARNING", False)]
    await chat.kept_and_recovers("Draft the intro", "failed")


async def test_rate_limited_beyond_the_retries_says_so(chat, model_server):
    model_server.script([HTTPFailure(429, "slow down", retry_after=0), HTTPFailure(429, "slow down", retry_after=0), NEXT])
    html = await chat.send("Draft the intro")
    assert "limiting requests" in html and "Retry turn 1" in html
    await chat.kept_and_recovers("Draft the intro", "failed")


async def test_a_server_error_says_so(chat, model_server, caplog):
    model_server.script([HTTPFailure(500), HTTPFailure(500), NEXT])
    html = await chat.send("Draft the intro")
    assert "HTTP 500" in html and "Retry turn 1" in html
    assert _turn_failure_lines(caplog) == [("WARNING", False)]
    await chat.kept_and_recovers("Draft the intro", "failed")


async def test_blank_replies_end_the_turn_with_a_visible_message(chat, model_server):
    model_server.script([Reply(text=""), Reply(text=""), Reply(text=""), NEXT])
    html = await chat.send("Anything?")
    assert "returned an empty reply 3 times" in html and "is-notice" in html and "Retry turn 1" in html
    await chat.kept_and_recovers("Anything?", "complete")


async def test_a_malformed_finish_reason_is_asked_again(chat, model_server):
    model_server.script([Reply(text="I will upd", finish_reason="MALFORMED_FUNCTION_CALL"), Reply(text="Here it is."), NEXT])
    html = await chat.send("Go")
    assert "<p>Here it is.</p>" in html and "I will upd" not in html.split("<p>Here it is.</p>")[-1]
    await chat.kept_and_recovers("Go", "complete")


async def test_an_answer_cut_off_at_the_output_limit_is_marked_cut_off(chat, model_server):
    model_server.script([Reply(text="The plan has three parts: first", finish_reason="length"), NEXT])
    html = await chat.send("Plan it")
    assert "The plan has three parts: first" in html and "Cut off" in html and "Retry turn 1" in html
    await chat.kept_and_recovers("Plan it", "complete")


async def test_a_tool_call_cut_off_at_the_output_limit_is_never_applied(chat, model_server):
    cut = Misbehave(
        reply=Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="x")], finish_reason="length"),
        raw_arguments=['{"action_and_reasoning": "Writing the goal.", "text": "Ship the quarterly rep'],
    )
    model_server.script([cut, cut, Reply(text="I could not record the goal."), NEXT])
    html = await chat.send("Record the goal")
    assert await chat.objective() is None  # no half objective
    assert "is-failed" in html and "I could not record the goal." in html
    # Asked again with a note, then the model was told the call did not run.
    assert "cut off at the output limit" in json.dumps(model_server.requests[1]["messages"][-1])
    assert TRUNCATED_CALL_ERROR in json.dumps(model_server.requests[2]["messages"])
    await chat.kept_and_recovers("Record the goal", "complete")


async def test_tool_arguments_that_are_not_json_are_refused_not_repaired(chat, model_server):
    broken = Misbehave(
        reply=Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="x")]),
        raw_arguments=['{"action_and_reasoning": "Writing the goal.", "text": "Ship the rep'],
    )
    model_server.script(
        [
            broken,
            Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="Ship the report")]),
            Reply(text="Done."),
            NEXT,
        ]
    )
    html = await chat.send("Record the goal")
    # The model read why and sent the call again; the half string never landed.
    assert "not valid JSON" in json.dumps(model_server.requests[1]["messages"])
    assert await chat.objective() == "Ship the report"
    assert 'id="turn-1-step-1" class="reasoning-step is-failed"' in html and "<p>Done.</p>" in html
    await chat.kept_and_recovers("Record the goal", "complete")


async def test_arguments_no_parser_can_read_are_refused_too(chat, model_server):
    broken = Misbehave(
        reply=Reply(tool_calls=[tool_call("set_objective", "Writing the goal.", text="x")]), raw_arguments=["{{{not json"]
    )
    model_server.script([broken, Reply(text="I will try differently."), NEXT])
    html = await chat.send("Record the goal")
    assert "not valid JSON" in json.dumps(model_server.requests[1]["messages"])
    assert await chat.objective() is None and "I will try differently." in html
    await chat.kept_and_recovers("Record the goal", "complete")


async def test_an_unknown_tool_fails_its_step_and_the_model_goes_on(chat, model_server):
    model_server.script(
        [Reply(tool_calls=[tool_call("delete_everything", "Cleaning up.")]), Reply(text="That tool does not exist."), NEXT]
    )
    html = await chat.send("Clean up")
    assert "is-failed" in html and "That tool does not exist." in html
    await chat.kept_and_recovers("Clean up", "complete")


async def test_a_stream_cut_mid_answer_is_marked_cut_off(chat, model_server):
    model_server.script([Misbehave(reply=Reply(text="The answer begins here and then"), cut_after_tokens=5), NEXT])
    html = await chat.send("Explain")
    assert "The answer begins" in html and "Cut off" in html and "Retry turn 1" in html
    await chat.kept_and_recovers("Explain", "complete")


async def test_a_stream_ending_without_a_finish_reason_is_not_presented_as_complete(chat, model_server):
    model_server.script([Misbehave(reply=Reply(text="Looks complete but is not"), no_finish_reason=True), NEXT])
    html = await chat.send("Explain")
    assert "Looks complete but is not" in html and "Cut off" in html
    await chat.kept_and_recovers("Explain", "complete")


async def test_lone_surrogates_in_model_output_break_nothing(chat, model_server, owner):
    model_server.script(
        [
            Reply(tool_calls=[tool_call("set_objective", "Writing the goal \ud800.", text="Caf\udce9 goal")]),
            Reply(text="Broken \ud800 character"),
            NEXT,
        ]
    )
    other_tab = await open_socket(chat.thread.pk, owner)
    html = await chat.send("Go")
    assert "Broken \ufffd character" in html
    assert await chat.objective() == "Caf\ufffd goal"
    # The other tab of the thread is still open and got the same turn.
    assert "Broken \ufffd character" in "".join(await frames_until_turn_end(other_tab, timeout=5))
    await other_tab.disconnect()
    await chat.kept_and_recovers("Go", "complete")


FIRST_STEP = tool_call("set_objective", "Step of the first turn.", text="x")
BROKEN_FIRST_TURNS = {
    "malformed three times": [Reply(tool_calls=[FIRST_STEP], finish_reason="MALFORMED_FUNCTION_CALL")] * 3
    + [Reply(text="Gave up.")],
    "arguments not JSON": [
        Misbehave(
            reply=Reply(tool_calls=[FIRST_STEP]),
            raw_arguments=['{"action_and_reasoning": "Step of the first turn.", "text": "Sh'],
        ),
        Reply(text="Gave up."),
    ],
    "cut off in a call": [
        Misbehave(
            reply=Reply(tool_calls=[FIRST_STEP], finish_reason="length"),
            raw_arguments=['{"action_and_reasoning": "Step of the first turn."'],
        ),
        Reply(text="Gave up."),
    ],
    "failed after a step": [Reply(tool_calls=[FIRST_STEP]), HTTPFailure(500), HTTPFailure(500)],
    "blank after a step": [Reply(tool_calls=[FIRST_STEP]), Reply(text=""), Reply(text=""), Reply(text="")],
}


@pytest.mark.parametrize("first_turn", list(BROKEN_FIRST_TURNS))
async def test_no_step_of_an_earlier_turn_reappears_in_the_next_turns_trace(chat, model_server, first_turn):
    second_step = tool_call("add_todos", "Step of the second turn.", steps=[{"text": "One", "depth": 0}])
    model_server.script([*BROKEN_FIRST_TURNS[first_turn], Reply(tool_calls=[second_step]), Reply(text="Planned.")])
    await chat.send("First")
    second = await chat.send("Second")
    assert "Step of the second turn." in second and "Step of the first turn." not in second
    assert 'id="turn-2-step-1"' in second and 'id="turn-2-step-2"' not in second


async def test_a_tool_call_written_as_text_runs_and_is_taken_back_from_the_bubble(chat, model_server):
    # What a small Llama writes when it does not use the API's tool calls (docs/adr/0020).
    text_call = '<|python_tag|>{"name": "set_objective", "parameters": {"action_and_reasoning": "Writing the goal.", "text": "Ship the report"}}'
    model_server.script([Reply(text=text_call), Reply(text="I recorded the goal."), NEXT])
    html = await chat.send("Record the goal")
    assert await chat.objective() == "Ship the report"
    assert "Writing the goal." in html and "<p>I recorded the goal.</p>" in html
    # The streamed call text was replaced in the bubble before the answer came.
    withdrawn = html.rindex('<div id="turn-1-answer-content" class="bubble-text answer is-streaming" hx-swap-oob="true">')
    assert "python_tag" in html[:withdrawn] and "python_tag" not in html[withdrawn:]
    rows = await database_sync_to_async(lambda: list(Turn.objects.filter(thread=chat.thread).values_list("answer", flat=True)))()
    assert rows == ["I recorded the goal."]
    await chat.kept_and_recovers("Record the goal", "complete")


@pytest.fixture
def two_providers(model_server):
    """Two catalogue providers, each a model server of its own, beside the environment's."""
    from agent.models import CatalogueModel, Provider

    with OpenAICompatibleServer(models=["alpha-large"]) as down, OpenAICompatibleServer(models=["beta-small"]) as up:
        failing = Provider.objects.create(name="Alpha Cloud", base_url=down.base_url, api_key="sk-alpha-0123456789")
        working = Provider.objects.create(name="Beta Local", base_url=up.base_url, api_key="sk-beta-0123456789")
        a = CatalogueModel.objects.create(provider=failing, name="alpha-large", label="Alpha Large")
        b = CatalogueModel.objects.create(provider=working, name="beta-small", label="Beta Small")
        yield down, up, f"catalogue:{a.pk}", f"catalogue:{b.pk}"


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (
            HTTPFailure(429, "slow down", retry_after=0),
            "The provider of “Alpha Large (Alpha Cloud)” is limiting requests right now.",
        ),
        (HTTPFailure(500), "The provider of “Alpha Large (Alpha Cloud)” answered with an error (HTTP 500)."),
        (
            HTTPFailure(401, "invalid api key"),
            "The provider of “Alpha Large (Alpha Cloud)” refused the API key it was given; whoever runs this site needs to check it.",
        ),
    ],
    ids=["429", "500", "401"],
)
async def test_a_failing_provider_is_named_and_another_model_suggested_and_it_finishes_the_work(
    owner, thread, two_providers, failure, said, caplog
):
    """Among several providers the failed turn names its model as the
    selector shows it and suggests another; the setting to check is in the
    server's log, not in front of the person."""
    down, up, alpha, beta = two_providers
    down.script([failure, failure, failure])
    up.script([Reply(text="Beta answered.")])
    socket = await open_socket(thread.pk, owner)
    try:
        await socket.send_to(
            text_data=json.dumps({"message": "Draft the intro", "model": alpha, "HEADERS": {"HX-Request": "true"}})
        )
        html = "".join(await frames_until_turn_end(socket, timeout=20))
        assert said in html and "You can also choose another model in the Model selector." in html
        assert "OPENAI_API_KEY" not in html and "Retry turn 1" in html
        logged = " ".join(r.getMessage() for r in caplog.records if r.name == "haico.conversations.turns")
        assert "'alpha-large' at provider 'Alpha Cloud'" in logged
        if failure.status == 401:
            assert "OPENAI_API_KEY" in logged
        await socket.send_to(
            text_data=json.dumps({"message": "Draft the intro", "model": beta, "HEADERS": {"HX-Request": "true"}})
        )
        assert "Beta answered." in "".join(await frames_until_turn_end(socket, timeout=20))
        rows = await database_sync_to_async(
            lambda: list(Turn.objects.filter(thread=thread).order_by("index").values_list("status", "model_name"))
        )()
        assert rows == [("failed", alpha), ("complete", beta)]
    finally:
        await socket.disconnect()
