"""The selection a message asked about (docs/adr/0019) is stored with its
turn and goes again with every rerun of it — Retry, Regenerate, Edit — and
with a message sent from a turn's preview ("Continue from here"), checked
again against the document the rerun starts from: if that text is no longer
there it is left out, and the person is told, as when it is sent."""

import json
import re

import pytest
from channels.db import database_sync_to_async

from conversations import archive, branching
from conversations.forms import SELECTION_DROPPED
from conversations.models import BranchLink, Turn
from conversations.turns import registry
from tests.conversations.helpers import frame_containing, frames_until_turn_end
from tests.support.fake_model import Reply
from workspace.models import Thread
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENT = "# Essay\n\nThe first paragraph stays.\n\nThe second paragraph is the one to tighten.\n"
TEXT = "The second paragraph is the one to tighten."
START = DOCUMENT.index(TEXT)
SELECTION = {"start": START, "end": START + len(TEXT), "text": TEXT}
ELEMENT = f'<selection start="{START}" end="{START + len(TEXT)}">{TEXT}</selection>'


@database_sync_to_async
def _write(thread, content):
    document_services.document_save(thread=thread, content=content)


def _send(message, **extra):
    return json.dumps({"message": message, **extra, "HEADERS": {"HX-Request": "true"}})


def _prompts(model) -> list[str]:
    """The system prompt of every model call, in order."""
    return [m.content for request in model.requests for m in request if m.type == "system"]


@database_sync_to_async
def _selections(thread):
    return list(Turn.objects.filter(thread=thread).order_by("index").values_list("index", "selection"))


def _unreachable(messages):
    raise ConnectionError("model server down")


async def _failed_turn_about_the_selection(thread, owner, script, sockets):
    model = script(_unreachable, Reply(text="Tightened."))
    await _write(thread, DOCUMENT)
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Make this shorter", selection=SELECTION))
    frames = await frames_until_turn_end(socket)
    assert 'aria-label="Retry turn 1"' in frames[-1]
    return model, socket


async def test_the_selection_is_stored_with_its_turn(owner, thread, script, sockets):
    script(Reply(text="ok"), Reply(text="ok again"))
    await _write(thread, DOCUMENT)
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Make this shorter", selection=SELECTION))
    await frames_until_turn_end(socket)
    await socket.send_to(text_data=_send("And in general?"))
    await frames_until_turn_end(socket)
    assert await _selections(thread) == [(1, SELECTION), (2, None)]


async def test_retry_sends_the_selection_again(owner, thread, script, sockets):
    model, socket = await _failed_turn_about_the_selection(thread, owner, script, sockets)
    await socket.send_to(text_data=json.dumps({"action": "retry", "turn": 1}))
    frames = await frames_until_turn_end(socket)
    assert "Tightened." in frames[-1] and "no longer in the document" not in "".join(frames)
    assert ELEMENT in _prompts(model)[-1]
    assert await _selections(thread) == [(1, SELECTION), (2, SELECTION)]


async def test_retry_after_the_passage_was_rewritten_goes_without_it_and_says_so(owner, thread, script, sockets):
    model, socket = await _failed_turn_about_the_selection(thread, owner, script, sockets)
    await _write(thread, DOCUMENT.replace(TEXT, "A shorter second paragraph, typed meanwhile."))
    await socket.send_to(text_data=json.dumps({"action": "retry", "turn": 1}))
    frames = await frames_until_turn_end(socket)
    assert "Tightened." in frames[-1]  # the message still went
    # Said under the message (the turn's end clears the chat's notices).
    assert _bubble_note("".join(frames), 2) == SELECTION_DROPPED
    assert "</selection>" not in _prompts(model)[-1]
    assert await _selections(thread) == [(1, SELECTION), (2, None)]


def _bubble_note(html: str, turn: int) -> str | None:
    """The note under turn `turn`'s message, as the person reads it."""
    bubble = re.search(rf'<article id="turn-{turn}".*?<div class="bubble bubble-user".*?</div>\s*</div>', html, flags=re.DOTALL)
    note = bubble and re.search(r'<p class="bubble-note muted">(.*?)</p>', bubble.group(0), flags=re.DOTALL)
    return note.group(1) if note else None


async def test_a_message_sent_without_its_selection_says_so_after_the_turn_after_a_reload_and_in_copies(
    owner, thread, script, sockets, async_client
):
    script(default=Reply(text="Answered."))
    await _write(thread, DOCUMENT.replace(TEXT, "Rewritten before the message was sent."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Make this shorter", selection=SELECTION))
    frames = await frames_until_turn_end(socket)
    assert _bubble_note("".join(frames), 1) == SELECTION_DROPPED
    await socket.send_to(text_data=_send("And this one goes as it is"))
    await frames_until_turn_end(socket)

    await async_client.aforce_login(owner)
    page = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    assert _bubble_note(page, 1) == SELECTION_DROPPED
    assert _bubble_note(page, 2) is None

    # A branch after turn 1 and the thread brought back from its archive keep it.
    await thread.arefresh_from_db()
    branch = await database_sync_to_async(branching.fork_thread)(source=thread, turn_index=1, user=owner)
    imported = await database_sync_to_async(
        lambda: archive.import_archive(raw=json.dumps(archive.thread_archive(thread)).encode(), owner=owner)
    )()
    for copy in (branch, imported):
        page = (await async_client.get(f"/threads/{copy.pk}/workspace/")).content.decode()
        assert _bubble_note(page, 1) == SELECTION_DROPPED, copy


async def _answered_turn_about_the_selection(thread, owner, script, sockets):
    model = script(Reply(text="First answer."), default=Reply(text="Again."))
    await _write(thread, DOCUMENT)
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Make this shorter", selection=SELECTION))
    await frames_until_turn_end(socket)
    # The person rewrites the passage after the turn: the rerun starts from the document as it was sent.
    await _write(thread, DOCUMENT.replace(TEXT, "Rewritten after turn one."))
    return model


async def _branch_of(source) -> Thread:
    link = await BranchLink.objects.select_related("thread").aget(parent=source)
    await registry.wait_for_turn(link.thread_id)
    return link.thread


@pytest.mark.parametrize("action, data", [("regenerate", {}), ("edit", {"message": "Make it a single sentence"})])
async def test_regenerate_and_edit_send_the_selection_in_the_branch(owner, thread, script, sockets, async_client, action, data):
    model = await _answered_turn_about_the_selection(thread, owner, script, sockets)
    await async_client.aforce_login(owner)
    response = await async_client.post(f"/threads/{thread.pk}/turns/1/{action}/", data, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "?note=" not in response.headers["HX-Redirect"]
    branch = await _branch_of(thread)
    assert ELEMENT in _prompts(model)[-1]
    assert await _selections(branch) == [(1, SELECTION)]


async def test_a_rerun_whose_selection_no_longer_matches_goes_without_it_and_the_branch_page_says_so(
    owner, thread, script, sockets, async_client
):
    model = await _answered_turn_about_the_selection(thread, owner, script, sockets)
    # A stored selection the branch's document does not have at those offsets.
    await Turn.objects.filter(thread=thread, index=1).aupdate(selection={**SELECTION, "start": 0, "end": len(TEXT)})
    await async_client.aforce_login(owner)
    response = await async_client.post(f"/threads/{thread.pk}/turns/1/regenerate/", headers={"HX-Request": "true"})
    url = response.headers["HX-Redirect"]
    assert url.endswith("?note=selection-dropped#turn-1")
    branch = await _branch_of(thread)
    assert "</selection>" not in _prompts(model)[-1]
    assert await _selections(branch) == [(1, None)]
    page = (await async_client.get(url.split("#")[0])).content.decode()
    notice = re.search(r'<div id="chat-notice"[^>]*>(.*?)</div>', page, flags=re.DOTALL)
    assert notice and notice.group(1) == SELECTION_DROPPED
    # Only known notes are shown, never text from the address.
    page = (await async_client.get(url.split("?")[0] + "?note=<b>hi</b>")).content.decode()
    assert re.search(r'<div id="chat-notice"[^>]*hidden[^>]*></div>', page)


def _continue(message, thread_id, turn, selection):
    return _send(message, continue_thread=str(thread_id), continue_turn=str(turn), selection=selection)


async def test_continue_from_here_sends_the_selection_checked_against_the_branch(owner, thread, script, sockets):
    model = script(Reply(text="One."), Reply(text="Two."), Reply(text="Branch one."), Reply(text="Branch two."))
    await _write(thread, DOCUMENT)
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("first"))
    await frames_until_turn_end(socket)
    await socket.send_to(text_data=_send("second"))
    await frames_until_turn_end(socket)

    # The document after turn 1 still has the passage there: it goes with the message.
    await socket.send_to(text_data=_continue("tighten this", thread.pk, 1, SELECTION))
    frames = await frame_containing(socket, 'data-live-patch="navigate"')
    assert re.search(r'data-url="/threads/[0-9a-f-]+/workspace/"', frames[-1])  # no note
    first = await _branch_of(thread)
    assert ELEMENT in _prompts(model)[-1]
    assert await _selections(first) == [(1, None), (2, SELECTION)]

    # A passage the person selected in the current document that the branch's does not have: left out, and said.
    await _write(thread, "New opening.\n\n" + DOCUMENT)
    moved = {"start": START + 14, "end": START + 14 + len(TEXT), "text": TEXT}
    await socket.send_to(text_data=_continue("and this", thread.pk, 1, moved))
    frames = await frame_containing(socket, 'data-live-patch="navigate"')
    assert re.search(r'data-url="/threads/[0-9a-f-]+/workspace/\?note=selection-dropped"', frames[-1])
    await registry.wait_for_turn((await BranchLink.objects.exclude(thread=first).aget(parent=thread)).thread_id)
    assert "</selection>" not in _prompts(model)[-1]
