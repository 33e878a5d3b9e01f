"""A message its page sends again with the same id, after a connection that
dropped as it went (docs/adr/0126): stored once, the turn it began acked
again, nothing else done a second time."""

import json
import re

import pytest
from channels.db import database_sync_to_async

from conversations.models import BranchLink, Turn
from conversations.sharing import thread_member_add
from conversations.turns import registry
from tests.support.fake_model import Reply
from workspace.models import Thread

from .helpers import frame_containing, frames_until_turn_end

pytestmark = pytest.mark.django_db(transaction=True)

FIRST_ID = "7f3c9a1e5b2d4c6f8a0b1c2d3e4f5a6b"
OTHER_ID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"


def _send(message, client_message_id=None, **fields):
    body = {"message": message, "HEADERS": {"HX-Request": "true"}, **fields}
    if client_message_id is not None:
        body["client_message_id"] = client_message_id
    return json.dumps(body)


@database_sync_to_async
def _turns(thread):
    return list(Turn.objects.filter(thread=thread).order_by("index").values_list("index", "user_message", "status"))


def _acked(frames) -> list[str]:
    return re.findall(r'id="chat-ack" data-turn="(\d+)"', "".join(frames))


async def test_the_same_message_sent_again_after_its_turn_is_acked_again_and_runs_once(owner, thread, script, sockets):
    script(Reply(text="Answered once."))
    first = await sockets(thread.pk, owner)
    await first.send_to(text_data=_send("Summarise the draft", FIRST_ID))
    assert _acked(await frames_until_turn_end(first)) == ["1"]

    # The page's connection dropped before the ack reached it: a new socket, the same message and id.
    again = await sockets(thread.pk, owner)
    await again.send_to(text_data=_send("Summarise the draft", FIRST_ID))
    frames = await frame_containing(again, 'id="chat-ack"')
    assert _acked(frames) == ["1"]
    await again.receive_nothing(timeout=0.5)
    assert await _turns(thread) == [(1, "Summarise the draft", Turn.Status.COMPLETE)]


async def test_the_same_message_sent_again_while_its_turn_runs_is_acked_not_refused_as_a_second_turn(
    owner, thread, script, sockets, model_settings
):
    script(Reply(text="A slow answer."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Draft the intro", FIRST_ID))
    await frame_containing(socket, 'id="chat-ack"')
    # Still running (or just ended): either way the same id is this turn, never "a turn is running".
    await socket.send_to(text_data=_send("Draft the intro", FIRST_ID))
    frames = await frame_containing(socket, 'id="chat-ack" data-turn="1"')
    assert "still working" not in "".join(frames)
    await registry.wait_for_turn(thread.pk)
    assert [row[:2] for row in await _turns(thread)] == [(1, "Draft the intro")]


async def test_a_new_id_is_a_new_message_and_a_message_without_one_goes_as_before(owner, thread, script, sockets):
    script(Reply(text="One."), Reply(text="Two."), Reply(text="Three."))
    socket = await sockets(thread.pk, owner)
    for message, client_id in (("Same words", FIRST_ID), ("Same words", OTHER_ID), ("Same words", None)):
        await socket.send_to(text_data=_send(message, client_id))
        await frames_until_turn_end(socket)
    assert [row[:2] for row in await _turns(thread)] == [(1, "Same words"), (2, "Same words"), (3, "Same words")]


async def test_a_stored_message_sent_again_changes_nothing_else_the_mode_it_went_in_included(owner, thread, script, sockets):
    script(Reply(text="Planned."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Plan the week", FIRST_ID, mode="plan"))
    await frames_until_turn_end(socket)
    # Meanwhile the person (another tab) went back to Execute.
    await database_sync_to_async(Thread.objects.filter(pk=thread.pk).update)(mode=Thread.Mode.EXECUTE)

    await socket.send_to(text_data=_send("Plan the week", FIRST_ID, mode="plan"))
    await frame_containing(socket, 'id="chat-ack" data-turn="1"')
    refreshed = await database_sync_to_async(Thread.objects.get)(pk=thread.pk)
    assert refreshed.mode == Thread.Mode.EXECUTE and refreshed.turn_index == 1


@pytest.fixture
def editor(django_user_model, owner, thread):
    person = django_user_model.objects.create_user(username="ed", password="pw-for-ed-1234")
    thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    return person


async def test_another_persons_message_with_the_same_id_is_their_own(owner, editor, thread, script, sockets):
    script(Reply(text="For the owner."), Reply(text="For the editor."))
    mine = await sockets(thread.pk, owner)
    await mine.send_to(text_data=_send("Owner's question", FIRST_ID))
    await frames_until_turn_end(mine)
    theirs = await sockets(thread.pk, editor)
    await theirs.send_to(text_data=_send("Editor's question", FIRST_ID))
    assert _acked(await frame_containing(theirs, 'id="chat-ack"'))[-1] == "2"
    await registry.wait_for_turn(thread.pk)
    assert [row[:2] for row in await _turns(thread)] == [(1, "Owner's question"), (2, "Editor's question")]


@pytest.mark.parametrize("bad", ["short", "x" * 65, "has spaces in it here!", 12345678901234567890, ["a"], {"id": 1}])
async def test_an_unreadable_message_id_is_refused_with_a_clear_notice_and_nothing_is_stored(owner, thread, script, sockets, bad):
    script(Reply(text="never"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Keep me", bad))
    notice = await socket.receive_from(timeout=5)
    assert 'id="chat-notice"' in notice and "That message could not be read" in notice
    assert await _turns(thread) == []


async def test_a_continue_from_here_sent_again_goes_to_the_branch_it_made_and_makes_no_second(owner, thread, script, sockets):
    script(Reply(text="First."), Reply(text="In the branch."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("first"))
    await frames_until_turn_end(socket)
    threads_before = await database_sync_to_async(Thread.objects.count)()

    branch_urls = []
    for _ in range(2):
        await socket.send_to(text_data=_send("a new direction", FIRST_ID, continue_thread=str(thread.pk), continue_turn="1"))
        frames = await frame_containing(socket, 'data-live-patch="navigate"')
        branch_urls.append(re.search(r'data-url="(/threads/[0-9a-f-]+/workspace/)"', frames[-1]).group(1))
        assert _acked(frames)[-1] == "2"
    assert branch_urls[0] == branch_urls[1]
    assert await database_sync_to_async(Thread.objects.count)() == threads_before + 1
    assert await database_sync_to_async(BranchLink.objects.count)() == 1


def test_the_claim_itself_stores_a_message_once_when_both_copies_pass_the_first_look(owner, thread):
    """Two servers can each take one copy before either is stored (the old
    socket's copy late, the new socket's at once): the claim looks again
    under the thread's lock, so the second is the first's turn, not a
    "turn already running" refusal and not a second turn."""
    from conversations.errors import MessageAlreadyStored
    from conversations.turns import slot

    slot.turn_claim(thread=thread, user_message="Once", person=owner, client_message_id=FIRST_ID)
    with pytest.raises(MessageAlreadyStored) as stored:
        slot.turn_claim(thread=thread, user_message="Once", person=owner, client_message_id=FIRST_ID)
    assert stored.value.turn_index == 1
    assert Turn.objects.filter(thread=thread).count() == 1


async def test_two_copies_of_a_continue_from_here_at_once_make_one_branch_and_run_once(owner, thread, script, sockets):
    """The page's connection drops as a "Continue from here" message goes:
    the old socket's copy is handled late and the new socket's at once (one
    server, or two). Each copy makes its own branch before storing; the
    database stores one turn per person and id, the other branch is
    discarded, and both sockets are sent to the one branch."""
    script(Reply(text="First."), Reply(text="In the branch."), Reply(text="In a second branch."))
    first = await sockets(thread.pk, owner)
    await first.send_to(text_data=_send("first"))
    await frames_until_turn_end(first)
    threads_before = await database_sync_to_async(Thread.objects.count)()

    dropped = await sockets(thread.pk, owner)
    reconnected = await sockets(thread.pk, owner)
    copy = _send("a new direction", FIRST_ID, continue_thread=str(thread.pk), continue_turn="1")
    await dropped.send_to(text_data=copy)
    await reconnected.send_to(text_data=copy)
    went = []
    for socket in (dropped, reconnected):
        frames = await frame_containing(socket, 'data-live-patch="navigate"')
        went.append(re.search(r'data-url="/threads/([0-9a-f-]+)/workspace/"', frames[-1]).group(1))
    assert went[0] == went[1]
    await registry.wait_for_turn(went[0])

    runs = await database_sync_to_async(list)(
        Turn.objects.filter(client_message_id=FIRST_ID).values_list("thread_id", "index", "user_message")
    )
    assert [(str(t), i, m) for t, i, m in runs] == [(went[0], 2, "a new direction")]
    assert await database_sync_to_async(Thread.objects.filter(is_deleted=False).count)() == threads_before + 1
    assert await database_sync_to_async(BranchLink.objects.filter(status=BranchLink.Status.ACTIVE).count)() == 1


async def test_two_copies_of_a_message_at_once_run_once(owner, thread, script, sockets):
    script(Reply(text="Once."), Reply(text="Twice."))
    dropped = await sockets(thread.pk, owner)
    reconnected = await sockets(thread.pk, owner)
    copy = _send("Summarise the draft", FIRST_ID)
    await dropped.send_to(text_data=copy)
    await reconnected.send_to(text_data=copy)
    for socket in (dropped, reconnected):
        await frame_containing(socket, 'id="chat-ack" data-turn="1"')
    await registry.wait_for_turn(thread.pk)
    assert [row[:2] for row in await _turns(thread)] == [(1, "Summarise the draft")]


async def test_a_message_with_its_id_while_the_database_is_away_is_said_to_go_again_by_itself(
    owner, thread, script, sockets, monkeypatch
):
    """Sent again after a dropped connection (stored, its ack lost) just as
    the database goes: the server cannot tell, so it does not say "not sent"
    (the person would write it anew: a second turn); it says the message
    goes again by itself, marked for the page to do so."""
    from html import escape

    import psycopg

    from conversations import consumers

    from .test_outages import _as_django_raises_it

    script(Reply(text="Ran once."))
    first = await sockets(thread.pk, owner)
    await first.send_to(text_data=_send("Summarise the draft", FIRST_ID))
    await frames_until_turn_end(first)
    again = await sockets(thread.pk, owner)

    def _database_away(*args, **kwargs):
        raise _as_django_raises_it(psycopg.OperationalError("connection failed: Connection refused"))

    monkeypatch.setattr(consumers, "session_signs_in", _database_away)
    await again.send_to(text_data=_send("Summarise the draft", FIRST_ID))
    # (The socket may first be told how the last turn ended: an emptied notice.)
    said = (await frame_containing(again, "database did not answer"))[-1]
    assert escape("your message goes again by itself once it does, and runs only once.") in said
    assert "data-again" in said and "not sent" not in said
    # A message from a page without ids is told, as before, to send it again.
    await again.send_to(text_data=_send("An old page's message"))
    said = (await frame_containing(again, "database did not answer"))[-1]
    assert "send it again in a moment" in said and "data-again" not in said
