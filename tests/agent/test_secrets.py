"""A catalogue provider's API key goes to its provider and nowhere else
(agent.secrets, docs/adr/0062): not in any page (the admin's, the thread's),
not in a thread archive, not in the activity log, not in the server's log,
even when the provider echoes the key back in an error."""

import io
import logging

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from agent.builder import AgentProvider
from agent.models import CatalogueModel, Provider
from agent.secrets import REDACTED, RedactSecrets, redact, remember_secret
from conversations.models import ActivityLogEntry, Turn
from conversations.turns import registry
from tests.support.fake_model import Reply, tool_call
from tests.support.openai_server import HTTPFailure, OpenAICompatibleServer
from tests.support.turns import turn_environment  # noqa: F401  (autouse: the turns end and the saver closes here)

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-catalogue-key-5e6f7a8b9c0d1e2f"


@pytest.fixture
def provider_server(settings, monkeypatch):
    with OpenAICompatibleServer(models=["lab-model"]) as server:
        settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = settings.HAICO_MODEL = ""
        settings.HAICO_MODELS = []
        settings.HAICO_MODEL_MAX_RETRIES = 0
        provider = Provider.objects.create(name="Lab", base_url=server.base_url, api_key=KEY)
        model = CatalogueModel.objects.create(provider=provider, name="lab-model", label="Lab model", is_default=True)
        monkeypatch.setattr(registry, "agents", AgentProvider())
        server.key = f"catalogue:{model.pk}"
        yield server


@pytest.fixture
def server_log():
    """What the server's own log handlers (haico_site.settings LOGGING) write."""
    stream = io.StringIO()
    # Every logger's lines go through the root's handler (pytest adds its own capturing ones beside it).
    handlers = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
    assert handlers and all(any(isinstance(f, RedactSecrets) for f in h.filters) for h in handlers)
    previous = [h.setStream(stream) for h in handlers]
    yield stream
    for handler, old in zip(handlers, previous, strict=True):
        handler.setStream(old)


async def _turn(thread, message, key):
    index = await registry.start_turn(thread=thread, user_message=message, model_name=key)
    await registry.wait_for_turn(thread.pk)
    return await sync_to_async(Turn.objects.get)(thread=thread, index=index)


async def test_the_key_reaches_its_provider_and_no_page_archive_or_log(thread, owner, staff, provider_server, server_log):
    provider_server.script(
        [
            Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Ship the report")]),
            Reply(text="Done: the objective is set."),
        ]
    )
    turn = await _turn(thread, "Set the goal", provider_server.key)
    assert turn.status == Turn.Status.COMPLETE and turn.model_name == provider_server.key
    assert [h["authorization"] for h in provider_server.request_headers] == [f"Bearer {KEY}"] * 2
    assert provider_server.requests[0]["model"] == "lab-model"

    def pages():
        owner_client, staff_client = Client(), Client()
        owner_client.force_login(owner)
        staff_client.force_login(staff)
        provider = Provider.objects.get()
        texts = [
            owner_client.get(path).content.decode()
            for path in (
                f"/threads/{thread.pk}/workspace/",
                "/threads/",
                "/accounts/tokens/",
            )
        ]
        archive = owner_client.get(f"/threads/{thread.pk}/export/")
        texts.append(b"".join(archive.streaming_content).decode() if archive.streaming else archive.content.decode())
        texts += [
            staff_client.get(path).content.decode()
            for path in (
                "/admin/",
                "/admin/agent/provider/",
                f"/admin/agent/provider/{provider.pk}/change/",
                "/admin/agent/cataloguemodel/",
                f"/admin/workspace/thread/{thread.pk}/change/",
                f"/admin/workspace/thread/{thread.pk}/review/",
                "/admin/conversations/turn/",
            )
        ]
        return texts

    texts = await sync_to_async(pages)()
    assert "Done: the objective is set." in texts[0]
    for text in texts:
        assert KEY not in text
    assert KEY not in server_log.getvalue()


async def test_a_provider_echoing_the_key_in_an_error_leaves_it_in_no_log_or_activity_entry(thread, provider_server, server_log):
    provider_server.script([HTTPFailure(401, f"Incorrect API key provided: {KEY}. You can find your key at …")])
    turn = await _turn(thread, "Hello", provider_server.key)
    assert turn.status == Turn.Status.FAILED and "refused the API key" in turn.notice
    entries = await sync_to_async(lambda: list(ActivityLogEntry.objects.filter(thread=thread)))()
    assert entries and all(KEY not in e.message and KEY not in e.detail for e in entries)
    assert any(REDACTED in e.detail for e in entries)
    log = server_log.getvalue()
    assert "turn 1 of thread" in log and "AuthenticationError" in log
    assert KEY not in log and REDACTED in log


def test_the_filter_blanks_a_key_in_use_from_messages_arguments_and_tracebacks():
    remember_secret("sk-filter-test-0011223344")
    remember_secret("short")  # too short to be a key: left alone
    assert redact("a sk-filter-test-0011223344 b short") == f"a {REDACTED} b short"
    try:
        raise ValueError("echo sk-filter-test-0011223344")
    except ValueError:
        record = logging.LogRecord(
            "haico", logging.ERROR, __file__, 1, "key %s", ("sk-filter-test-0011223344",), exc_info=__import__("sys").exc_info()
        )
    RedactSecrets().filter(record)
    formatted = logging.Formatter().format(record)
    assert "sk-filter-test-0011223344" not in formatted and formatted.count(REDACTED) >= 2
