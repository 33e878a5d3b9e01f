"""The prompt's reading kept in this process (selectors.workspace_reading_current)
is never older than the database: every write to a surface raises its count
in its own transaction, and the kept reading is checked against the counts
on every read (docs/adr/0093)."""

import contextlib

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from conversations.services import thread_create
from workspace import events, panels, selectors
from workspace.models import Thread
from workspace.selectors import workspace_reading_current, workspace_reading_for
from workspace.services import archive as archive_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import snapshots as snapshot_services

from .test_events_per_service import WRITES
from .test_events_per_service import workspace as workspace  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def no_listeners(monkeypatch):
    """No change events reach anything: what a write made in another
    process looks like to this one."""
    monkeypatch.setattr(events, "_subscribers", [])


@pytest.mark.parametrize("name, write, surface, ids, reordered", WRITES, ids=[w[0] for w in WRITES])
def test_the_owners_write_is_in_the_next_reading(workspace, no_listeners, name, write, surface, ids, reordered):  # noqa: F811
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    write(workspace)
    assert workspace_reading_current(thread=thread) == workspace_reading_for(thread=thread)


def test_an_unchanged_workspace_is_confirmed_with_one_statement(workspace, no_listeners):  # noqa: F811
    thread = workspace["thread"]
    first = workspace_reading_current(thread=thread)
    with CaptureQueriesContext(connection) as queries:
        again = workspace_reading_current(thread=thread)
    assert again == first
    assert len(queries.captured_queries) == 1


def test_after_a_plan_tick_the_plan_it_wrote_is_kept_and_confirmed_by_the_counts(workspace, no_listeners):  # noqa: F811
    """The tick leaves its plan as the kept reading's, at the count its own
    statement returned: nothing is read again but the counts (docs/adr/0140)."""
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    plan_services.todos_toggle_by_index(thread=thread, indices=[1])
    with CaptureQueriesContext(connection) as queries:
        reading = workspace_reading_current(thread=thread)
    assert [step.done for step in reading.todos] == [True, False, False]
    assert len(queries.captured_queries) == 1
    assert reading == workspace_reading_for(thread=thread)


PLAN_WRITES_THAT_KEEP_THEIR_PLAN = [
    ("add", lambda ws: plan_services.todo_add(thread=ws["thread"], text="D", parent=ws["b"])),
    (
        "add outline",
        lambda ws: plan_services.todos_add_outline(thread=ws["thread"], steps=[{"text": "D"}, {"text": "E", "depth": 1}]),
    ),
    ("rename", lambda ws: plan_services.todos_update_by_index(thread=ws["thread"], updates=[{"index": 3, "text": "C again"}])),
    ("remove", lambda ws: plan_services.todos_remove_by_index(thread=ws["thread"], indices=[2])),
    ("indent", lambda ws: plan_services.todo_indent(todo=ws["b"])),
    ("move up", lambda ws: plan_services.todo_move(todo=ws["b"], direction="up")),
]


@pytest.mark.parametrize(
    "write", [w for _, w in PLAN_WRITES_THAT_KEEP_THEIR_PLAN], ids=[n for n, _ in PLAN_WRITES_THAT_KEEP_THEIR_PLAN]
)
def test_after_a_plan_write_holding_the_whole_plan_its_plan_is_kept(workspace, no_listeners, write):  # noqa: F811
    """As a tick: the plan the write left is the kept reading's, confirmed
    by the counts alone (docs/adr/0140)."""
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    write(workspace)
    with CaptureQueriesContext(connection) as queries:
        reading = workspace_reading_current(thread=thread)
    assert len(queries.captured_queries) == 1
    assert reading == workspace_reading_for(thread=thread)


def test_a_tick_after_a_plan_write_the_kept_reading_missed_reads_the_plan_again(workspace, no_listeners):  # noqa: F811
    """Another plan write between the kept plan and the tick (another
    process's, or one no patch read: a one-step write keeps no plan): the
    tick's count is two more than the kept plan's, so its plan is not taken;
    the next reading reads it."""
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    plan_services.todo_update_text(todo=workspace["c"], text="Written elsewhere")
    plan_services.todos_toggle_by_index(thread=thread, indices=[1])
    with CaptureQueriesContext(connection) as queries:
        reading = workspace_reading_current(thread=thread)
    assert len(queries.captured_queries) == 2
    assert reading == workspace_reading_for(thread=thread)
    assert [step.text for step in reading.todos][-1] == "Written elsewhere"


def test_a_tick_rolled_back_leaves_the_kept_plan_as_it_was(workspace, no_listeners):  # noqa: F811
    thread = workspace["thread"]
    before = workspace_reading_current(thread=thread)
    with contextlib.suppress(RuntimeError), transaction.atomic():
        plan_services.todos_toggle_by_index(thread=thread, indices=[1])
        raise RuntimeError
    assert workspace_reading_current(thread=thread) == before == workspace_reading_for(thread=thread)


def test_a_thread_saved_from_an_older_copy_keeps_its_write_counts(workspace, no_listeners):  # noqa: F811
    thread = workspace["thread"]
    older = Thread.objects.get(pk=thread.pk)
    workspace_reading_current(thread=thread)
    objective_services.objective_set(thread=thread, text="Ship the report")
    older.title = "Renamed"
    older.save()
    assert Thread.objects.get(pk=thread.pk).objective_writes == older.objective_writes + 1
    assert workspace_reading_current(thread=thread).objective_text == "Ship the report"


def test_a_write_rolled_back_is_never_kept(workspace, no_listeners):  # noqa: F811
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    with pytest.raises(RuntimeError), transaction.atomic():
        objective_services.objective_set(thread=thread, text="Never committed")
        assert workspace_reading_current(thread=thread).objective_text == "Never committed"
        raise RuntimeError
    objective_services.objective_set(thread=thread, text="Committed")
    assert workspace_reading_current(thread=thread).objective_text == "Committed"


def test_a_workspace_restored_whole_is_in_the_next_reading(thread, no_listeners):
    workspace_reading_current(thread=thread)
    archive_services.workspace_restore_current(
        thread=thread,
        workspace={
            "objective": "Restored goal",
            "preferences": [{"kind": "hard", "title": "Be brief", "subtitle": "", "locked": False}],
            "plan": [{"text": "Restored step", "done": False, "depth": 0}],
            "document": None,
        },
    )
    reading = workspace_reading_current(thread=thread)
    assert reading == workspace_reading_for(thread=thread)
    assert reading.objective_text == "Restored goal"
    assert [step.text for step in reading.todos] == ["Restored step"]


def _capture_in_a_claim(thread, *, rolled_back: bool = False) -> None:
    """A turn's snapshot in a transaction of its own, as the claim takes it."""
    with contextlib.suppress(RuntimeError), transaction.atomic():
        snapshot_services.snapshot_capture(thread=thread, turn_index=1, user_message="Tidy up")
        if rolled_back:
            raise RuntimeError


def _first_prompts_reading(thread):
    """The turn's first prompt's reading, and how many statements it took."""
    with CaptureQueriesContext(connection) as queries:
        reading = workspace_reading_current(thread=thread)
    assert reading == workspace_reading_for(thread=thread)
    return reading, len(queries.captured_queries)


def test_a_snapshots_reading_is_kept_for_the_turns_first_prompt(workspace, no_listeners):  # noqa: F811
    _capture_in_a_claim(workspace["thread"])
    assert _first_prompts_reading(workspace["thread"])[1] == 1


def test_a_snapshot_rolled_back_leaves_no_reading_kept(workspace, no_listeners):  # noqa: F811
    _capture_in_a_claim(workspace["thread"], rolled_back=True)
    # Read whole: the objective and document with the counts, the preferences, the plan, the latest artifact.
    assert _first_prompts_reading(workspace["thread"])[1] == 4


def test_a_write_after_the_snapshot_is_in_the_first_prompts_reading(workspace, no_listeners):  # noqa: F811
    thread = workspace["thread"]
    _capture_in_a_claim(thread)
    objective_services.objective_set(thread=thread, text="Written while the turn began")
    plan_services.todos_toggle_by_index(thread=thread, indices=[1])
    reading, _statements = _first_prompts_reading(thread)
    assert reading.objective_text == "Written while the turn began"
    assert reading.todos[0].done


def _captured_reading(thread):
    """A claim's snapshot of the thread, what it wrote, and the statements
    its reading took (those before the previous snapshot's read)."""
    turn = (thread.snapshots.order_by("-turn_index").values_list("turn_index", flat=True).first() or 0) + 1
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        snapshot = snapshot_services.snapshot_capture(thread=thread, turn_index=turn, user_message="Again")
    sqls = [query["sql"] for query in queries.captured_queries if query["sql"] not in ("BEGIN", "BEGIN IMMEDIATE")]
    reads = next(i for i, sql in enumerate(sqls) if "workspacesnapshot" in sql)
    return snapshot, reads


def _as_read(thread) -> dict:
    reading = workspace_reading_for(thread=thread)
    return {
        "objective": reading.objective_text,
        "document": reading.document.content if reading.document else "",
        "preferences": [(p.title, p.kind, p.locked) for p in reading.preferences],
        "plan": [(s.text, s.done, s.depth) for s in reading.todos],
    }


def _as_snapshotted(snapshot) -> dict:
    return {
        "objective": snapshot.objective_text,
        "document": snapshot.document_content,
        "preferences": [(p["title"], p["kind"], p["locked"]) for p in snapshot.preferences_json],
        "plan": [(s["text"], s["done"], s["depth"]) for s in snapshot.todos_json],
    }


def test_a_claim_with_a_kept_reading_reads_only_the_counts_when_nothing_moved(workspace, no_listeners):  # noqa: F811
    """The thread's turn before ran here: the claim's snapshot starts from
    its kept reading, checked by the counts in one statement (docs/adr/0140)."""
    thread = workspace["thread"]
    _capture_in_a_claim(thread)
    snapshot, statements = _captured_reading(thread)
    assert statements == 1
    assert _as_snapshotted(snapshot) == _as_read(thread)
    assert _first_prompts_reading(thread)[1] == 1


def test_a_claim_reads_again_what_moved_behind_its_kept_reading(workspace, no_listeners):  # noqa: F811
    """Writes no patch of this process saw (another process's): their
    counts moved, so the claim reads those surfaces again, and only those."""
    thread = workspace["thread"]
    _capture_in_a_claim(thread)
    objective_services.objective_set(thread=thread, text="Written elsewhere")
    plan_services.todo_update_text(todo=workspace["c"], text="Renamed elsewhere")
    snapshot, statements = _captured_reading(thread)
    assert statements == 3  # the counts, the objective, the plan
    assert _as_snapshotted(snapshot) == _as_read(thread)
    assert snapshot.objective_text == "Written elsewhere"
    assert snapshot.todos_json[-1]["text"] == "Renamed elsewhere"
    assert _first_prompts_reading(thread)[1] == 1


@pytest.mark.parametrize("name, write, surface, ids, reordered", WRITES, ids=[w[0] for w in WRITES])
def test_patches_from_a_kept_reading_are_those_read_from_the_database(
    workspace,  # noqa: F811
    no_listeners,
    monkeypatch,
    name,
    write,
    surface,
    ids,
    reordered,
):
    """A write's live patches, rendered where this process keeps the
    thread's reading, show what reading the database would (docs/adr/0127)."""
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    with events.collecting() as changes:
        write(workspace)
    changes = events.merge(changes)
    from_reading = panels.render_changes(thread, changes)
    monkeypatch.setattr(selectors, "workspace_reading_kept", lambda **kwargs: None)
    assert from_reading == panels.render_changes(thread, changes)


@pytest.mark.parametrize("name, write, surface, ids, reordered", WRITES, ids=[w[0] for w in WRITES])
def test_after_a_writes_patches_the_next_reading_is_one_statement(
    workspace,  # noqa: F811
    no_listeners,
    name,
    write,
    surface,
    ids,
    reordered,
):
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    with events.collecting() as changes:
        write(workspace)
    panels.render_changes(thread, events.merge(changes))
    with CaptureQueriesContext(connection) as queries:
        reading = workspace_reading_current(thread=thread)
    assert reading == workspace_reading_for(thread=thread)
    if surface in panels.READ_SURFACES:
        assert len(queries.captured_queries) == 1


def test_a_thread_without_a_kept_reading_is_patched_from_its_own_reads(workspace, no_listeners):  # noqa: F811
    """A write to a thread no turn of this process reads keeps no reading
    for it: its patch reads only what it shows."""
    thread = workspace["thread"]
    with events.collecting() as changes:
        plan_services.todos_toggle_by_index(thread=thread, indices=[1])
    with CaptureQueriesContext(connection) as queries:
        panels.render_changes(thread, events.merge(changes))
    assert len(queries.captured_queries) == 2  # the outline and the touched step's text
    assert selectors.workspace_reading_kept(thread=thread) is None


def test_inside_a_transaction_a_patch_uses_no_kept_reading(workspace, no_listeners):  # noqa: F811
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    with transaction.atomic():
        plan_services.todos_toggle_by_index(thread=thread, indices=[1])
        assert selectors.workspace_reading_kept(thread=thread) is None


def test_an_objective_patch_reads_the_objective_with_the_counts(workspace, no_listeners):  # noqa: F811
    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    with events.collecting() as changes:
        objective_services.objective_set(thread=thread, text="Ship the report")
    with CaptureQueriesContext(connection) as queries:
        html = panels.render_changes(thread, events.merge(changes))
    assert "Ship the report" in html
    assert len(queries.captured_queries) == 1
    assert workspace_reading_current(thread=thread) == workspace_reading_for(thread=thread)


def test_a_running_turns_reading_is_kept_however_many_others_are_read(workspace, no_listeners, monkeypatch):  # noqa: F811
    """More turns running than CURRENT_READINGS_KEPT: each held reading
    stays, so each prompt is still one statement (docs/adr/0134)."""
    monkeypatch.setattr(selectors, "CURRENT_READINGS_KEPT", 1)
    thread = workspace["thread"]
    others = [thread_create(owner=thread.owner, title=f"Other {i}") for i in range(3)]
    selectors.workspace_reading_hold(thread.pk)
    try:
        _capture_in_a_claim(thread)
        for other in others:
            workspace_reading_current(thread=other)
        assert _first_prompts_reading(thread)[1] == 1
    finally:
        selectors.workspace_reading_release(thread.pk)
    # Released, it is kept like any other: the most recently used, it stays; then it goes.
    assert thread.pk in selectors._current_readings
    workspace_reading_current(thread=others[0])
    assert thread.pk not in selectors._current_readings
    assert _first_prompts_reading(thread)[1] == 4


def test_an_unheld_reading_goes_when_more_threads_are_read(workspace, no_listeners, monkeypatch):  # noqa: F811
    monkeypatch.setattr(selectors, "CURRENT_READINGS_KEPT", 1)
    thread = workspace["thread"]
    _capture_in_a_claim(thread)
    workspace_reading_current(thread=thread_create(owner=thread.owner, title="Other"))
    assert _first_prompts_reading(thread)[1] == 4


def test_a_plan_write_that_waited_on_anothers_locks_never_keeps_a_plan_missing_its_step(workspace, no_listeners):  # noqa: F811
    """Two plan writes of this process at once: the second (a tick) waits
    on the rows the first (an add) locked, and its plan read may not see the
    step the first added (on PostgreSQL a statement's snapshot is taken
    before it waits). The kept reading must still be the database's."""
    import threading
    import time

    from django.db import connections

    thread = workspace["thread"]
    workspace_reading_current(thread=thread)
    added, go = threading.Event(), threading.Event()
    errors = []

    def add():
        try:
            with transaction.atomic():
                plan_services.todo_add(thread=thread, text="Added meanwhile")
                added.set()
                go.wait(10)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    def tick():
        try:
            added.wait(10)
            plan_services.todos_toggle_by_index(thread=thread, indices=[1])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    first, second = threading.Thread(target=add), threading.Thread(target=tick)
    first.start()
    second.start()
    added.wait(10)
    time.sleep(0.5)  # the tick is now waiting on the add's locks
    go.set()
    first.join(20)
    second.join(20)
    assert not errors
    assert workspace_reading_current(thread=thread) == workspace_reading_for(thread=thread)
