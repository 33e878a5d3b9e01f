"""A long chat shows its latest turns and fetches older ones a page at a
time (GET /threads/<id>/chat/before/<turn>/, docs/adr/0095): the page of a
thread with hundreds of turns stays small, and no turn is out of reach."""

import re

import pytest

from conversations import chat
from conversations.turns import slot

pytestmark = pytest.mark.django_db

# Pages of 4 turns here (the real size is tested once, below): the same code, fewer turns to make.
CHAT_TURNS_SHOWN = 4
TURNS = CHAT_TURNS_SHOWN * 2 + 3


def _make_turns(thread, count: int):
    for n in range(1, count + 1):
        slot.turn_begin(thread=thread, user_message=f"message {n}")
        slot.turn_finish(thread=thread, turn_index=n, answer=f"answer {n}")
    thread.refresh_from_db()
    return thread


@pytest.fixture
def long_chat(thread, monkeypatch):
    monkeypatch.setattr(chat, "CHAT_TURNS_SHOWN", CHAT_TURNS_SHOWN)
    return _make_turns(thread, TURNS)


def test_a_page_shows_at_most_forty_turns(owner_client, thread):
    _make_turns(thread, chat.CHAT_TURNS_SHOWN + 1)
    html = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()
    assert chat.CHAT_TURNS_SHOWN == 40
    assert _turns(html) == list(range(2, 42))
    assert "Show 1 earlier turn<" in html and "1 earlier turn not shown" in html


def _turns(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<article id="turn-(\d+)"', html)]


def _earlier(client, thread, before: int, **query):
    return client.get(f"/threads/{thread.pk}/chat/before/{before}/", query)


def test_the_page_shows_the_latest_turns_and_a_control_for_the_earlier_ones(owner_client, long_chat):
    html = owner_client.get(f"/threads/{long_chat.pk}/workspace/").content.decode()
    first = TURNS - CHAT_TURNS_SHOWN + 1
    assert _turns(html) == list(range(first, TURNS + 1))
    assert f"Show {CHAT_TURNS_SHOWN} earlier turns" in html
    assert f"{first - 1} earlier turns not shown" in html
    assert f'hx-get="/threads/{long_chat.pk}/chat/before/{first}/"' in html


def test_each_page_of_earlier_turns_brings_the_next_control_until_the_first_turn(owner_client, long_chat):
    before, seen = TURNS - CHAT_TURNS_SHOWN + 1, []
    while True:
        response = _earlier(owner_client, long_chat, before)
        assert response.status_code == 200
        html = response.content.decode()
        turns = _turns(html)
        assert turns and turns[-1] == before - 1 and len(turns) <= CHAT_TURNS_SHOWN
        seen = turns + seen
        found = re.search(r'hx-get="/threads/[^"]+/chat/before/(\d+)/"', html)
        if not found:
            break
        assert html.index('id="chat-earlier"') < html.index("<article")  # the control stays on top
        before = int(found.group(1))
        assert before == turns[0]
    # Every turn once, in order, up to the page's first.
    assert seen == list(range(1, TURNS - CHAT_TURNS_SHOWN + 1))
    assert "message 1" in html and "answer 1" in html


def test_through_brings_every_turn_from_the_one_a_link_points_at(owner_client, long_chat):
    html = _earlier(owner_client, long_chat, TURNS - CHAT_TURNS_SHOWN + 1, through=3).content.decode()
    assert _turns(html) == list(range(3, TURNS - CHAT_TURNS_SHOWN + 1))
    assert "Show 2 earlier turns" in html and "2 earlier turns not shown" in html


@pytest.mark.parametrize("through", ["0", "-1", "x", "", "99999", "٣"])
def test_a_through_that_is_not_an_earlier_turn_is_refused_with_a_reason(owner_client, long_chat, through):
    response = _earlier(owner_client, long_chat, 6, through=through)
    assert response.status_code == 400
    assert b"through" in response.content


def test_a_short_chat_has_no_control_and_nothing_before_its_first_turn(owner_client, thread):
    slot.turn_begin(thread=thread, user_message="only")
    slot.turn_finish(thread=thread, turn_index=1, answer="one")
    html = owner_client.get(f"/threads/{thread.pk}/workspace/").content.decode()
    assert _turns(html) == [1] and 'id="chat-earlier"' not in html
    assert _earlier(owner_client, thread, 1).content == b""


def test_another_user_gets_not_found(other_client, long_chat):
    response = _earlier(other_client, long_chat, 6)
    assert response.status_code == 404
    assert b"message 1" not in response.content


def test_a_page_that_missed_turns_gets_every_one_it_missed_not_only_the_latest_page(owner_client, long_chat):
    html = owner_client.get(f"/threads/{long_chat.pk}/chat/from/0/").content.decode()
    assert _turns(html) == list(range(1, TURNS + 1))


def test_a_turn_past_the_latest_is_not_found(owner_client, long_chat):
    assert _earlier(owner_client, long_chat, TURNS + 1).status_code == 200  # one past the latest: every turn
    assert _earlier(owner_client, long_chat, TURNS + 2).status_code == 404
