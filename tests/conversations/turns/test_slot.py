"""conversations.turns.slot: the turn counter and its claim (begin, finish,
stale claims, keepalive), the first message's title, and cancel requests."""

from datetime import timedelta

import pytest
from django.utils import timezone

from conversations import services
from conversations.errors import TurnAlreadyRunning
from conversations.models import Turn, TurnSlot
from conversations.turns import message_checks, outcome, process, slot
from conversations.turns.slot import STALE_TURN_AFTER
from tests.conversations.helpers import stored_slot
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

    turn, snapshot = slot.turn_begin(thread=thread, user_message="Please start")
    assert turn == 1 and thread.turn_index == 1
    stored = _fresh(thread)
    assert (stored.turn_index, stored_slot(thread).turn_index) == (1, 1)
    assert stored_slot(thread).since is not None and not stored_slot(thread).cancel_requested

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

    slot.turn_finish(thread=thread, turn_index=turn)
    turn2, _ = slot.turn_begin(thread=thread, user_message="Next")
    assert turn2 == 2
    assert WorkspaceSnapshot.objects.get(thread=thread, turn_index=2).objective_text == "Changed by the agent"


def test_turn_begin_titles_a_new_thread_from_its_first_message(owner):
    thread = services.thread_create(owner=owner)
    slot.turn_begin(thread=thread, user_message="  Help me   plan a\nliterature review ")
    assert _fresh(thread).title == "Help me plan a literature review"
    slot.turn_finish(thread=thread, turn_index=1)
    slot.turn_begin(thread=thread, user_message="Something else entirely")
    assert _fresh(thread).title == "Help me plan a literature review"


def test_turn_begin_shortens_a_long_first_message_at_a_word(owner):
    thread = services.thread_create(owner=owner)
    message = "word " * 40
    slot.turn_begin(thread=thread, user_message=message)
    title = _fresh(thread).title
    assert title.endswith("…") and len(title) <= 60
    assert title[:-1].split() == ["word"] * len(title[:-1].split())


def test_turn_begin_keeps_a_title_the_person_chose(thread):
    slot.turn_begin(thread=thread, user_message="Hello there")
    assert _fresh(thread).title == "Lit review"


def test_a_second_concurrent_turn_is_refused_naming_who_started_it_and_changes_nothing(owner, other_user, thread):
    owner.first_name, owner.last_name = "Ada", "Lovelace"
    owner.save()
    slot.turn_begin(thread=thread, user_message="first", person=owner)
    with pytest.raises(TurnAlreadyRunning) as exc:
        slot.turn_begin(thread=_fresh(thread), user_message="second", person=other_user)
    assert isinstance(exc.value, UserFacingError)
    assert exc.value.message.startswith("A turn is running (started by Ada Lovelace)")
    stored = _fresh(thread)
    assert (stored.turn_index, stored_slot(thread).turn_index) == (1, 1)
    assert list(WorkspaceSnapshot.objects.filter(thread=thread).values_list("user_message", flat=True)) == ["first"]


def test_a_stale_running_turn_lets_the_next_message_through(thread):
    slot.turn_begin(thread=thread, user_message="server died during this one")
    TurnSlot.objects.filter(thread_id=thread.pk).update(since=timezone.now() - STALE_TURN_AFTER - timedelta(seconds=1))
    turn, snapshot = slot.turn_begin(thread=_fresh(thread), user_message="try again")
    assert turn == 2
    assert stored_slot(thread).turn_index == 2
    assert snapshot.user_message == "try again"
    # The abandoned turn says what happened to it.
    abandoned = Turn.objects.get(thread=thread, index=1)
    assert abandoned.status == Turn.Status.INTERRUPTED and abandoned.notice == outcome.INTERRUPTED_LOST


def test_a_recent_running_turn_is_not_stale(thread):
    slot.turn_begin(thread=thread, user_message="working")
    TurnSlot.objects.filter(thread_id=thread.pk).update(since=timezone.now() - STALE_TURN_AFTER + timedelta(minutes=1))
    with pytest.raises(TurnAlreadyRunning):
        slot.turn_begin(thread=_fresh(thread), user_message="too soon")


def test_turn_finish_releases_only_its_own_turn(thread):
    slot.turn_begin(thread=thread, user_message="one")
    TurnSlot.objects.filter(thread_id=thread.pk).update(since=timezone.now() - timedelta(hours=1))
    slot.turn_begin(thread=_fresh(thread), user_message="two")
    # The abandoned turn 1 finishing late must not release turn 2's claim.
    slot.turn_finish(thread=thread, turn_index=1)
    assert stored_slot(thread).turn_index == 2
    slot.turn_request_cancel(thread=thread)
    slot.turn_finish(thread=thread, turn_index=2)
    stored = stored_slot(thread)
    assert (stored.turn_index, stored.since, stored.cancel_requested) == (None, None, False)


def test_turn_request_cancel_only_when_a_turn_runs(thread):
    assert slot.turn_request_cancel(thread=thread) is False
    assert not stored_slot(thread).cancel_requested
    slot.turn_begin(thread=thread, user_message="go")
    assert slot.turn_request_cancel(thread=thread) is True
    assert stored_slot(thread).cancel_requested
    slot.turn_finish(thread=thread, turn_index=1)
    slot.turn_begin(thread=thread, user_message="go again")
    assert not stored_slot(thread).cancel_requested


def test_turns_keepalive_refreshes_only_claims_that_are_still_those_turns(thread, owner):
    other = services.thread_create(owner=owner, title="Other")
    turn_index, _ = slot.turn_begin(thread=thread, user_message="hello")
    slot.turn_begin(thread=other, user_message="hi")
    old = timezone.now() - timedelta(seconds=60)
    TurnSlot.objects.update(since=old)
    # `other` has moved on to a later turn elsewhere: its claim is not ours.
    assert slot.turns_keepalive(turns={thread.pk: turn_index, other.pk: 7}) == 1
    assert stored_slot(thread).since > old
    assert stored_slot(other).since == old
    slot.turn_finish(thread=thread, turn_index=turn_index)
    assert slot.turns_keepalive(turns={thread.pk: turn_index}) == 0
    assert stored_slot(thread).since is None
    assert slot.turns_keepalive(turns={}) == 0


def test_cancel_requested_among_reads_every_flag_in_one_go(thread, owner):
    other = services.thread_create(owner=owner, title="Other")
    slot.turn_begin(thread=thread, user_message="hello")
    slot.turn_begin(thread=other, user_message="hi")
    assert slot.cancel_requested_among([thread.pk, other.pk]) == set()
    slot.turn_request_cancel(thread=other)
    assert slot.cancel_requested_among([thread.pk, other.pk]) == {other.pk}
    assert slot.cancel_requested_among([]) == set()


# --- turn rows, and turns left by a dead server -------------------------------------------


def test_turn_begin_records_the_turn_row_with_its_server(thread):
    slot.turn_begin(thread=thread, user_message="hello", model_name="scripted-other")
    row = Turn.objects.get(thread=thread, index=1)
    assert (row.user_message, row.model_name, row.status) == ("hello", "scripted-other", Turn.Status.RUNNING)
    assert (row.instance, row.boot) == (process.instance(), process.BOOT)
    slot.turn_finish(thread=thread, turn_index=1, status=Turn.Status.COMPLETE, answer="Hi.", cut_off=False)
    row.refresh_from_db()
    assert (row.status, row.answer) == (Turn.Status.COMPLETE, "Hi.") and row.ended_at is not None


def test_the_answer_streamed_so_far_is_stored_for_running_turns_only(thread, owner):
    other = services.thread_create(owner=owner, title="Other")
    slot.turn_begin(thread=thread, user_message="one")
    slot.turn_begin(thread=other, user_message="two")
    slot.turn_finish(thread=other, turn_index=1, answer="final")
    slot.turns_save_answers(answers={(thread.pk, 1): "half an ans", (other.pk, 1): "late draft"})
    assert Turn.objects.get(thread=thread, index=1).answer == "half an ans"
    assert Turn.objects.get(thread=other, index=1).answer == "final"  # an ended turn keeps its answer


def test_the_answers_of_many_running_turns_are_stored_by_one_statement(owner, django_assert_max_num_queries):
    from django.contrib.auth import get_user_model

    threads = []
    for n in range(6):  # each its own person's: a person's running turns are limited
        person = get_user_model().objects.create_user(username=f"person{n}", password="x")
        threads.append(services.thread_create(owner=person, title=f"Thread {n}"))
        slot.turn_begin(thread=threads[-1], user_message="go")
    slot.turn_finish(thread=threads[0], turn_index=1, answer="final")
    slot.turn_begin(thread=threads[0], user_message="a second turn")
    answers = {(thread.pk, 1): f"answer of {thread.title} 'quoted' \u00e9" for thread in threads[1:]}
    answers[(threads[0].pk, 2)] = "the second turn's"
    answers[(threads[0].pk, 1)] = "too late"
    # One UPDATE run for every turn (executemany), in its transaction.
    with django_assert_max_num_queries(3):
        slot.turns_save_answers(answers=answers)
    for thread in threads[1:]:
        assert Turn.objects.get(thread=thread, index=1).answer == f"answer of {thread.title} 'quoted' \u00e9"
    assert Turn.objects.get(thread=threads[0], index=2).answer == "the second turn's"
    assert Turn.objects.get(thread=threads[0], index=1).answer == "final"  # ended: kept
    slot.turns_save_answers(answers={})


def _as_if_started_by(thread, index, *, instance, boot):
    Turn.objects.filter(thread=thread, index=index).update(instance=instance, boot=boot)


def test_a_restarted_server_releases_the_turns_its_predecessor_left_at_once(thread, owner):
    other = services.thread_create(owner=owner, title="Other process")
    slot.turn_begin(thread=thread, user_message="killed mid-answer")
    slot.turns_save_answers(answers={(thread.pk, 1): "What streamed before"})
    _as_if_started_by(thread, 1, instance=process.instance(), boot="earlier-boot")
    slot.turn_begin(thread=other, user_message="on another server")
    _as_if_started_by(other, 1, instance="web-2", boot="its-boot")

    assert slot.turns_release_predecessor() == 1
    # At once: the claim is seconds old, far from stale.
    stored = stored_slot(thread)
    assert (stored.turn_index, stored.since, stored.cancel_requested) == (None, None, False)
    row = Turn.objects.get(thread=thread, index=1)
    assert (row.status, row.notice, row.answer) == (Turn.Status.INTERRUPTED, outcome.INTERRUPTED_RESTART, "What streamed before")
    # Another server's turn is its own business.
    assert stored_slot(other).turn_index == 1
    assert Turn.objects.get(thread=other, index=1).status == Turn.Status.RUNNING
    # And the thread takes a new message right away.
    assert slot.turn_begin(thread=_fresh(thread), user_message="again")[0] == 2


def test_stale_claims_are_released_by_any_process_and_fresh_ones_kept(thread, owner):
    other = services.thread_create(owner=owner, title="Alive")
    slot.turn_begin(thread=thread, user_message="its server died")
    _as_if_started_by(thread, 1, instance="web-9", boot="gone")
    slot.turn_begin(thread=other, user_message="its server is fine")
    _as_if_started_by(other, 1, instance="web-2", boot="alive")
    TurnSlot.objects.filter(thread_id=thread.pk).update(since=timezone.now() - STALE_TURN_AFTER - timedelta(seconds=1))

    assert slot.turns_release_stale() == 1
    assert stored_slot(thread).turn_index is None
    assert Turn.objects.get(thread=thread, index=1).status == Turn.Status.INTERRUPTED
    assert stored_slot(other).turn_index == 1
    assert slot.turns_release_stale() == 0


def test_stale_means_three_missed_refreshes_at_most_thirty_seconds():
    assert slot.STALE_TURN_AFTER <= timedelta(seconds=30)
    assert slot.STALE_TURN_AFTER >= 3 * slot.TURN_KEEPALIVE


def test_stop_on_a_turn_whose_server_died_releases_it(thread, owner):
    slot.turn_begin(thread=thread, user_message="stale")
    _as_if_started_by(thread, 1, instance="web-9", boot="gone")
    TurnSlot.objects.filter(thread_id=thread.pk).update(since=timezone.now() - STALE_TURN_AFTER - timedelta(seconds=1))
    assert slot.turn_request_cancel(thread=_fresh(thread)) is True
    assert stored_slot(thread).turn_index is None
    row = Turn.objects.get(thread=thread, index=1)
    assert (row.status, row.notice) == (Turn.Status.INTERRUPTED, outcome.INTERRUPTED_STOP)

    # This server's own earlier run is known dead even before its claim is stale.
    restarted = services.thread_create(owner=owner, title="Restarted")
    slot.turn_begin(thread=restarted, user_message="before the restart")
    _as_if_started_by(restarted, 1, instance=process.instance(), boot="earlier-boot")
    assert slot.turn_request_cancel(thread=_fresh(restarted)) is True
    assert stored_slot(restarted).turn_index is None


def test_stop_on_a_live_servers_turn_only_asks_it_to_stop(thread):
    slot.turn_begin(thread=thread, user_message="alive elsewhere")
    _as_if_started_by(thread, 1, instance="web-2", boot="alive")
    assert slot.turn_request_cancel(thread=_fresh(thread)) is True
    stored = stored_slot(thread)
    assert stored.turn_index == 1 and stored.cancel_requested
    assert Turn.objects.get(thread=thread, index=1).status == Turn.Status.RUNNING


def test_a_turn_finishing_after_it_was_taken_for_dead_keeps_interrupted(thread):
    slot.turn_begin(thread=thread, user_message="slow")
    _as_if_started_by(thread, 1, instance="web-9", boot="paused")
    TurnSlot.objects.filter(thread_id=thread.pk).update(since=timezone.now() - STALE_TURN_AFTER - timedelta(seconds=1))
    slot.turns_release_stale()
    slot.turn_finish(thread=thread, turn_index=1, status=Turn.Status.COMPLETE, answer="late")
    assert Turn.objects.get(thread=thread, index=1).status == Turn.Status.INTERRUPTED


@pytest.mark.django_db(transaction=True)
def test_a_released_turn_is_announced_to_every_open_tab(thread):
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from conversations.live import group_name

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group_name(thread.pk), channel)
    slot.turn_begin(thread=thread, user_message="killed")
    slot.turns_save_answers(answers={(thread.pk, 1): "Half of the **answer**"})
    _as_if_started_by(thread, 1, instance=process.instance(), boot="earlier-boot")
    slot.turns_release_predecessor()
    html = async_to_sync(layer.receive)(channel)["html"]
    assert "Half of the <strong>answer</strong>" in html
    assert outcome.INTERRUPTED_RESTART in html and 'aria-label="Retry turn 1"' in html
    assert 'data-state="idle"' in html


def test_retry_is_offered_for_the_latest_failed_interrupted_or_cut_off_turn_only(thread):
    slot.turn_begin(thread=thread, user_message="first")
    with pytest.raises(UserFacingError, match="still running"):
        message_checks.retry_message(thread=_fresh(thread), turn=1)
    slot.turn_finish(thread=thread, turn_index=1, status=Turn.Status.FAILED, notice="The model server could not be reached.")
    assert message_checks.retry_message(thread=_fresh(thread), turn=1) == ("first", "", None)
    assert message_checks.retry_message(thread=_fresh(thread), turn="1") == ("first", "", None)
    for bad in (None, "one", "¹", 1.5, True, [1]):
        with pytest.raises(UserFacingError, match="Choose a turn"):
            message_checks.retry_message(thread=_fresh(thread), turn=bad)
    with pytest.raises(UserFacingError, match="does not exist"):
        message_checks.retry_message(thread=_fresh(thread), turn=7)

    slot.turn_begin(thread=_fresh(thread), user_message="second")
    slot.turn_finish(thread=thread, turn_index=2, status=Turn.Status.COMPLETE, answer="Done.")
    with pytest.raises(UserFacingError, match="Only the latest"):
        message_checks.retry_message(thread=_fresh(thread), turn=1)
    with pytest.raises(UserFacingError, match="ended normally"):
        message_checks.retry_message(thread=_fresh(thread), turn=2)

    slot.turn_begin(thread=_fresh(thread), user_message="third")
    slot.turn_finish(thread=thread, turn_index=3, status=Turn.Status.COMPLETE, answer="Half", cut_off=True)
    assert message_checks.retry_message(thread=_fresh(thread), turn=3) == ("third", "", None)
    slot.turn_begin(thread=_fresh(thread), user_message="fourth")
    slot.turn_finish(thread=thread, turn_index=4, status=Turn.Status.COMPLETE, answer="")
    assert message_checks.retry_message(thread=_fresh(thread), turn=4) == ("fourth", "", None)  # no answer at all


def test_a_persons_running_turns_are_counted_from_every_threads_claim(owner, other_user, thread, settings):
    from conversations.errors import TooManyTurns

    settings.HAICO_MAX_RUNNING_TURNS = 2
    second = services.thread_create(owner=owner)
    third = services.thread_create(owner=owner)
    slot.turn_begin(thread=thread, user_message="one")
    slot.turn_begin(thread=second, user_message="two")
    with pytest.raises(TooManyTurns, match="You have 2 turns running in other threads"):
        slot.turn_begin(thread=third, user_message="three")
    assert _fresh(third).turn_index == 0 and not Turn.objects.filter(thread=third).exists()
    # Another person is not counted with them; a claim gone stale (its server died) no longer counts.
    slot.turn_begin(thread=services.thread_create(owner=other_user), user_message="theirs")
    TurnSlot.objects.filter(thread_id=thread.pk).update(since=timezone.now() - STALE_TURN_AFTER)
    assert slot.turn_begin(thread=third, user_message="three")[0] == 1
    # 0: no limit.
    settings.HAICO_MAX_RUNNING_TURNS = 0
    assert slot.turn_begin(thread=services.thread_create(owner=owner), user_message="four")[0] == 1


def test_an_editor_refused_by_the_owners_running_turns_is_told_the_limit_is_the_owners(
    owner, other_user, thread, settings, django_user_model
):
    """The limit counts per owner (docs/adr/0084): an editor who started none
    of the running turns is not told they have turns running (they cannot
    stop the owner's), nor how many turns the owner has running, nor which
    threads they run in: the owner's activity elsewhere is not theirs to see."""
    from conversations.errors import TooManyTurns

    settings.HAICO_MAX_RUNNING_TURNS = 2
    slot.turn_begin(thread=services.thread_create(owner=owner, title="Owner's private plan"), user_message="one", person=owner)
    slot.turn_begin(thread=services.thread_create(owner=owner, title="Owner's budget"), user_message="two", person=owner)
    with pytest.raises(TooManyTurns) as refused:
        slot.turn_begin(thread=thread, user_message="the editor's", person=other_user)
    message = refused.value.message
    assert message == (
        "The owner of this thread (owner) has reached their limit of turns running at once; wait for one of "
        "them to finish, or ask the owner to stop one, then send this again. Nothing was sent."
    ), message
    assert "2" not in message and "You have" not in message
    assert "private plan" not in message and "budget" not in message
    assert _fresh(thread).turn_index == 0

    # One of them the editor's own (in another thread of the owner's shared with them): they may stop that one.
    slot.turn_finish(thread=Thread.objects.get(title="Owner's budget"), turn_index=1)
    slot.turn_begin(thread=services.thread_create(owner=owner), user_message="theirs", person=other_user)
    with pytest.raises(TooManyTurns) as refused:
        slot.turn_begin(thread=thread, user_message="the editor's", person=other_user)
    message = refused.value.message
    assert message == (
        "The owner of this thread (owner) has reached their limit of turns running at once, and 1 of the running "
        "turns was started by you; wait for one to finish (or stop yours), then send this again. Nothing was sent."
    ), message
    assert "2" not in message


def test_the_owner_refused_because_editors_fill_their_running_turns_is_told_others_started_them(
    owner, other_user, thread, settings, django_user_model
):
    from conversations.errors import TooManyTurns

    settings.HAICO_MAX_RUNNING_TURNS = 2
    third = django_user_model.objects.create_user(username="third", password="pw-third-123")
    slot.turn_begin(thread=services.thread_create(owner=owner), user_message="one", person=other_user)
    slot.turn_begin(thread=services.thread_create(owner=owner), user_message="two", person=third)
    with pytest.raises(TooManyTurns) as refused:
        slot.turn_begin(thread=thread, user_message="mine", person=owner)
    message = refused.value.message
    assert "You have" not in message, message
    assert "Your threads have 2 turns running, the most at once, 2 of them started by people you share them with" in message
    assert "intruder" not in message and "third" not in message


def test_the_turn_row_records_who_sent_the_message(owner, thread):
    slot.turn_begin(thread=thread, user_message="from the owner", person=owner)
    row = Turn.objects.get(thread=thread, index=1)
    assert (row.person_id, row.person_username, row.person_name) == (owner.pk, "owner", "owner")


def test_a_turn_claimed_while_another_waits_on_its_approval_is_refused_with_the_runner_named(owner, thread):
    slot.turn_begin(thread=thread, user_message="first", person=owner)
    locked = _fresh(thread)
    with pytest.raises(TurnAlreadyRunning) as exc:
        slot.claim_slot(locked, 1, now=timezone.now())
    assert "(started by owner)" in exc.value.message


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_that_fails_leaves_no_turn_claimed_and_the_next_message_goes_through(thread, monkeypatch):
    def broken_store(**kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr("workspace.services.snapshots.snapshot_store", broken_store)
    with pytest.raises(RuntimeError):
        slot.turn_begin(thread=thread, user_message="Please start")
    assert _fresh(thread).turn_index == 0
    assert not Turn.objects.filter(thread=thread).exists()
    assert slot.running_turn(thread) is None
    monkeypatch.undo()
    turn, snapshot = slot.turn_begin(thread=_fresh(thread), user_message="Please start")
    assert turn == 1 and snapshot.turn_index == 1
