"""conversations.turns.guard: the turn counter and its claim (begin, finish,
stale claims, keepalive), the first message's title, and cancel requests."""

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations import services
from conversations.errors import TurnAlreadyRunning
from conversations.turns import guard
from conversations.turns.guard import STALE_TURN_AFTER
from workspace.errors import UserFacingError
from workspace.models import Thread, WorkspaceSnapshot
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db


def _fresh(thread):
    return Thread.objects.get(pk=thread.pk)


def test_turn_begin_bumps_the_counter_and_snapshots_the_workspace_first(thread):
    objective_services.objective_set(thread=thread, text="Find gaps")
    preferences_services.preference_add(thread=thread, title="Cite", kind="hard", respect_lock=False)
    plan_services.todo_add(thread=thread, text="Search")
    document_services.document_save(thread=thread, title="Notes", content="v1")

    turn, snapshot = guard.turn_begin(thread=thread, user_message="Please start")
    assert turn == 1 and thread.turn_index == 1
    stored = _fresh(thread)
    assert (stored.turn_index, stored.running_turn_index) == (1, 1)
    assert stored.running_since is not None and not stored.cancel_requested

    # What the agent does during the turn never reaches the turn's snapshot.
    objective_services.objective_set(thread=thread, text="Changed by the agent")
    document_services.document_save(thread=thread, content="v2")
    plan_services.todo_add(thread=thread, text="Added by the agent")
    snapshot = WorkspaceSnapshot.objects.get(thread=thread, turn_index=1)
    assert snapshot.user_message == "Please start"
    assert snapshot.objective_text == "Find gaps"
    assert snapshot.document_content == "v1"
    assert [t["text"] for t in snapshot.todos_json] == ["Search"]
    assert [p["title"] for p in snapshot.preferences_json] == ["Cite"]

    guard.turn_finish(thread=thread, turn_index=turn)
    turn2, _ = guard.turn_begin(thread=thread, user_message="Next")
    assert turn2 == 2
    assert WorkspaceSnapshot.objects.get(thread=thread, turn_index=2).objective_text == "Changed by the agent"


def test_turn_begin_titles_a_new_thread_from_its_first_message(owner):
    thread = services.thread_create(owner=owner)
    guard.turn_begin(thread=thread, user_message="  Help me   plan a\nliterature review ")
    assert _fresh(thread).title == "Help me plan a literature review"
    guard.turn_finish(thread=thread, turn_index=1)
    guard.turn_begin(thread=thread, user_message="Something else entirely")
    assert _fresh(thread).title == "Help me plan a literature review"


def test_turn_begin_shortens_a_long_first_message_at_a_word(owner):
    thread = services.thread_create(owner=owner)
    message = "word " * 40
    guard.turn_begin(thread=thread, user_message=message)
    title = _fresh(thread).title
    assert title.endswith("…") and len(title) <= 60
    assert title[:-1].split() == ["word"] * len(title[:-1].split())


def test_turn_begin_keeps_a_title_the_person_chose(thread):
    guard.turn_begin(thread=thread, user_message="Hello there")
    assert _fresh(thread).title == "Lit review"


def test_a_second_concurrent_turn_is_refused_and_changes_nothing(thread):
    guard.turn_begin(thread=thread, user_message="first")
    with pytest.raises(TurnAlreadyRunning) as exc:
        guard.turn_begin(thread=_fresh(thread), user_message="second")
    assert isinstance(exc.value, UserFacingError)
    assert "already running" in exc.value.message
    stored = _fresh(thread)
    assert (stored.turn_index, stored.running_turn_index) == (1, 1)
    assert list(WorkspaceSnapshot.objects.filter(thread=thread).values_list("user_message", flat=True)) == ["first"]


def test_a_stale_running_turn_lets_the_next_message_through(thread):
    guard.turn_begin(thread=thread, user_message="server died during this one")
    Thread.objects.filter(pk=thread.pk).update(running_since=timezone.now() - STALE_TURN_AFTER - timedelta(seconds=1))
    turn, snapshot = guard.turn_begin(thread=_fresh(thread), user_message="try again")
    assert turn == 2
    assert _fresh(thread).running_turn_index == 2
    assert snapshot.user_message == "try again"


def test_a_recent_running_turn_is_not_stale(thread):
    guard.turn_begin(thread=thread, user_message="working")
    Thread.objects.filter(pk=thread.pk).update(running_since=timezone.now() - STALE_TURN_AFTER + timedelta(minutes=1))
    with pytest.raises(TurnAlreadyRunning):
        guard.turn_begin(thread=_fresh(thread), user_message="too soon")


def test_turn_finish_releases_only_its_own_turn(thread):
    guard.turn_begin(thread=thread, user_message="one")
    Thread.objects.filter(pk=thread.pk).update(running_since=timezone.now() - timedelta(hours=1))
    guard.turn_begin(thread=_fresh(thread), user_message="two")
    # The abandoned turn 1 finishing late must not release turn 2's claim.
    guard.turn_finish(thread=thread, turn_index=1)
    assert _fresh(thread).running_turn_index == 2
    guard.turn_request_cancel(thread=thread)
    guard.turn_finish(thread=thread, turn_index=2)
    stored = _fresh(thread)
    assert (stored.running_turn_index, stored.running_since, stored.cancel_requested) == (None, None, False)


def test_turn_request_cancel_only_when_a_turn_runs(thread):
    assert guard.turn_request_cancel(thread=thread) is False
    assert not _fresh(thread).cancel_requested
    guard.turn_begin(thread=thread, user_message="go")
    assert guard.turn_request_cancel(thread=thread) is True
    assert _fresh(thread).cancel_requested
    guard.turn_finish(thread=thread, turn_index=1)
    guard.turn_begin(thread=thread, user_message="go again")
    assert not _fresh(thread).cancel_requested


def test_turns_keepalive_refreshes_only_claims_that_are_still_those_turns(thread, owner):
    other = services.thread_create(owner=owner, title="Other")
    turn_index, _ = guard.turn_begin(thread=thread, user_message="hello")
    guard.turn_begin(thread=other, user_message="hi")
    old = timezone.now() - timedelta(seconds=60)
    Thread.objects.update(running_since=old)
    # `other` has moved on to a later turn elsewhere: its claim is not ours.
    assert guard.turns_keepalive(turns={thread.pk: turn_index, other.pk: 7}) == 1
    assert Thread.objects.get(pk=thread.pk).running_since > old
    assert Thread.objects.get(pk=other.pk).running_since == old
    guard.turn_finish(thread=thread, turn_index=turn_index)
    assert guard.turns_keepalive(turns={thread.pk: turn_index}) == 0
    assert Thread.objects.get(pk=thread.pk).running_since is None
    assert guard.turns_keepalive(turns={}) == 0


def test_cancel_requested_among_reads_every_flag_in_one_go(thread, owner):
    other = services.thread_create(owner=owner, title="Other")
    guard.turn_begin(thread=thread, user_message="hello")
    guard.turn_begin(thread=other, user_message="hi")
    assert guard.cancel_requested_among([thread.pk, other.pk]) == set()
    guard.turn_request_cancel(thread=other)
    assert guard.cancel_requested_among([thread.pk, other.pk]) == {other.pk}
    assert guard.cancel_requested_among([]) == set()
