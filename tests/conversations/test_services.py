"""conversations.services (and selectors): threads, feedback, moderation and
the activity log."""

import asyncio

import pytest
from asgiref.sync import sync_to_async

from conversations import selectors, services
from conversations.models import ActivityLogEntry, Feedback, ModerationAction, Turn
from conversations.turns import registry, slot
from tests.support.fake_model import Reply
from workspace import selectors as thread_selectors
from workspace.errors import InvalidInput
from workspace.models import Thread
from workspace.selectors import Access
from workspace.services import artifacts as artifact_services

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
    [
        ("", "Title cannot be empty."),
        ("   ", "Title cannot be empty."),
        (None, "Title must be text."),
        ("x" * 201, "Title is too long"),
    ],
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
    assert thread_selectors.thread_for_user(user=owner, thread_id=thread.pk, level=Access.VIEW) is None


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
        slot.turn_begin(thread=thread, user_message=f"message {n}")
        slot.turn_finish(thread=thread, turn_index=n)
    return _fresh(thread)


def test_feedback_leave_stores_a_rating_for_a_turn(two_turns, owner):
    feedback = services.feedback_leave(
        thread=two_turns, user=owner, turn_index=2, rating=5, aspect="correctness", comment="spot on"
    )
    stored = Feedback.objects.get(pk=feedback.pk)
    assert (stored.turn_index, stored.rating, stored.scope, stored.aspect, stored.comment) == (
        2,
        5,
        "turn",
        "correctness",
        "spot on",
    )
    services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=1, scope="plan", aspect="tone")
    assert Feedback.objects.count() == 2


def test_feedback_left_again_on_the_same_subject_changes_the_entry(two_turns, owner):
    first = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=2, aspect="tone")
    again = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=4, aspect="tone", comment="better")
    other_aspect = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=3, aspect="correctness")
    assert again.pk == first.pk != other_aspect.pk
    assert list(Feedback.objects.order_by("pk").values_list("aspect", "rating", "comment")) == [
        ("tone", 4, "better"),
        ("correctness", 3, ""),
    ]


def test_feedback_on_an_artifact_names_it_and_keeps_its_title_when_it_goes(two_turns, owner):
    table = artifact_services.artifact_create(
        thread=two_turns, artifact_type="data_table", title="Budget", payload={"columns": ["A"], "rows": []}, turn_index=1
    )
    feedback = services.feedback_leave(thread=two_turns, user=owner, turn_index=2, rating=4, scope="artifact", artifact=table)
    assert (feedback.artifact, feedback.artifact_title, feedback.scope_label) == (table, "Budget", "Artifact “Budget”")
    table.delete()
    feedback.refresh_from_db()
    assert (feedback.artifact, feedback.scope_label) == (None, "Artifact “Budget”")


def test_feedback_on_another_scope_drops_the_artifact(two_turns, owner):
    table = artifact_services.artifact_create(
        thread=two_turns, artifact_type="data_table", title="Budget", payload={"columns": ["A"], "rows": []}, turn_index=1
    )
    feedback = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=4, scope="document", artifact=table)
    assert (feedback.artifact, feedback.artifact_title) == (None, "")


def test_feedback_refuses_an_artifact_of_another_thread_or_a_later_turn(two_turns, owner, other_user):
    theirs = services.thread_create(owner=other_user)
    foreign = artifact_services.artifact_create(
        thread=theirs, artifact_type="data_table", title="X", payload={"columns": ["A"], "rows": []}, turn_index=0
    )
    later = artifact_services.artifact_create(
        thread=two_turns, artifact_type="data_table", title="Y", payload={"columns": ["A"], "rows": []}, turn_index=2
    )
    for artifact, turn in ((foreign, 2), (later, 1)):
        with pytest.raises(InvalidInput) as exc:
            services.feedback_leave(thread=two_turns, user=owner, turn_index=turn, rating=3, scope="artifact", artifact=artifact)
        assert exc.value.message == f"That artifact is not part of this thread at turn {turn}."
    with pytest.raises(InvalidInput, match="Choose which artifact"):
        services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=3, scope="artifact")
    assert not Feedback.objects.exists()


def test_feedback_waits_for_a_running_turn_to_end(two_turns, owner):
    turn, _ = slot.turn_begin(thread=two_turns, user_message="third")
    with pytest.raises(InvalidInput) as exc:
        services.feedback_leave(thread=_fresh(two_turns), user=owner, turn_index=turn, rating=3)
    assert exc.value.message == "Turn 3 is still running; leave feedback once it has ended."
    assert not Feedback.objects.exists()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"turn_index": 3}, "Turn 3 does not exist in this thread."),
        ({"turn_index": 0}, "Turn 0 does not exist in this thread."),
        ({"turn_index": "1"}, "Turn '1' does not exist in this thread."),
        ({"rating": 6}, "Rating must be a whole number from 1 (poor) to 5 (excellent)."),
        ({"rating": 0}, "Rating must be a whole number from 1 (poor) to 5 (excellent)."),
        ({"rating": -1}, "Rating must be a whole number from 1 (poor) to 5 (excellent)."),
        ({"rating": 2.5}, "Rating must be a whole number from 1 (poor) to 5 (excellent)."),
        ({"rating": True}, "Rating must be a whole number from 1 (poor) to 5 (excellent)."),
        ({"scope": "galaxy"}, "Scope must be one of: The turn, The document, The plan"),
        ({"aspect": ""}, "Aspect must be one of: Helpfulness, Correctness, Followed my preferences, Tone, Other."),
        ({"aspect": 7}, "Aspect must be one of:"),
        ({"comment": None}, "Comment must be text."),
        ({"comment": "x" * 5001}, "Comment is too long"),
        ({"comment": "a\x00b"}, "Comment cannot contain NUL characters."),
    ],
)
def test_feedback_leave_refuses_bad_input(two_turns, owner, kwargs, message):
    args = {"thread": two_turns, "user": owner, "turn_index": 1, "rating": 3} | kwargs
    with pytest.raises(InvalidInput) as exc:
        services.feedback_leave(**args)
    assert exc.value.message.startswith(message)
    assert not Feedback.objects.exists()


def test_feedback_update_changes_the_entry_on_its_turn(two_turns, owner):
    feedback = services.feedback_leave(thread=two_turns, user=owner, turn_index=2, rating=2, comment="meh")
    services.feedback_update(feedback=feedback, rating=5, scope="document", aspect="correctness", comment="on reflection, right")
    stored = Feedback.objects.get(pk=feedback.pk)
    assert (stored.turn_index, stored.scope, stored.aspect, stored.rating, stored.comment) == (
        2,
        "document",
        "correctness",
        5,
        "on reflection, right",
    )


def test_feedback_update_refuses_to_duplicate_another_entry(two_turns, owner):
    services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=2, aspect="tone")
    other = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=4, aspect="correctness")
    with pytest.raises(InvalidInput) as exc:
        services.feedback_update(feedback=other, rating=4, scope="turn", aspect="tone")
    assert exc.value.message == "You already rated tone of that on turn 1; change that entry instead."
    assert Feedback.objects.get(pk=other.pk).aspect == "correctness"


def test_feedback_update_refuses_bad_input_and_keeps_the_entry(two_turns, owner):
    feedback = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=2, comment="kept")
    with pytest.raises(InvalidInput):
        services.feedback_update(feedback=feedback, rating=9, scope="turn", aspect="tone")
    stored = Feedback.objects.get(pk=feedback.pk)
    assert (stored.rating, stored.aspect, stored.comment) == (2, "helpfulness", "kept")


def test_feedback_remove_deletes_only_that_entry(two_turns, owner):
    kept = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=2, aspect="tone")
    removed = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=4, aspect="correctness")
    services.feedback_remove(feedback=removed)
    assert list(Feedback.objects.values_list("pk", flat=True)) == [kept.pk]


def test_feedback_selectors_give_one_persons_entries_per_turn(two_turns, owner, other_user):
    first = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=2, aspect="tone")
    second = services.feedback_leave(thread=two_turns, user=owner, turn_index=1, rating=4, aspect="correctness")
    services.feedback_leave(thread=two_turns, user=owner, turn_index=2, rating=4)
    # Someone else's entry on the same thread (staff see it in the admin; the person never does).
    services.feedback_leave(thread=two_turns, user=other_user, turn_index=1, rating=1)
    assert selectors.feedback_on_turn(thread=two_turns, user=owner, turn_index=1) == [first, second]
    assert selectors.feedback_counts(thread=two_turns, user=owner) == {1: 2, 2: 1}
    assert selectors.feedback_of_user_or_none(thread=two_turns, user=other_user, pk=first.pk) is None


@pytest.mark.django_db(transaction=True)
async def test_deleting_a_thread_stops_the_turn_running_in_it_and_keeps_what_it_streamed(thread, owner, script):
    script(Reply(text=" ".join(f"word{i}" for i in range(400)), token_delay=0.02))
    await registry.start_turn(thread=thread, user_message="Write at length")
    for _ in range(200):
        running = registry._running.get(thread.pk)
        if running is not None and running.turn.draft:
            break
        await asyncio.sleep(0.02)

    await sync_to_async(services.thread_soft_delete)(thread=thread)
    await registry.wait_for_turn(thread.pk, timeout=5)

    turn = await Turn.objects.aget(thread=thread, index=1)
    assert turn.status == Turn.Status.STOPPED
    assert turn.answer.startswith("word0") and "word399" not in turn.answer
