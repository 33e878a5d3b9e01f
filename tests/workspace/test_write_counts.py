"""The write counts read and raised in plain SQL (workspace.write_counts,
docs/adr/0133), on whichever database this pass runs (SQLite, or
PostgreSQL with DATABASE_URL set): they match the ORM, and the kept reading
(selectors.workspace_reading_current) equals a fresh reading after every
kind of write."""

import pytest
from django.db import connection, transaction

from conversations.admin import staff_set_preference_locked
from conversations.mcp_server import THREAD_FIELD, call_tool
from conversations.services import thread_soft_delete
from conversations.tokens import token_create
from workspace import selectors, write_counts
from workspace.models import DocumentRevision, Preference, Thread
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)

WHY = "Recording what you asked for."


def _orm_counts(thread_id):
    return Thread.objects.filter(pk=thread_id).values_list(*Thread.WRITE_COUNTS.values()).get()


def _fresh_is_kept(thread):
    kept = selectors.workspace_reading_current(thread=thread)
    fresh = selectors.workspace_reading_for(thread=thread)
    assert kept == fresh
    return kept


def test_the_plain_sql_read_matches_the_orm_for_uuid_and_string_ids(thread):
    plan_services.todos_add_outline(thread=thread, steps=[{"text": "A"}])
    preference_services.preferences_add(thread=thread, items=[{"title": "P", "kind": "soft"}], respect_lock=True)
    assert tuple(write_counts.read(thread.pk)) == _orm_counts(thread.pk)
    assert tuple(write_counts.read(str(thread.pk))) == _orm_counts(thread.pk)
    objective_services.objective_set(thread=thread, text="Goal")
    row = write_counts.read(thread.pk, with_objective=True)
    assert tuple(row[:5]) == _orm_counts(thread.pk) and row[5] == "Goal"
    assert selectors.surface_writes_of(thread.pk) == sum(_orm_counts(thread.pk))


def test_raise_counts_raises_only_the_named_surfaces_and_moves_the_activity_time(thread):
    before = Thread.objects.get(pk=thread.pk)
    write_counts.raise_counts(thread.pk, ("plan", "no-such-surface", "document"))
    after = Thread.objects.get(pk=thread.pk)
    assert after.plan_writes == before.plan_writes + 1 and after.document_writes == before.document_writes + 1
    assert after.preferences_writes == before.preferences_writes and after.objective_writes == before.objective_writes
    assert after.last_activity_at >= before.last_activity_at


def test_a_raise_rolled_back_with_its_transaction_is_not_counted(thread):
    before = _orm_counts(thread.pk)
    with pytest.raises(RuntimeError), transaction.atomic():
        write_counts.raise_counts(thread.pk, ("plan",))
        assert _orm_counts(thread.pk)[2] == before[2] + 1  # seen inside
        raise RuntimeError
    assert _orm_counts(thread.pk) == before


def test_a_hard_deleted_thread_reads_as_gone_and_is_raised_silently(thread):
    _fresh_is_kept(thread)
    pk = thread.pk
    Thread.objects.filter(pk=pk).delete()
    with pytest.raises(Thread.DoesNotExist):
        write_counts.read(pk)
    assert selectors.surface_writes_of(pk) == 0
    write_counts.raise_counts(pk, ("plan",))  # no row, no error
    with pytest.raises(Thread.DoesNotExist):
        selectors.workspace_reading_current(thread=Thread(pk=pk))
    assert selectors.workspace_reading_kept(thread=Thread(pk=pk)) is None


def test_a_soft_deleted_thread_still_counts_its_writes(thread):
    _fresh_is_kept(thread)
    thread_soft_delete(thread=thread)
    plan_services.todos_add_outline(thread=thread, steps=[{"text": "After"}])
    assert [s.text for s in _fresh_is_kept(thread).todos] == ["After"]


def test_every_kind_of_write_is_seen_by_the_kept_reading(thread, owner, staff):
    """Person edits, the agent's batch tools, a staff lock from the admin,
    MCP calls, the objective: after each, the kept reading equals a fresh one."""
    _fresh_is_kept(thread)
    preference_services.preferences_add(thread=thread, items=[{"title": "Tone", "kind": "soft"}], respect_lock=True)
    _fresh_is_kept(thread)
    staff_set_preference_locked(preference=Preference.objects.get(thread=thread), locked=True, staff_user=staff)
    assert [p.locked for p in _fresh_is_kept(thread).preferences] == [True]
    token = token_create(user=owner, name="Laptop")[0]
    result = call_tool(
        token, "add_todos", {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "steps": [{"text": "Via MCP"}]}
    )
    assert not result.is_error, result
    assert [s.text for s in _fresh_is_kept(thread).todos] == ["Via MCP"]
    result = call_tool(
        token,
        "append_to_document",
        {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "text": "Hello from MCP"},
    )
    assert not result.is_error, result
    assert "Hello from MCP" in _fresh_is_kept(thread).document.content
    document_services.document_save(
        thread=thread, title="Doc", content="Person text", base_version=None, author=DocumentRevision.Author.PERSON
    )
    _fresh_is_kept(thread)
    objective_services.objective_set(thread=thread, text="Goal")
    kept = selectors.workspace_reading_current(thread=thread, expected=("objective",))
    assert kept.objective_text == "Goal"
    _fresh_is_kept(thread)


def test_inside_a_transaction_the_reading_is_read_whole_and_never_kept(thread):
    _fresh_is_kept(thread)
    with pytest.raises(RuntimeError), transaction.atomic():
        plan_services.todos_add_outline(thread=thread, steps=[{"text": "Rolled back"}])
        assert [s.text for s in selectors.workspace_reading_current(thread=thread).todos] == ["Rolled back"]
        raise RuntimeError
    assert _fresh_is_kept(thread).todos == []


def test_the_statements_are_built_for_this_database(thread):
    sql = write_counts._select(connection.vendor, True)
    assert "conversations_thread" in sql and "%s" in sql
