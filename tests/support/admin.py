"""The admin tests' rows (tests/workspace/test_admin.py and
tests/conversations/test_admin.py): one row of every model, written the way
the app writes them, and the admin URLs of a row. The fixture is made
available by tests/workspace/conftest.py and tests/conversations/conftest.py."""

import pytest
from django.urls import reverse

from conversations import services as conversation_services
from conversations.models import BranchLink, ModerationAction
from conversations.turns import slot
from workspace.models import Document, Objective, PlanChange
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services


@pytest.fixture
def populated(thread, owner, staff):
    """One row of every model, written the way the app writes them."""
    objective_services.objective_set(thread=thread, text="Write a literature review")
    hard = preferences_services.preference_add(
        thread=thread, title="Cite <b>peer-reviewed</b> work", kind="hard", respect_lock=False
    )
    soft = preferences_services.preference_add(thread=thread, title="Short paragraphs", kind="soft", respect_lock=False)
    step = plan_services.todo_add(thread=thread, text="Collect sources")
    plan_services.todo_add(thread=thread, text="Search databases", parent=step)
    document_services.document_save(thread=thread, title="Review", content="# Review\n\n<script>alert(1)</script>")
    artifact = artifacts_services.artifact_create(
        thread=thread,
        artifact_type="bar_chart",
        title="Papers per year",
        payload={"labels": ["2020"], "values": [3]},
        turn_index=1,
    )
    turn, snapshot = slot.turn_begin(thread=thread, user_message="Start the review")
    slot.turn_finish(thread=thread, turn_index=turn)
    feedback = conversation_services.feedback_add(thread=thread, user=owner, turn_index=1, rating=4, comment="useful")
    child = conversation_services.thread_create(owner=owner, title="Fork")
    branch = BranchLink.objects.create(thread=child, parent=thread, branch_point_turn=1, reason="try another angle")
    activity = conversation_services.activity_log(thread=thread, message="model warned", level="warning", turn_index=1)
    moderation = conversation_services.moderation_record(
        thread=thread, staff_user=staff, action=ModerationAction.Action.SOFT_DELETE, detail="spam"
    )
    thread.refresh_from_db()
    return {
        "thread": thread,
        "objective": Objective.objects.get(thread=thread),
        "hard": hard,
        "soft": soft,
        "todo": step,
        "plan_change": PlanChange.objects.filter(thread=thread).order_by("id").first(),
        "document": Document.objects.get(thread=thread),
        "artifact": artifact,
        "snapshot": snapshot,
        "feedback": feedback,
        "branch": branch,
        "activity": activity,
        "moderation": moderation,
    }


def _changelist(obj):
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_changelist")


def _change(obj):
    return reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
