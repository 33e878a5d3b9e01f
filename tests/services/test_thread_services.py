"""conversations.services and selectors: threads, the turn guard and counter,
feedback, moderation, and the ownership scoping every view relies on."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404
from django.utils import timezone

from conversations import selectors, services
from conversations.errors import TurnAlreadyRunning
from conversations.models import ActivityLogEntry, Feedback, ModerationAction
from conversations.turns import guard
from conversations.turns.guard import STALE_TURN_AFTER
from workspace import selectors as thread_selectors
from workspace.errors import InvalidInput, UserFacingError
from workspace.models import Thread, WorkspaceSnapshot
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db


def _fresh(thread):
    return Thread.objects.get(pk=thread.pk)


# --- threads -----------------------------------------------------------------------


def test_thread_create_defaults_and_cleans_the_title(owner):
    default = services.thread_create(owner=owner)
    named = services.thread_create(owner=owner, title="  Grant   proposal \n")
    assert _fresh(default).title == "New thread"
    assert _fresh(named).title == "Grant proposal"
    assert (named.turn_index, named.is_deleted, named.owner) == (0, False, owner)
    assert named.pk != default.pk


@pytest.mark.parametrize(
    "title, message",
    [("", "Title cannot be empty."), ("   ", "Title cannot be empty."), (None, "Title must be text."), ("x" * 201, "Title is too long")],
)
def test_thread_create_refuses_bad_titles(owner, title, message):
    with pytest.raises(InvalidInput) as exc:
        services.thread_create(owner=owner, title=title)
    assert exc.value.message.startswith(message)
    assert not Thread.objects.exists()


def test_thread_rename(thread):
    services.thread_rename(thread=thread, title=" Systematic  review ")
    assert _fresh(thread).title == "Systematic review"
    with pytest.raises(InvalidInput):
        services.thread_rename(thread=_fresh(thread), title="  ")
    assert _fresh(thread).title == "Systematic review"


def test_owner_soft_delete_hides_the_thread_without_a_moderation_record(thread, owner):
    services.thread_soft_delete(thread=thread)
    stored = _fresh(thread)
    assert stored.is_deleted and stored.deleted_at is not None
    assert not ModerationAction.objects.exists()
    assert thread_selectors.threads_for_user(user=owner) == []
    assert thread_selectors.thread_for_user(user=owner, thread_id=thread.pk) is None


def test_staff_soft_delete_and_restore_are_recorded(thread, owner, staff):
    services.thread_soft_delete(thread=thread, staff_user=staff)
    services.thread_restore(thread=_fresh(thread), staff_user=staff)
    stored = _fresh(thread)
    assert not stored.is_deleted and stored.deleted_at is None
    assert list(ModerationAction.objects.order_by("id").values_list("action", "staff_user")) == [
        (ModerationAction.Action.SOFT_DELETE, staff.pk),
        (ModerationAction.Action.RESTORE, staff.pk),
    ]
    assert thread_selectors.threads_for_user(user=owner) == [stored]


def test_moderation_record_and_activity_log(thread, staff):
    record = services.moderation_record(
        thread=thread, staff_user=staff, action=ModerationAction.Action.LOCK_PREFERENCE, detail="x" * 600
    )
    assert len(ModerationAction.objects.get(pk=record.pk).detail) == 500
    services.activity_log(thread=thread, message="first")
    services.activity_log(thread=thread, message="second", level=ActivityLogEntry.Level.ERROR, turn_index=2)
    entries = selectors.activity_for(thread=thread)
    assert [(e.message, e.level, e.turn_index) for e in entries] == [("second", "error", 2), ("first", "info", None)]
    assert len(selectors.activity_for(thread=thread, limit=1)) == 1


# --- ownership selectors -----------------------------------------------------------------


def test_threads_for_user_lists_own_live_threads_most_recent_first(owner, other_user):
    older = services.thread_create(owner=owner, title="Older")
    newer = services.thread_create(owner=owner, title="Newer")
    services.thread_create(owner=other_user, title="Theirs")
    gone = services.thread_create(owner=owner, title="Gone")
    services.thread_soft_delete(thread=gone)
    assert [t.title for t in thread_selectors.threads_for_user(user=owner)] == ["Newer", "Older"]
    # Work in the older thread makes it the most recent.
    plan_services.todo_add(thread=older, text="step")
    assert [t.pk for t in thread_selectors.threads_for_user(user=owner)] == [older.pk, newer.pk]


def test_thread_for_user_refuses_other_people_anonymous_and_deleted(thread, owner, other_user):
    assert thread_selectors.thread_for_user(user=owner, thread_id=thread.pk) == thread
    assert thread_selectors.thread_for_user(user=other_user, thread_id=thread.pk) is None
    assert thread_selectors.thread_for_user(user=AnonymousUser(), thread_id=thread.pk) is None
    with pytest.raises(Http404):
        thread_selectors.get_thread_for_user_or_404(user=other_user, thread_id=thread.pk)
    assert thread_selectors.get_thread_for_user_or_404(user=owner, thread_id=thread.pk) == thread


# --- turns -------------------------------------------------------------------------------


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


# --- feedback -----------------------------------------------------------------------------


@pytest.fixture
def two_turns(thread):
    for n in (1, 2):
        guard.turn_begin(thread=thread, user_message=f"message {n}")
        guard.turn_finish(thread=thread, turn_index=n)
    return _fresh(thread)


def test_feedback_add_stores_a_rating_for_a_turn(two_turns, owner):
    feedback = services.feedback_add(thread=two_turns, user=owner, turn_index=2, rating=5, aspect="accuracy", comment="spot on")
    stored = Feedback.objects.get(pk=feedback.pk)
    assert (stored.turn_index, stored.rating, stored.scope, stored.aspect, stored.comment) == (2, 5, "turn", "accuracy", "spot on")
    services.feedback_add(thread=two_turns, user=owner, turn_index=1, rating=-1, scope="thread")
    assert Feedback.objects.count() == 2


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"turn_index": 3}, "Turn 3 does not exist in this thread."),
        ({"turn_index": 0}, "Turn 0 does not exist in this thread."),
        ({"turn_index": "1"}, "Turn '1' does not exist in this thread."),
        ({"rating": 6}, "Rating must be a whole number from -1 to 5."),
        ({"rating": -2}, "Rating must be a whole number from -1 to 5."),
        ({"rating": 2.5}, "Rating must be a whole number from -1 to 5."),
        ({"rating": True}, "Rating must be a whole number from -1 to 5."),
        ({"scope": "galaxy"}, "Scope must be one of turn, thread."),
        ({"aspect": ""}, "Aspect cannot be empty."),
        ({"aspect": 7}, "Aspect must be text."),
        ({"comment": None}, "Comment must be text."),
    ],
)
def test_feedback_add_refuses_bad_input(two_turns, owner, kwargs, message):
    args = {"thread": two_turns, "user": owner, "turn_index": 1, "rating": 3} | kwargs
    with pytest.raises(InvalidInput) as exc:
        services.feedback_add(**args)
    assert exc.value.message.startswith(message)
    assert not Feedback.objects.exists()


def test_thread_title_with_a_nul_character_is_refused(thread):
    with pytest.raises(InvalidInput, match="cannot contain NUL"):
        services.thread_rename(thread=thread, title="bad\x00title")
    assert _fresh(thread).title == "Lit review"


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
