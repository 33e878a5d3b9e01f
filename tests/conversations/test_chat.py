"""conversations.chat: past turns on page load, read back from the checkpointer."""

import re

import pytest
from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from conversations.chat import chat_context
from conversations.models import TurnSlot
from conversations.turns import registry
from conversations.turns.slot import turn_begin
from tests.support.fake_model import Reply, tool_call
from tests.support.turns import run_turn

from .helpers import frame_containing, frames_until_turn_end

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _context(thread, user):
    from workspace.models import Thread

    return chat_context(thread=Thread.objects.get(pk=thread.pk), user=user)


async def _page(async_client, user, thread):
    await async_client.aforce_login(user)
    response = await async_client.get(f"/threads/{thread.pk}/workspace/")
    assert response.status_code == 200
    return response.content.decode()


def _chat_panel(html: str) -> str:
    return html[html.index('id="panel-chat"') :]


async def test_after_a_turn_the_page_shows_it_with_reasoning_collapsed(owner, thread, script, async_client):
    script(
        Reply(tool_calls=[tool_call("add_todos", "Laying out the plan.", steps=[{"text": "Outline", "depth": 0}])]),
        Reply(text="I planned it: **one step**."),
    )
    await run_turn(thread, "plan my essay")

    context = await _context(thread, owner)
    [turn] = context["turns"]
    assert turn["turn_index"] == 1 and turn["user_message"] == "plan my essay"
    assert [step.to_json() for step in turn["steps"]] == [{"text": "Laying out the plan.", "status": "done"}]
    assert "<strong>one step</strong>" in turn["answer_html"]
    assert context["running"] is False

    chat = _chat_panel(await _page(async_client, owner, thread))
    details = re.search(r'<details id="turn-1-reasoning"[^>]*>', chat).group(0)
    assert 'aria-label="Internal reasoning"' in details and " open" not in details and "hidden" not in details
    assert "Laying out the plan." in chat and "<strong>one step</strong>" in chat
    assert "add_todos" not in chat
    assert re.search(r'<li id="turn-1-step-1" class="reasoning-step">Laying out the plan.</li>', chat)
    assert 'id="turn-1-marker"' in chat and "Retry" not in chat
    # Not a submit button: the composer never submits natively (static/js/chat.js sends it).
    assert re.search(r'<button id="chat-send" type="button" class="btn btn-primary">Send</button>', chat)
    assert 'aria-label="Message"' in chat and 'ws-connect="/ws/threads/' in chat


async def test_a_stopped_turn_is_marked_stopped_after_reload(owner, thread, script, sockets, async_client):
    script(Reply(text="first second third fourth fifth", token_delay=0.15))
    socket = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="go")
    await frame_containing(socket, "second</div>")
    await registry.request_stop(thread=thread)
    await frames_until_turn_end(socket)

    [turn] = (await _context(thread, owner))["turns"]
    assert turn["marker_kind"] == "stopped" and "first second" in turn["answer_html"]
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert re.search(r'id="turn-1-marker" class="turn-marker is-stopped"[^>]*>\s*<span class="turn-marker-text">Stopped<', chat)
    assert "Retry" not in chat  # the person stopped it: nothing to retry


async def test_a_failed_turn_shows_its_error_after_reload(owner, thread, script, async_client):
    def broken(messages):
        raise RuntimeError("boom")

    script(broken)
    await run_turn(thread, "do it")
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert "do it" in chat
    assert re.search(
        r'id="turn-1-marker" class="turn-marker is-error" role="alert"[^>]*>\s*<span class="turn-marker-text">Something went wrong',
        chat,
    )
    assert 'aria-label="Retry turn 1"' in chat


async def test_a_page_loaded_mid_turn_shows_the_running_turn_and_stop(owner, thread, script, async_client):
    script(Reply(text="unused"))
    await database_sync_to_async(turn_begin)(thread=thread, user_message="still working on <this>")
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert "still working on &lt;this&gt;" in chat
    assert 'id="turn-1-answer-content"' in chat and 'id="turn-1-steps"' in chat
    assert re.search(r'<details id="turn-1-reasoning"[^>]* open', chat)
    assert 'data-state="running"' in chat and ">Stop</button>" in chat
    # One ellipsis: the text says "Working" and the stylesheet draws the dots.
    assert '<span class="typing">Working</span>' in chat and "Working…" not in chat
    assert re.search(r'<button id="chat-send"[^>]*disabled', chat)


async def test_user_text_is_escaped_and_the_model_selector_appears_with_several_models(owner, thread, script, async_client):
    script(Reply(text="<img src=x onerror=alert(1)> done"))
    await run_turn(thread, "<script>alert('x')</script>")
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert "<script>alert" not in chat and "&lt;script&gt;" in chat
    assert "<img" not in chat
    assert '<select id="chat-model" name="model" class="chat-model" aria-label="Model"' in chat
    assert '<option value="env:scripted-default" selected>scripted-default</option>' in chat


async def test_one_model_means_no_selector(owner, thread, model_settings, async_client):
    model_settings.HAICO_MODELS = ["scripted-default"]
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert 'name="model"' not in chat
    assert 'aria-label="Chat"' in chat


def test_the_chat_panel_partial_renders_without_turns(owner, thread, model_settings):
    from conversations.chat import chat_context as sync_context

    html = render_to_string("conversations/panels/chat.html#panel", sync_context(thread=thread, user=owner))
    assert 'id="panel-chat"' in html and 'role="region"' in html and 'aria-label="Chat"' in html
    assert 'id="chat-messages"' in html and 'data-state="idle"' in html


async def test_an_interrupted_turn_keeps_what_streamed_and_offers_retry_after_reload(owner, thread, script, async_client):
    from conversations.turns import outcome, slot

    script(Reply(text="unused"))
    await database_sync_to_async(turn_begin)(thread=thread, user_message="write the intro")
    await database_sync_to_async(slot.turns_save_answers)(answers={(thread.pk, 1): "The intro so **far**"})
    await database_sync_to_async(lambda: thread.turns.update(boot="earlier-boot"))()
    await database_sync_to_async(slot.turns_release_predecessor)()

    chat = _chat_panel(await _page(async_client, owner, thread))
    assert "The intro so <strong>far</strong>" in chat
    assert re.search(r'class="turn-marker is-interrupted" role="alert"', chat)
    assert outcome.INTERRUPTED_RESTART in chat and 'aria-label="Retry turn 1"' in chat
    assert 'data-state="idle"' in chat and not re.search(r'<button id="chat-send"[^>]*disabled', chat)


async def test_a_turn_whose_server_died_unnoticed_reads_as_interrupted(owner, thread, script, async_client):
    from datetime import timedelta

    from django.utils import timezone

    from conversations.turns.slot import STALE_TURN_AFTER

    script(Reply(text="unused"))
    await database_sync_to_async(turn_begin)(thread=thread, user_message="hello")
    stale = timezone.now() - STALE_TURN_AFTER - timedelta(seconds=1)
    await database_sync_to_async(TurnSlot.objects.filter(thread_id=thread.pk).update)(since=stale)
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert "Interrupted" in chat and ">Working<" not in chat and 'aria-label="Retry turn 1"' in chat


async def test_a_cut_off_answer_is_marked_cut_off_with_retry(owner, thread, script, async_client):
    script(Reply(text="The answer stops in the mid", finish_reason="length"))
    await run_turn(thread, "explain")
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert "The answer stops in the mid" in chat
    assert re.search(r'class="turn-marker is-cut-off" role="alert"', chat) and "Cut off" in chat
    assert 'aria-label="Retry turn 1"' in chat


async def test_a_turn_without_an_answer_says_so_in_its_bubble(owner, thread, script, async_client):
    script(Reply(text=""), Reply(text=""), Reply(text=""))
    await run_turn(thread, "anything?")
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert re.search(r'class="turn-marker is-notice" role="alert"', chat)
    assert "returned an empty reply 3 times" in chat and 'aria-label="Retry turn 1"' in chat


async def test_failed_and_skipped_steps_are_marked_in_the_trace(owner, thread, script, async_client):
    from workspace.services import preferences as preference_services

    await database_sync_to_async(preference_services.preference_add)(
        thread=thread, title="Locked rule", kind="hard", respect_lock=False
    )
    await database_sync_to_async(lambda: thread.preferences.update(locked=True))()
    await database_sync_to_async(preference_services.preference_add)(
        thread=thread, title="Open rule", kind="soft", respect_lock=False
    )
    script(
        Reply(
            tool_calls=[
                tool_call("chart_generator", "Drawing a chart with no data.", chart_type="bar", title="Empty", data=[]),
                tool_call("remove_preferences", "Removing the rule you asked me to drop.", indices=[1]),
                tool_call(
                    "update_preferences",
                    "Rewording both rules.",
                    updates=[{"index": 1, "title": "x"}, {"index": 2, "title": "y"}],
                ),
                tool_call("set_objective", "Writing down the goal.", text="Goal"),
            ]
        ),
        Reply(text="Done what I could."),
    )
    await run_turn(thread, "go")
    [turn] = (await _context(thread, owner))["turns"]
    assert [step.status for step in turn["steps"]] == ["failed", "failed", "skipped", "done"]
    chat = _chat_panel(await _page(async_client, owner, thread))
    assert re.search(
        r'<li id="turn-1-step-1" class="reasoning-step is-failed">Drawing a chart with no data. <span class="step-status">Failed</span>',
        chat,
    )
    assert re.search(
        r'<li id="turn-1-step-3" class="reasoning-step is-skipped">Rewording both rules. <span class="step-status">Skipped in part</span>',
        chat,
    )
    assert re.search(r'<li id="turn-1-step-4" class="reasoning-step">Writing down the goal.</li>', chat)


def test_the_workspace_page_reads_the_turn_slot_and_the_document_once_each(owner, thread, client):
    """The chat's controls and its turns share one reading of the running
    turn, and the document's review compares with the document the page
    read: a second read costs every page view a statement and may disagree
    with the first."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from workspace.services import document as document_services

    document_services.document_save(thread=thread, title="Report", content="A first paragraph.")
    turn_begin(thread=thread, user_message="Tidy the plan")  # a turn runs: its slot is taken
    client.force_login(owner)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/threads/{thread.pk}/workspace/")
    assert response.status_code == 200
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    assert sum('FROM "conversations_turnslot"' in sql for sql in reads) == 1
    assert sum('FROM "workspace_document"' in sql for sql in reads) == 1
    chat = _chat_panel(response.content.decode())
    assert "Tidy the plan" in chat and 'data-state="running"' in chat and ">Stop</button>" in chat
