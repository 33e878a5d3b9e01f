"""The staff admin of the workspace models (workspace.admin): snapshots and
the workspace contents are read-only."""

import html
import json

import pytest
from django.urls import reverse

from tests.support.admin import _change, _changelist
from workspace.models import Artifact, Document, DocumentRevision, Objective, Todo, WorkspaceSnapshot
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db


# --- snapshots are read-only ------------------------------------------------------


def test_snapshot_add_is_refused(staff_client, populated):
    add_url = reverse("admin:workspace_workspacesnapshot_add")
    assert staff_client.get(add_url).status_code == 403
    response = staff_client.post(add_url, {"thread": populated["thread"].pk, "turn_index": 9, "user_message": "x"})
    assert response.status_code == 403
    assert WorkspaceSnapshot.objects.count() == 1


def test_snapshot_change_post_is_refused_and_changes_nothing(staff_client, populated):
    snapshot = populated["snapshot"]
    response = staff_client.post(_change(snapshot), {"user_message": "rewritten history", "turn_index": 7})
    assert response.status_code == 403
    snapshot.refresh_from_db()
    assert snapshot.user_message == "Start the review"
    assert snapshot.turn_index == 1


def test_snapshot_delete_is_refused(staff_client, populated):
    snapshot = populated["snapshot"]
    delete_url = reverse("admin:workspace_workspacesnapshot_delete", args=[snapshot.pk])
    assert staff_client.post(delete_url, {"post": "yes"}).status_code == 403
    bulk = staff_client.post(
        _changelist(snapshot), {"action": "delete_selected", "_selected_action": [snapshot.pk], "post": "yes"}
    )
    assert bulk.status_code in (200, 302)
    assert WorkspaceSnapshot.objects.filter(pk=snapshot.pk).exists()


def test_snapshot_detail_shows_every_field_read_only_with_pretty_json(staff_client, populated):
    body = staff_client.get(_change(populated["snapshot"])).content.decode()
    for name in (
        "thread",
        "turn_index",
        "user_message",
        "objective_text",
        "document_title",
        "document_content",
        "preferences_json",
        "todos_json",
    ):
        assert f'name="{name}"' not in body
    assert "Start the review" in body
    assert "Write a literature review" in body
    assert "# Review" in body
    # Indented JSON, with the person's text escaped rather than rendered.
    assert "Cite &lt;b&gt;peer-reviewed&lt;/b&gt; work" in body
    assert "<b>peer-reviewed" not in body
    text = html.unescape(body)
    snapshot = populated["snapshot"]
    snapshot.refresh_from_db()  # key order as the database returns it (jsonb sorts keys)
    assert json.dumps(snapshot.preferences_json, indent=2) in text
    assert json.dumps(snapshot.todos_json, indent=2) in text
    assert '[\n  {\n    "' in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<script>alert(1)</script>" not in body
    assert 'name="_save"' not in body


# --- workspace contents are view-only ----------------------------------------------


@pytest.mark.parametrize("model", [Todo, Document, Artifact, Objective, DocumentRevision])
def test_workspace_contents_are_view_only(staff_client, populated, model):
    obj = model.objects.first()
    before = {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields}
    assert staff_client.post(_change(obj), {"text": "changed", "title": "changed", "content": "changed"}).status_code == 403
    obj.refresh_from_db()
    assert {f.attname: getattr(obj, f.attname) for f in model._meta.concrete_fields} == before


# --- document revisions ---------------------------------------------------------------


def test_document_page_lists_its_revisions_newest_first(staff_client, populated):
    document = populated["document"]
    document_services.document_save(thread=populated["thread"], content="Second <i>version</i>", base_version=1, author="agent")
    body = staff_client.get(_change(document)).content.decode()
    newest, oldest = DocumentRevision.objects.filter(document=document).order_by("-version")
    assert body.index(f">v{newest.version}</a>") < body.index(f">v{oldest.version}</a>")
    assert _change(newest) in body
    assert "Agent" in body and "System" in body
    assert 'name="revisions-0-title"' not in body  # read-only rows, no inputs


def test_revision_page_shows_its_text_escaped_and_read_only(staff_client, populated):
    revision = DocumentRevision.objects.get(document=populated["document"])
    body = staff_client.get(_change(revision)).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and "<script>alert(1)</script>" not in body
    assert 'name="content"' not in body and 'name="_save"' not in body
    assert staff_client.get(reverse("admin:workspace_documentrevision_add")).status_code == 403
    delete_url = reverse("admin:workspace_documentrevision_delete", args=[revision.pk])
    assert staff_client.post(delete_url, {"post": "yes"}).status_code == 403
    assert DocumentRevision.objects.filter(pk=revision.pk).exists()


# --- the plan's history (docs/adr/0090) ------------------------------------------


def test_staff_read_a_threads_plan_history_with_who_made_each_change(staff_client, populated, owner):
    from workspace.models import PlanChange
    from workspace.services import plan as plan_services

    thread = populated["thread"]
    owner.first_name, owner.last_name = "Ada", "Lovelace"
    owner.save()
    plan_services.todo_set_done(todo=populated["todo"], done=True, author="person", person=owner)
    entry = PlanChange.objects.filter(thread=thread).order_by("-id").first()

    listing = staff_client.get(_changelist(entry), {"thread__id__exact": thread.pk}).content.decode()
    detail = staff_client.get(_change(entry)).content.decode()

    assert html.escape("Ticked “Collect sources”") in listing and "Ada Lovelace" in listing
    assert html.escape("Ticked “Collect sources”") in detail and "Ada Lovelace" in detail and "owner" in detail


def test_staff_cannot_add_change_or_delete_a_plan_history_entry(staff_client, populated):
    from workspace.models import PlanChange

    entry = populated["plan_change"]
    before = PlanChange.objects.get(pk=entry.pk).summary

    assert staff_client.get(reverse("admin:workspace_planchange_add")).status_code == 403
    assert staff_client.post(_change(entry), {"summary": "Rewritten"}).status_code == 403
    assert staff_client.post(reverse("admin:workspace_planchange_delete", args=[entry.pk]), {"post": "yes"}).status_code == 403
    assert PlanChange.objects.get(pk=entry.pk).summary == before


# --- lists --------------------------------------------------------------------------


def test_snapshots_are_listed_most_recently_active_thread_first_then_by_turn(staff_client, owner):
    from datetime import timedelta

    from django.utils import timezone

    from conversations import services
    from workspace.models import Thread
    from workspace.services.snapshots import snapshot_capture

    # The busier thread has the larger id, so an order by id alone would list it last.
    quiet, busy = sorted((services.thread_create(owner=owner), services.thread_create(owner=owner)), key=lambda t: t.pk)
    for thread, name in ((busy, "busy"), (quiet, "quiet")):
        for turn in (1, 2):
            snapshot_capture(thread=thread, turn_index=turn, user_message=f"{name} message {turn}")
    now = timezone.now()
    Thread.objects.filter(pk=busy.pk).update(last_activity_at=now)
    Thread.objects.filter(pk=quiet.pk).update(last_activity_at=now - timedelta(days=1))
    page = staff_client.get(reverse("admin:workspace_workspacesnapshot_changelist")).content.decode()
    shown = [page.index(f"{name} message {turn}") for name in ("busy", "quiet") for turn in (1, 2)]
    assert shown == sorted(shown)


# --- at the sizes a day's work reaches ------------------------------------------------


def test_a_document_saved_all_day_lists_its_latest_versions_and_links_to_all(staff_client, populated):
    document, thread = populated["document"], populated["thread"]
    for n in range(2, 61):
        document_services.document_save(thread=thread, content=f"Version {n} of the text.", author="person")
    body = staff_client.get(_change(document)).content.decode()
    assert ">v60</a>" in body and ">v11</a>" in body
    assert ">v10</a>" not in body and ">v1</a>" not in body
    all_versions = _changelist(DocumentRevision) + f"?document__id__exact={document.pk}"
    assert f'<a href="{html.escape(all_versions)}">All 60 versions</a>' in body
    listed = staff_client.get(all_versions).content.decode()
    assert "60 document revisions" in listed


def test_the_lists_of_versions_and_artifacts_do_not_read_the_texts_and_data_they_do_not_show(staff_client, populated):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    document_services.document_save(thread=populated["thread"], content="word " * 40_000, author="person")
    Artifact.objects.create(
        thread=populated["thread"],
        artifact_type="table",
        title="Big table",
        payload={"columns": ["A"], "rows": [[n] for n in range(5_000)]},
    )
    for model in (DocumentRevision, Artifact, Document):
        with CaptureQueriesContext(connection) as queries:
            response = staff_client.get(_changelist(model))
        assert response.status_code == 200
        read = " ".join(query["sql"] for query in queries.captured_queries)
        assert '"workspace_document"."content",' not in read and '"workspace_document"."content" FROM' not in read
        assert '"workspace_artifact"."payload"' not in read
    assert ">200000<" in staff_client.get(_changelist(Document)).content.decode().replace(",", "")
