"""A turn's claim locks people's rows (the owner's for the running-turns
limit, the sender's for a token limit: docs/adr/0064, 0084) before the
thread's, as a branch does (sharing.lock_family): a message sent as the
thread is branched is never lost to a deadlock. PostgreSQL only (SQLite
serialises every write)."""

import threading
import time
import uuid

import pytest
from django.db import connections, transaction

from conversations import quotas, services, sharing
from conversations.turns import slot
from workspace.models import Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql_pass]


@pytest.fixture
def ed(django_user_model):
    return django_user_model.objects.create_user(username="ed46", email="ed46@example.com", password="pw-123456")


def _windows(user):
    return quotas.token_windows(user_id=user.pk, account=None)


def _run(target, results, key):
    def body():
        try:
            results[key] = target()
        except BaseException as exc:  # noqa: BLE001 - the probe reports what each side got
            results[key] = exc
        finally:
            connections.close_all()

    worker = threading.Thread(target=body)
    worker.start()
    return worker


def _pause_after_the_thread_lock(monkeypatch, gate_for):
    """turn_claim holds its thread's row when it calls refuse_if_stored: wait there on the thread's gate."""
    real = slot.refuse_if_stored

    def paused(*, thread_id, person, client_message_id):
        gate = gate_for.get(thread_id)
        if gate is not None:
            reached, go = gate
            reached.set()
            go.wait(10)
        return real(thread_id=thread_id, person=person, client_message_id=client_message_id)

    monkeypatch.setattr(slot, "refuse_if_stored", paused)


def test_an_owner_and_an_editor_sending_at_once_in_each_others_threads_both_start(owner, ed, settings):
    """Both with a token limit and the running-turns limit on: each claim
    locks both people in key order, so one waits a moment for the other and
    neither is killed as a deadlock."""
    settings.HAICO_DAILY_TOKEN_LIMIT = 100_000
    settings.HAICO_MAX_RUNNING_TURNS = 5
    owners_thread = services.thread_create(owner=owner, title="Owner's")
    eds_thread = services.thread_create(owner=ed, title="Ed's")
    sharing.thread_member_add(thread=owners_thread, who="ed46", role="editor", by=owner)
    sharing.thread_member_add(thread=eds_thread, who="owner", role="editor", by=ed)
    results = {}
    start = time.monotonic()
    workers = [
        _run(
            lambda: slot.turn_claim(
                thread=Thread.objects.get(pk=owners_thread.pk), user_message="from ed", person=ed, windows=_windows(ed)
            ),
            results,
            "ed",
        ),
        _run(
            lambda: slot.turn_claim(
                thread=Thread.objects.get(pk=eds_thread.pk), user_message="from owner", person=owner, windows=_windows(owner)
            ),
            results,
            "owner",
        ),
    ]
    for worker in workers:
        worker.join(20)
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    assert Thread.objects.get(pk=owners_thread.pk).turn_index == 1 and Thread.objects.get(pk=eds_thread.pk).turn_index == 1
    assert time.monotonic() - start < 10


def _send_while_branching(thread, *, sender, brancher, monkeypatch) -> dict:
    """`sender`'s claim holds the thread's row when `brancher` branches the
    thread at turn 1; what each side got."""
    from conversations.branching import write_pending_rows

    turn, _ = slot.turn_begin(thread=thread, user_message="First", person=thread.owner)
    slot.turn_finish(thread=thread, turn_index=turn)
    gate = (threading.Event(), threading.Event())
    _pause_after_the_thread_lock(monkeypatch, {thread.pk: gate})
    results: dict = {}
    send = _run(
        lambda: slot.turn_claim(
            thread=Thread.objects.get(pk=thread.pk), user_message="Second", person=sender, windows=_windows(sender)
        ),
        results,
        "send",
    )
    assert gate[0].wait(10)  # the claim holds the thread's row

    def branch():
        with transaction.atomic():
            return write_pending_rows(
                new_id=uuid.uuid4(), source=Thread.objects.get(pk=thread.pk), turn_index=1, user=brancher, reason="continue"
            )

    branching = _run(branch, results, "branch")
    time.sleep(0.5)  # the branch has the owner's row and waits for the thread's
    gate[1].set()
    send.join(20)
    branching.join(20)
    return results


@pytest.mark.parametrize("running_limit", [5, 0], ids=["running-turns-limit", "token-limit-only"])
@pytest.mark.parametrize("sender_is_the_owner", [False, True], ids=["editor-sends", "owner-sends"])
def test_a_message_sent_as_the_thread_is_branched_is_not_lost_to_a_deadlock(
    owner, ed, settings, monkeypatch, running_limit, sender_is_the_owner
):
    """An editor or the owner sends in the owner's thread at the moment the
    owner branches it ("Continue from here", Edit): the branch locks the
    owner's row, then the thread; the claim locked the thread, then the
    people's rows (the owner's for the running-turns limit, the sender's for
    a token limit). The two waited for each other in a circle and one was
    killed with "deadlock detected" though neither conflicted."""
    settings.HAICO_MAX_RUNNING_TURNS = running_limit
    settings.HAICO_DAILY_TOKEN_LIMIT = 100_000
    thread = services.thread_create(owner=owner, title="Shared")
    sharing.thread_member_add(thread=thread, who="ed46", role="editor", by=owner)

    results = _send_while_branching(thread, sender=owner if sender_is_the_owner else ed, brancher=owner, monkeypatch=monkeypatch)

    errors = {key: repr(value) for key, value in results.items() if isinstance(value, BaseException)}
    assert not errors, errors
    assert Thread.objects.get(pk=thread.pk).turn_index == 2


def test_a_person_without_a_limit_takes_no_peoples_lock_when_the_running_limit_is_off(owner, settings, monkeypatch):
    """No token limit and no running-turns limit: the claim locks no person's row (nothing extra)."""
    settings.HAICO_MAX_RUNNING_TURNS = 0
    settings.HAICO_DAILY_TOKEN_LIMIT = 0
    settings.HAICO_MONTHLY_TOKEN_LIMIT = 0
    calls = []
    real = slot._lock_people
    monkeypatch.setattr(slot, "_lock_people", lambda ids: (calls.append(set(ids)), real(ids))[1])
    thread = services.thread_create(owner=owner, title="Mine")
    slot.turn_claim(thread=thread, user_message="Hi", person=owner, windows=_windows(owner))
    assert calls in ([], [set()]), calls
