"""`manage.py behaviour_eval` against a local OpenAI-compatible server: two
models side by side through the real ChatOpenAI, and what it refuses."""

import io

import pytest
from django.core.management import CommandError, call_command

from conversations.models import Turn
from tests.support.fake_model import Reply
from tests.support.openai_server import OpenAICompatibleServer
from workspace.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)

# A small local model that writes its tool call as text (docs/adr/0020).
QWEN_CALL = (
    '<tool_call>{"name": "update_preferences", "arguments": {"action_and_reasoning": "Switching the spelling.", '
    '"updates": [{"index": 1, "title": "British English"}]}}</tool_call>'
)


def _by_model(body):
    asked = [m for m in body["messages"] if m["role"] == "tool"]
    if body["model"] == "careful":
        return Reply(text="I left the spelling as it is, since American English is locked.")
    return Reply(text="- could not change it") if asked else Reply(text=QWEN_CALL)


def test_two_models_side_by_side_and_nothing_left_behind():
    with OpenAICompatibleServer(models=["careful", "careless"]) as server:
        server.default_reply = _by_model
        out, err = io.StringIO(), io.StringIO()
        call_command(
            "behaviour_eval",
            "--base-url",
            server.base_url,
            "--model",
            "careful",
            "--model",
            "careless",
            "--scenario",
            "locked-preference",
            stdout=out,
            stderr=err,
        )
    text = out.getvalue()
    row = next(line for line in text.splitlines() if line.startswith("locked preferences untouched"))
    assert row.split()[3:4] == ["pass"] and "fail (tried to edit a locked preference)" in row
    totals = text.splitlines()[-2:]
    assert [line.split() for line in totals] == [["careful", "2", "0", "1", "2/2"], ["careless", "1", "2", "0", "1/3"]]
    assert "running careful: locked-preference" in err.getvalue()
    assert {body["model"] for body in server.requests} == {"careful", "careless"}
    assert not Thread.objects.exists() and not Turn.objects.exists()


def test_without_a_model_or_an_endpoint_it_says_what_to_give(settings):
    settings.HAICO_MODEL, settings.HAICO_MODELS = "", []
    with pytest.raises(CommandError, match="--model"):
        call_command("behaviour_eval")
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "", ""
    with pytest.raises(CommandError, match="--base-url"):
        call_command("behaviour_eval", "--model", "llama3.2")


def test_the_servers_running_turns_are_left_alone(settings, thread):
    # The eval shares the database (and maybe the env) with a running server.
    settings.HAICO_INSTANCE = "web-1"
    live = Turn.objects.create(
        thread=thread, index=1, user_message="x", status=Turn.Status.RUNNING, instance="web-1", boot="live"
    )
    with OpenAICompatibleServer(models=["careful"]) as server:
        server.default_reply = _by_model
        call_command(
            "behaviour_eval",
            "--base-url",
            server.base_url,
            "--model",
            "careful",
            "--scenario",
            "locked-preference",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    live.refresh_from_db()
    assert live.status == Turn.Status.RUNNING
