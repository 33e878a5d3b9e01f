"""workspace.selectors: the ownership scoping every view relies on, the
ordered reads of each surface, the objective's history, and
`workspace_reading_for`, the prompt's read of the workspace as plain
values, in the same order as the page's reads."""

import datetime

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from conversations import services
from conversations.services import thread_create
from tests.workspace.helpers import _outline
from workspace import selectors
from workspace import selectors as thread_selectors
from workspace.models import Artifact, Document, Objective, ObjectiveRevision, Preference, Thread, Todo
from workspace.selectors import Access
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services
from workspace.services import snapshots as snapshots_services

pytestmark = pytest.mark.django_db


# --- ownership -----------------------------------------------------------------------


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
    assert thread_selectors.thread_for_user(user=owner, thread_id=thread.pk, level=Access.VIEW) == thread
    assert thread_selectors.thread_for_user(user=other_user, thread_id=thread.pk, level=Access.VIEW) is None
    assert thread_selectors.thread_for_user(user=AnonymousUser(), thread_id=thread.pk, level=Access.VIEW) is None
    with pytest.raises(Http404):
        thread_selectors.get_thread_for_user_or_404(user=other_user, thread_id=thread.pk, level=Access.VIEW)
    assert thread_selectors.get_thread_for_user_or_404(user=owner, thread_id=thread.pk, level=Access.VIEW) == thread


# --- surfaces --------------------------------------------------------------------------


def test_preferences_for_lists_hard_before_soft_then_by_position(mixed_preferences):
    assert [p.title for p in selectors.preferences_for(thread=mixed_preferences)] == ["B", "D", "A", "C"]


def test_plan_steps_carry_outline_numbers_in_pre_order(thread):
    _outline(thread, ("A", 0), ("A.1", 1), ("A.1.a", 2), ("A.2", 1), ("B", 0))
    steps = selectors.plan_steps(thread=thread)
    assert [(s.number, s.text, s.depth) for s in steps] == [
        ("1", "A", 0),
        ("1.1", "A.1", 1),
        ("1.1.1", "A.1.a", 2),
        ("1.2", "A.2", 1),
        ("2", "B", 0),
    ]


# --- objective history -------------------------------------------------------------------


def test_objective_history_lists_every_change_newest_first_with_who_and_when(thread):
    snapshots_services.snapshot_capture(thread=thread, turn_index=1, user_message="m1")
    Thread.objects.filter(pk=thread.pk).update(turn_index=1)
    objective_services.objective_set(thread=thread, text="First", author="agent")
    objective_services.objective_set(thread=thread, text="Second", author="agent")  # two changes in one turn
    Thread.objects.filter(pk=thread.pk).update(turn_index=2)
    snapshots_services.snapshot_capture(thread=thread, turn_index=2, user_message="m2")  # a turn start changes nothing
    objective_services.objective_set(thread=thread, text="Mine", author="person")
    objective_services.objective_set(thread=thread, text="Mine", author="person")  # the same value: not a change

    history = selectors.objective_history(thread=thread)

    assert [(e.text, e.author, e.turn_index) for e in history] == [
        ("Mine", "person", 2),
        ("Second", "agent", 1),
        ("First", "agent", 1),
        (None, None, None),  # the standing objective it started from
    ]
    assert history[0].at >= history[1].at >= history[2].at
    assert ObjectiveRevision.objects.filter(thread=thread).count() == 3


def test_an_objective_written_without_the_service_is_still_the_live_value(thread):
    objective_services.objective_set(thread=thread, text="Recorded", author="agent")
    Objective.objects.filter(thread=thread).update(text="Written by hand")
    history = selectors.objective_history(thread=thread)
    assert [(e.text, e.author) for e in history] == [("Written by hand", None), ("Recorded", "agent"), (None, None)]


def test_objective_history_of_a_new_thread_is_the_standing_objective(thread):
    assert [(e.text, e.turn_index, e.at) for e in selectors.objective_history(thread=thread)] == [(None, None, None)]
    assert selectors.STANDING_OBJECTIVE.startswith("Understand what the user is trying to achieve")


# --- the prompt's reading of the workspace -------------------------------------------------


def test_reading_of_an_empty_workspace(thread):
    reading = selectors.workspace_reading_for(thread=thread)
    assert reading == selectors.WorkspaceReading(
        objective_text=None, preferences=[], todos=[], document=None, latest_artifact=None
    )


def test_reading_holds_each_surface_by_name_in_the_pages_order(owner, thread):
    objective_services.objective_set(thread=thread, text="Compare the two surveys")
    short = preferences_services.preference_add(thread=thread, title="Short sentences", kind="soft", respect_lock=False)
    locked = preferences_services.preference_add(
        thread=thread, title='Cite "every" figure', subtitle="Peer-reviewed", kind="hard", respect_lock=False
    )
    preferences_services.preference_set_locked(preference=locked, locked=True, respect_lock=False)
    plan_services.todos_add_outline(
        thread=thread, steps=[{"text": "Gather", "depth": 0}, {"text": "Search", "depth": 1}, {"text": "Write", "depth": 0}]
    )
    plan_services.todos_toggle_by_index(thread=thread, indices=[2])
    document_services.document_save(thread=thread, title="Report", content="Intro — *draft*.")
    for title in ("First", "Second"):
        artifacts_services.artifact_create(
            thread=thread, artifact_type="table", title=title, payload={"columns": [], "rows": []}, turn_index=1
        )
    # Another thread's workspace stays out of it.
    other = thread_create(owner=owner, title="Other")
    objective_services.objective_set(thread=other, text="Something else")
    plan_services.todo_add(thread=other, text="Not ours")

    reading = selectors.workspace_reading_for(thread=thread)

    assert reading.objective_text == "Compare the two surveys"
    assert reading.preferences == [
        selectors.ShownPreference(pk=locked.pk, title='Cite "every" figure', subtitle="Peer-reviewed", kind="hard", locked=True),
        selectors.ShownPreference(pk=short.pk, title="Short sentences", subtitle="", kind="soft", locked=False),
    ]
    assert [(p.title, p.kind) for p in reading.preferences] == [
        (p.title, p.kind) for p in selectors.preferences_for(thread=thread)
    ]
    assert [(s.text, s.done, s.depth, s.number) for s in reading.todos] == [
        ("Gather", False, 0, "1"),
        ("Search", True, 1, "1.1"),
        ("Write", False, 0, "2"),
    ]
    assert reading.todos == selectors.plan_steps(thread=thread)
    assert all(type(step.done) is bool for step in reading.todos)
    document = Document.objects.get(thread=thread)
    assert (reading.document.title, reading.document.content) == ("Report", "Intro — *draft*.")
    assert (reading.document.version, reading.document.updated_at) == (document.version, document.updated_at)
    assert isinstance(reading.document.updated_at, datetime.datetime) and reading.document.updated_at.tzinfo is not None
    second = Artifact.objects.get(title="Second")
    assert reading.latest_artifact == selectors.ArtifactRow(id=second.pk, artifact_type="table", turn_index=1, title="Second")
    assert Preference.objects.filter(thread=thread).count() == 2 and Todo.objects.filter(thread=thread).count() == 3


# --- the document's history and diffs ------------------------------------------------------


def test_document_history_lists_every_version_newest_first_with_who_and_the_agents_turn(thread):
    from workspace.models import DocumentRevision
    from workspace.services import snapshots as snapshot_services

    document_services.document_save(
        thread=thread, title="Plan", content="one", base_version=0, author="person", person=thread.owner
    )
    snapshot_services.snapshot_capture(thread=thread, turn_index=1, user_message="Improve it")
    document_services.document_save(thread=thread, content="one, by the agent", base_version=1, author="agent")
    document_services.document_save(
        thread=thread, content="one, by the agent, and me", base_version=2, author="person", person=thread.owner
    )
    snapshot_services.snapshot_capture(thread=thread, turn_index=2, user_message="Again")
    document_services.document_save(thread=thread, content="final", base_version=3, author="agent")

    history = selectors.document_history(thread=thread)
    assert history.current_version == 4 and history.total == 4
    shown = [(v.version, v.author, v.author_label, v.turn_index, v.title) for v in history.versions]
    assert shown == [
        (4, "agent", "Agent", 2, "Plan"),
        (3, "person", "owner", None, "Plan"),
        (2, "agent", "Agent", 1, "Plan"),
        (1, "person", "owner", None, "Plan"),
    ]
    created = [v.created_at for v in history.versions]
    assert created == sorted(created, reverse=True)
    assert DocumentRevision.objects.filter(document__thread=thread).count() == 4


def test_document_history_lists_at_most_its_limit_and_counts_the_rest(thread):
    for version in range(5):
        document_services.document_save(thread=thread, title="T", content=f"v{version + 1}", base_version=version)
    history = selectors.document_history(thread=thread, limit=2)
    assert [v.version for v in history.versions] == [5, 4] and history.total == 5


def test_document_history_of_a_document_never_written_is_empty(thread):
    history = selectors.document_history(thread=thread)
    assert (history.current_version, history.versions, history.total) == (0, [], 0)


def test_document_diff_shows_what_changed_between_two_versions_either_way(thread):
    document_services.document_save(thread=thread, title="Plan", content="Intro.\nMethods are here.\n", base_version=0)
    document_services.document_save(thread=thread, title="Plan v2", content="Intro.\nBetter methods are here.\n", base_version=1)

    diff = selectors.document_diff(thread=thread, old_version=1, new_version=2)
    assert diff.title_changed and (diff.old_title, diff.new_title) == ("Plan", "Plan v2")
    changed = [row for row in diff.text.rows if getattr(row, "kind", "") == "changed"]
    assert [[(s.text, s.change) for s in row.segments] for row in changed] == [
        [("Methods", "removed"), ("Better methods", "added"), (" are here.", "same")]
    ]
    back = selectors.document_diff(thread=thread, old_version=2, new_version=1)
    assert (back.old_title, back.new_title) == ("Plan v2", "Plan")
    assert back.text.lines_changed == 1


def test_document_diff_of_a_version_with_itself_is_identical_and_from_version_0_is_all_added(thread):
    document_services.document_save(thread=thread, title="Plan", content="a\nb", base_version=0)
    assert selectors.document_diff(thread=thread, old_version=1, new_version=1).identical
    from_empty = selectors.document_diff(thread=thread, old_version=0, new_version=1)
    assert (from_empty.text.lines_added, from_empty.text.lines_removed) == (2, 0)
    assert from_empty.title_changed  # "Untitled" before the first save


def test_document_diff_of_a_version_not_kept_is_none(thread, other_user):
    document_services.document_save(thread=thread, title="Plan", content="a", base_version=0)
    assert selectors.document_diff(thread=thread, old_version=1, new_version=7) is None
    # Another thread's versions are not this thread's.
    theirs = thread_create(owner=other_user, title="Theirs")
    assert selectors.document_diff(thread=theirs, old_version=0, new_version=1) is None
