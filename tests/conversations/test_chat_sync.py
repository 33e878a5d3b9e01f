"""The chat as the server has it, for a page that may have missed pushes
(GET /threads/<id>/chat/from/<turn>/, docs/adr/0043), and a Stop that finds
no turn running telling the page how the latest turn really ended."""

import json
import re

import pytest
from channels.db import database_sync_to_async

from conversations.turns import slot
from tests.support.fake_model import Reply
from tests.support.web import HTMX

pytestmark = pytest.mark.django_db


def _url(thread, turn):
    return f"/threads/{thread.pk}/chat/from/{turn}/"


@pytest.fixture
def three_turns(thread):
    for n in (1, 2, 3):
        slot.turn_begin(thread=thread, user_message=f"message {n}")
        slot.turn_finish(thread=thread, turn_index=n, answer=f"answer {n}")
    thread.refresh_from_db()
    return thread


def _oob_ids(html: str) -> list[str]:
    return re.findall(r'<(?:article|div|span|button) id="([^"]+)"[^>]*hx-swap-oob="([^"]+)"', html)


def test_the_turn_the_page_shows_last_is_put_in_place_and_later_ones_appended(owner_client, three_turns):
    response = owner_client.get(_url(three_turns, 2), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    # Turn 2 replaces the page's turn 2, turn 3 is appended; turn 1 is not sent.
    assert re.search(r'<article id="turn-2"[^>]*hx-swap-oob="true"', html)
    assert '<div id="chat-messages" hx-swap-oob="beforeend">' in html
    assert re.search(r'<article id="turn-3"(?![^>]*hx-swap-oob)', html)
    assert "message 1" not in html and "answer 2" in html and "answer 3" in html
    # No out-of-band element nested in another: only the three top-level swaps and the controls.
    assert [i for i, _ in _oob_ids(html)] == ["turn-2", "chat-messages", "chat-status", "chat-send"]
    assert 'data-state="idle"' in html and "disabled" not in html.split('id="chat-send"')[1].split(">")[0]


def test_a_turn_still_running_is_left_as_the_page_streams_it_and_the_controls_say_so(owner_client, three_turns):
    slot.turn_begin(thread=three_turns, user_message="message 4")
    html = owner_client.get(_url(three_turns, 4)).content.decode()
    assert 'id="turn-4"' not in html
    assert 'data-state="running"' in html and "The assistant is working" in html
    # A page that never got turn 4 gets it appended, running.
    html = owner_client.get(_url(three_turns, 3)).content.decode()
    assert re.search(r'<article id="turn-4" class="turn is-running"', html)


def test_a_page_with_no_turn_yet_gets_every_turn(owner_client, three_turns):
    html = owner_client.get(_url(three_turns, 0)).content.decode()
    assert html.count('<div id="chat-messages" hx-swap-oob="beforeend">') == 3


def test_a_turn_the_thread_does_not_have_is_404_and_only_get_is_allowed(owner_client, three_turns):
    assert owner_client.get(_url(three_turns, 4)).status_code == 404
    assert owner_client.post(_url(three_turns, 1)).status_code == 405


def test_someone_elses_thread_is_404(other_client, three_turns):
    response = other_client.get(_url(three_turns, 1))
    assert response.status_code == 404 and "answer 1" not in response.content.decode()


@pytest.mark.django_db(transaction=True)
async def test_stop_when_no_turn_runs_shows_how_the_latest_turn_ended_and_idle_controls(owner, thread, script, sockets):
    script(Reply(text="The whole answer."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=json.dumps({"message": "hi", "HEADERS": {}}))
    while 'data-state="idle"' not in await socket.receive_from(timeout=10):
        pass
    assert await database_sync_to_async(lambda: slot.running_turn(type(thread).objects.get(pk=thread.pk)))() is None
    # A page that missed the turn's end still shows it running; its Stop:
    await socket.send_to(text_data=json.dumps({"action": "stop", "HEADERS": {}}))
    html = await socket.receive_from(timeout=3)
    assert "No turn is running." in html
    assert "The whole answer." in html and 'data-state="idle"' in html
