"""conversations.services (and selectors): threads, feedback, moderation and
the activity log."""

import pytest

from conversations import selectors, services
from conversations.models import ActivityLogEntry, Feedback, ModerationAction
from conversations.turns import guard
from workspace import selectors as thread_selectors
from workspace.errors import InvalidInput
from workspace.models import Thread

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


def test_thread_title_with_a_nul_character_is_refused(thread):
    with pytest.raises(InvalidInput, match="cannot contain NUL"):
        services.thread_rename(thread=thread, title="bad\x00title")
    assert _fresh(thread).title == "Lit review"


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
