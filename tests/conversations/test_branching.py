"""Forking a thread at a completed turn (conversations.branching, docs/adr/0014):
what the branch starts from, how its turns are numbered, what its agent sees,
what is refused, and that a failure in any phase leaves nothing behind.
Runs on SQLite, and on PostgreSQL with DATABASE_URL set."""

import uuid
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent import seeding
from agent.history import read_messages
from conversations import branching
from conversations.branch_cleanup import discard_abandoned_branches
from conversations.branching import BranchFailed, BranchRefused, fork_thread
from conversations.chat import chat_turns
from conversations.models import BranchLink, Turn
from conversations.turns import registry
from tests.support.fake_model import Reply, tool_call
from tests.support.turns import run_turn
from workspace.models import (
    Artifact,
    Document,
    DocumentRevision,
    Objective,
    Preference,
    Thread,
    Todo,
    WorkspaceSnapshot,
)
from workspace.selectors import Access, thread_for_user, threads_for_user
from workspace.services.document import document_save
from workspace.services.preferences import preference_add

pytestmark = pytest.mark.django_db(transaction=True)

fork = database_sync_to_async(fork_thread)


def _chart(title):
    return tool_call("chart_generator", f"Charting {title}.", chart_type="bar", title=title, data=[{"name": "Q1", "value": 1}])


async def _two_turns(thread, script):
    """Turn 1: the agent sets the objective, a preference, a plan step and a
    chart; the person then edits the document and adds a preference; turn 2:
    the agent changes the objective and adds a second chart."""
    script(
        Reply(
            tool_calls=[
                tool_call("set_objective", "Noting the goal.", text="Goal after turn one"),
                tool_call("add_preferences", "Recording a rule.", items=[{"title": "Short", "kind": "soft"}]),
                tool_call("add_todos", "Planning.", steps=[{"text": "Outline", "depth": 0}, {"text": "Intro", "depth": 1}]),
                _chart("First chart"),
            ]
        ),
        Reply(text="Answer one."),
        Reply(tool_calls=[tool_call("set_objective", "New goal.", text="Goal after turn two"), _chart("Second chart")]),
        Reply(text="Answer two."),
        default=Reply(text="Branch answer."),
    )
    await run_turn(thread, "first message")
    await database_sync_to_async(document_save)(thread=thread, title="Draft", content="Person's text\n")
    await database_sync_to_async(preference_add)(thread=thread, title="British English", kind="hard", respect_lock=False)
    await run_turn(thread, "second message")


def _source_state(thread):
    """Everything of the source a fork could touch."""
    thread = Thread.objects.get(pk=thread.pk)
    return {
        "thread": (thread.title, thread.turn_index, thread.is_deleted),
        "objective": Objective.objects.get(thread=thread).text,
        "preferences": list(Preference.objects.filter(thread=thread).values_list("title", "kind", "position")),
        "todos": list(Todo.objects.filter(thread=thread).values_list("text", "depth", "position")),
        "document": Document.objects.filter(thread=thread).values_list("title", "content", "version").first(),
        "artifacts": list(Artifact.objects.filter(thread=thread).values_list("title", "turn_index")),
        "snapshots": WorkspaceSnapshot.objects.filter(thread=thread).count(),
        "turns": list(Turn.objects.filter(thread=thread).values_list("index", "status", "answer")),
        "messages": [m.content for m in read_messages(thread.pk)],
    }


def _rows_of(thread):
    return {
        "objective": Objective.objects.filter(thread=thread).values_list("text", flat=True).first(),
        "preferences": list(
            Preference.objects.filter(thread=thread).order_by("position").values_list("title", "kind", "position")
        ),
        "todos": list(Todo.objects.filter(thread=thread).order_by("position").values_list("text", "depth", "position")),
        "document": Document.objects.filter(thread=thread).values_list("title", "content").first(),
        "artifacts": list(Artifact.objects.filter(thread=thread).order_by("id").values_list("title", "turn_index")),
    }


async def test_a_branch_at_an_earlier_turn_starts_from_the_workspace_the_next_turn_saw(owner, thread, script):
    await _two_turns(thread, script)
    before = await database_sync_to_async(_source_state)(thread)

    branch = await fork(source=thread, turn_index=1, user=owner, reason="try another way")

    rows = await database_sync_to_async(_rows_of)(branch)
    # Snapshot 2: the agent's turn-1 work plus the person's edits before turn 2.
    assert rows == {
        "objective": "Goal after turn one",
        "preferences": [("British English", "hard", 0), ("Short", "soft", 1)],
        "todos": [("Outline", 0, 0), ("Intro", 1, 1)],
        "document": ("Draft", "Person's text\n"),
        "artifacts": [("First chart", 1)],
    }
    assert (branch.owner_id, branch.title, branch.turn_index, branch.is_deleted) == (
        owner.pk,
        "Lit review (branch from turn 1)",
        1,
        False,
    )
    link = await database_sync_to_async(BranchLink.objects.get)(thread=branch)
    assert (link.parent_id, link.branch_point_turn, link.status, link.reason) == (
        thread.pk,
        1,
        BranchLink.Status.ACTIVE,
        "try another way",
    )
    assert await database_sync_to_async(_source_state)(thread) == before


async def test_a_branch_at_the_latest_turn_copies_the_live_workspace(owner, thread, script):
    await _two_turns(thread, script)
    await database_sync_to_async(document_save)(thread=thread, content="Edited after turn two\n")

    branch = await fork(source=thread, turn_index=2, user=owner)

    rows = await database_sync_to_async(_rows_of)(branch)
    assert rows["objective"] == "Goal after turn two"
    assert rows["document"] == ("Draft", "Edited after turn two\n")
    assert rows["artifacts"] == [("First chart", 1), ("Second chart", 2)]
    assert branch.turn_index == 2


async def test_a_branch_keeps_the_model_chosen_in_its_parent(owner, thread, script):
    await _two_turns(thread, script)
    await database_sync_to_async(Thread.objects.filter(pk=thread.pk).update)(chat_model="scripted-other")
    branch = await fork(source=thread, turn_index=2, user=owner)
    assert (await database_sync_to_async(Thread.objects.get)(pk=branch.pk)).chat_model == "scripted-other"


async def test_the_branch_shows_turns_up_to_the_branch_point_and_its_next_turn_is_numbered_on(owner, thread, script):
    await _two_turns(thread, script)
    branch = await fork(source=thread, turn_index=1, user=owner)

    shown = await database_sync_to_async(chat_turns)(thread=branch)
    assert [(t["turn_index"], t["user_message"], t["answer_html"].strip()) for t in shown] == [
        (1, "first message", "<p>Answer one.</p>")
    ]
    assert [s.text for s in shown[0]["steps"]] == [
        "Noting the goal.",
        "Recording a rule.",
        "Planning.",
        "Charting First chart.",
    ]

    model = script.model
    assert await run_turn(branch, "a different second message") == 2
    await database_sync_to_async(branch.refresh_from_db)()
    await database_sync_to_async(thread.refresh_from_db)()
    sent = [m for m in model.requests[-1] if m.type != "system"]
    humans = [m.content for m in sent if isinstance(m, HumanMessage)]
    assert humans == ["first message", "a different second message"]
    assert "Answer one." in [m.content for m in sent if isinstance(m, AIMessage)]
    assert "Answer two." not in [m.content for m in sent if isinstance(m, AIMessage)]
    shown = await database_sync_to_async(chat_turns)(thread=branch)
    assert [(t["turn_index"], t["answer_html"].strip()) for t in shown] == [
        (1, "<p>Answer one.</p>"),
        (2, "<p>Branch answer.</p>"),
    ]
    turn_two = await database_sync_to_async(Turn.objects.get)(thread=branch, index=2)
    assert turn_two.status == Turn.Status.COMPLETE
    # The source still has its own turn 2.
    source_turns = await database_sync_to_async(chat_turns)(thread=thread)
    assert [(t["turn_index"], t["answer_html"].strip()) for t in source_turns] == [
        (1, "<p>Answer one.</p>"),
        (2, "<p>Answer two.</p>"),
    ]


async def test_the_seeded_history_is_the_prefix_with_every_tool_call_answered(owner, thread, script):
    await _two_turns(thread, script)
    branch = await fork(source=thread, turn_index=1, user=owner)

    messages = await database_sync_to_async(read_messages)(branch.pk)
    source = await database_sync_to_async(read_messages)(thread.pk)
    second = next(i for i, m in enumerate(source) if isinstance(m, HumanMessage) and m.content == "second message")
    assert [m.id for m in messages] == [m.id for m in source[:second]]
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    assert calls and calls == {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}


async def test_a_branch_before_the_first_turn_has_no_history_and_the_first_turns_workspace(owner, thread, script):
    await database_sync_to_async(document_save)(thread=thread, content="Before anything\n")
    await _two_turns(thread, script)
    branch = await fork(source=thread, turn_index=0, user=owner)

    rows = await database_sync_to_async(_rows_of)(branch)
    assert rows["document"] == ("Untitled", "Before anything\n")
    assert rows["objective"] is None and rows["artifacts"] == [] and rows["preferences"] == []
    assert branch.turn_index == 0
    assert not await database_sync_to_async(seeding.has_history)(branch.pk)
    assert await database_sync_to_async(chat_turns)(thread=branch) == []


async def test_branches_of_branches_keep_the_numbering(owner, thread, script):
    await _two_turns(thread, script)
    branch = await fork(source=thread, turn_index=1, user=owner)
    await run_turn(branch, "branch turn two")
    grandchild = await fork(source=branch, turn_index=2, user=owner)
    shown = await database_sync_to_async(chat_turns)(thread=grandchild)
    assert [(t["turn_index"], t["user_message"]) for t in shown] == [(1, "first message"), (2, "branch turn two")]
    assert grandchild.turn_index == 2


async def test_a_turn_a_branch_shows_from_before_its_branch_point_branches_like_it_does_where_it_ran(owner, thread, script):
    """Regenerate, Edit and "Continue from here" on an inherited turn: its
    snapshot is in the thread it ran in, reached through the branch links
    (a branch of a branch, and a thread between deleted, included)."""
    await _two_turns(thread, script)
    await run_turn(thread, "third message")
    child = await fork(source=thread, turn_index=2, user=owner)
    await run_turn(child, "child turn three")
    grandchild = await fork(source=child, turn_index=3, user=owner)
    expected = await database_sync_to_async(_rows_of)(await fork(source=thread, turn_index=1, user=owner))

    made = await fork(source=grandchild, turn_index=1, user=owner)
    assert await database_sync_to_async(_rows_of)(made) == expected
    # The thread between them deleted: the turn is still the grandchild's history.
    await Thread.objects.filter(pk=child.pk).aupdate(is_deleted=True)
    made = await fork(source=grandchild, turn_index=1, user=owner)
    assert await database_sync_to_async(_rows_of)(made) == expected
    shown = await database_sync_to_async(chat_turns)(thread=made)
    assert [(t["turn_index"], t["user_message"]) for t in shown] == [(1, "first message")]


def _histories(thread):
    from workspace.models import DocumentRevision, ObjectiveRevision

    return {
        "document": list(
            DocumentRevision.objects.filter(document__thread=thread)
            .order_by("version")
            .values_list("version", "author", "person_username", "turn_index")
        ),
        "objective": list(
            ObjectiveRevision.objects.filter(thread=thread).order_by("id").values_list("text", "author", "person_username")
        ),
    }


def test_a_branch_keeps_who_wrote_its_document_and_objective_up_to_where_it_starts(owner, other_user, thread, client):
    """The editor writes the report and the objective between turns; the
    owner branches after turn 2: the branch's histories are the source's up
    to there, each entry by its person, and its History page names them."""
    from conversations.sharing import thread_member_add
    from conversations.turns import slot
    from workspace.services.objective import objective_set

    other_user.first_name, other_user.last_name = "Bea", "Smith"
    other_user.save()
    thread_member_add(thread=thread, who=other_user.username, role="editor", by=owner)
    for n in (1, 2, 3):
        index, _ = slot.turn_begin(thread=Thread.objects.get(pk=thread.pk), user_message=f"message {n}", person=owner)
        slot.turn_finish(thread=thread, turn_index=index, answer="ok")
        document_save(thread=thread, title="Report", content=f"Bea's report, draft {n}\n", author="person", person=other_user)
        objective_set(thread=thread, text=f"Bea's goal {n}", author="person", person=other_user)

    branch = fork_thread(source=Thread.objects.get(pk=thread.pk), turn_index=2, user=owner)

    bea = other_user.username
    assert _histories(branch) == {
        "document": [(1, "person", bea, 1), (2, "person", bea, 2)],
        "objective": [("Bea's goal 1", "person", bea), ("Bea's goal 2", "person", bea)],
    }
    assert Document.objects.get(thread=branch).version == 2
    client.force_login(owner)
    history = client.get(f"/threads/{branch.pk}/workspace/document/history/").content.decode()
    assert "Bea Smith" in history and "System" not in history
    # The source is untouched, and the branch writes on from there.
    assert len(_histories(thread)["document"]) == 3
    saved = document_save(thread=branch, title="Report", content="The branch's own draft\n", base_version=2)
    assert saved.document.version == 3 and not saved.merged


def test_a_branch_whose_source_history_is_older_than_its_text_ends_it_with_that_text(owner, thread):
    """A thread whose document was written without a revision (an older
    one, a data migration): the branch's history says where its text came from."""
    from conversations.turns import slot

    index, _ = slot.turn_begin(thread=thread, user_message="message")
    slot.turn_finish(thread=thread, turn_index=index, answer="ok")
    document_save(thread=thread, title="Report", content="First draft\n")
    Document.objects.filter(thread=thread).update(content="Written outside the history\n")

    branch = fork_thread(source=Thread.objects.get(pk=thread.pk), turn_index=1, user=owner)

    assert _histories(branch)["document"] == [(1, "system", "", 1), (2, "system", "", 1)]
    assert Document.objects.get(thread=branch).content == "Written outside the history\n"


REVIEWED_BEFORE = "# Report\n\nThe first paragraph, as the person wrote it.\n\nA middle paragraph.\n\nThe last one, also theirs."
REVIEWED_AFTER = "# Report\n\nThe opening, rewritten by the agent.\n\nA middle paragraph.\n\nThe closing, rewritten too."


def _ended_turn(thread, owner, *, agent_text=None):
    from conversations.turns import slot

    index, _ = slot.turn_begin(thread=Thread.objects.get(pk=thread.pk), user_message="A message", person=owner)
    if agent_text is not None:
        document_save(thread=thread, title="Report", content=agent_text, author="agent", person=owner)
    slot.turn_finish(thread=thread, turn_index=index, answer="ok")


@pytest.mark.parametrize("answered", ["before the next turn", "after it"])
def test_a_branch_keeps_the_review_answers_its_text_has_and_only_those(owner, thread, answered):
    """Turn 1's agent rewrote two paragraphs; the person undoes the first
    change in the source, before turn 2 or after it. A branch at turn 1
    starts from the text turn 2 saw: with the undo when it was made before
    turn 2, without it (both changes offered again) when it was made after."""
    from workspace.selectors import document_review
    from workspace.services import review as review_services

    document_save(thread=thread, title="Report", content=REVIEWED_BEFORE, author="person", person=owner)
    _ended_turn(thread, owner, agent_text=REVIEWED_AFTER)
    if answered == "after it":
        _ended_turn(thread, owner)
    review_services.review_undo(thread=Thread.objects.get(pk=thread.pk), turn_index=1, hunk=0, person=owner)
    if answered == "before the next turn":
        _ended_turn(thread, owner)

    branch = fork_thread(source=Thread.objects.get(pk=thread.pk), turn_index=1, user=owner)

    review = document_review(thread=branch)
    content = Document.objects.get(thread=branch).content
    if answered == "after it":
        assert content == REVIEWED_AFTER
        assert (review.undone, len(review.hunks)) == (0, 2)
    else:
        assert "The first paragraph, as the person wrote it." in content
        assert (review.undone, len(review.hunks)) == (1, 1)


def test_a_branch_left_on_its_own_by_a_deleted_parent_shows_no_versions_of_the_threads_it_came_from(owner, other_user, client):
    """Its turn 2 ran in the thread it came from, where a sibling ran another
    turn 2: once the parent between them is deleted, the arrows linked a
    viewer the branch was shared with to threads they cannot open."""
    from conversations.services import thread_create, thread_soft_delete
    from conversations.sharing import thread_member_add

    root = thread_create(owner=owner, title="Root")
    for _ in range(3):
        _ended_turn(root, owner)
    middle = fork_thread(source=Thread.objects.get(pk=root.pk), turn_index=2, user=owner)
    _ended_turn(middle, owner)
    child = fork_thread(source=Thread.objects.get(pk=middle.pk), turn_index=3, user=owner)
    sibling = fork_thread(source=Thread.objects.get(pk=root.pk), turn_index=1, user=owner)
    _ended_turn(sibling, owner)
    thread_soft_delete(thread=Thread.objects.get(pk=middle.pk))
    thread_member_add(thread=child, who=other_user.username, role="viewer", by=owner)

    client.force_login(other_user)
    page = client.get(f"/threads/{child.pk}/workspace/").content.decode()
    assert str(root.pk) not in page and str(sibling.pk) not in page
    client.force_login(owner)
    page = client.get(f"/threads/{root.pk}/workspace/").content.decode()
    assert str(sibling.pk) in page  # the family that is still one keeps its arrows


# -- refusals --


async def test_another_persons_thread_is_refused(owner, other_user, thread, script):
    await _two_turns(thread, script)
    with pytest.raises(BranchRefused, match="does not exist or is not yours"):
        await fork(source=thread, turn_index=1, user=other_user)
    assert await database_sync_to_async(Thread.objects.count)() == 1


@pytest.mark.parametrize("turn_index", [-1, 3, 99])
async def test_a_turn_that_did_not_happen_is_refused(owner, thread, script, turn_index):
    await _two_turns(thread, script)
    with pytest.raises(BranchRefused, match=f"Turn {turn_index} does not exist"):
        await fork(source=thread, turn_index=turn_index, user=owner)
    assert await database_sync_to_async(Thread.objects.count)() == 1


async def test_a_thread_without_turns_is_refused(owner, thread):
    with pytest.raises(BranchRefused, match="no turns yet"):
        await fork(source=thread, turn_index=0, user=owner)


async def test_a_running_turn_is_refused_but_the_turn_before_it_can_be_branched(owner, thread, script):
    script(Reply(text="Answer one."), Reply(text="slow " * 40, token_delay=0.05))
    await run_turn(thread, "first message")
    await registry.start_turn(thread=thread, user_message="second message")
    with pytest.raises(BranchRefused, match="Turn 2 is still running"):
        await fork(source=thread, turn_index=2, user=owner)
    branch = await fork(source=thread, turn_index=1, user=owner)
    assert branch.turn_index == 1
    await registry.request_stop(thread=thread)
    await registry.wait_for_turn(thread.pk)


async def test_a_deleted_thread_or_a_pending_branch_cannot_be_branched(owner, thread, script):
    await _two_turns(thread, script)
    thread.is_deleted = True
    await database_sync_to_async(thread.save)()
    with pytest.raises(BranchRefused, match="not yours"):
        await fork(source=thread, turn_index=1, user=owner)


def test_it_refuses_to_run_inside_a_transaction(owner, thread):
    from django.db import transaction

    with transaction.atomic(), pytest.raises(RuntimeError):
        fork_thread(source=thread, turn_index=0, user=owner)


# -- failures: the compensating cleanup --


def _all_rows():
    return {
        model.__name__: model.objects.count()
        for model in (Thread, BranchLink, Document, Objective, Preference, Todo, Artifact, Turn, WorkspaceSnapshot)
    }


class Injected(Exception):
    pass


@pytest.fixture
def seeded_ids(monkeypatch):
    """The checkpointer threads the forks seed (the real seeding, recorded)."""
    ids = []
    real = branching.seed_history

    def recording(thread_id, messages):
        ids.append(thread_id)
        real(thread_id, messages)

    monkeypatch.setattr(branching, "seed_history", recording)
    return ids


async def _assert_nothing_left(thread, before, seeded_ids):
    assert await database_sync_to_async(_all_rows)() == before
    for thread_id in seeded_ids:
        assert not await database_sync_to_async(seeding.has_history)(thread_id)
    assert [t.pk for t in await database_sync_to_async(threads_for_user)(user=thread.owner)] == [thread.pk]


async def test_a_failure_writing_the_rows_leaves_nothing(owner, thread, script, monkeypatch, seeded_ids):
    await _two_turns(thread, script)
    before = await database_sync_to_async(_all_rows)()

    def failing_copy(**kwargs):
        raise Injected("disk full")

    monkeypatch.setattr(branching, "workspace_copy", failing_copy)
    with pytest.raises(BranchFailed, match="nothing was changed"):
        await fork(source=thread, turn_index=1, user=owner)
    await _assert_nothing_left(thread, before, seeded_ids)
    assert seeded_ids == []


async def test_a_failure_seeding_the_checkpointer_removes_the_rows_and_the_checkpoint(
    owner, thread, script, monkeypatch, seeded_ids
):
    await _two_turns(thread, script)
    before = await database_sync_to_async(_all_rows)()
    real = branching.seed_history

    def seed_then_fail(thread_id, messages):
        real(thread_id, messages)  # the checkpoint is written, then the phase fails
        assert seeding.has_history(thread_id)
        raise Injected("connection lost")

    monkeypatch.setattr(branching, "seed_history", seed_then_fail)
    with pytest.raises(BranchFailed):
        await fork(source=thread, turn_index=1, user=owner)
    monkeypatch.undo()
    await _assert_nothing_left(thread, before, seeded_ids)


async def test_a_failure_activating_removes_the_rows_and_the_checkpoint(owner, thread, script, monkeypatch, seeded_ids):
    await _two_turns(thread, script)
    before = await database_sync_to_async(_all_rows)()
    pending = []

    def failing_activate(*, new_id):
        # What a reader sees before phase 3: the pending branch is nowhere.
        assert BranchLink.objects.get(thread_id=new_id).status == BranchLink.Status.PENDING
        assert thread_for_user(user=owner, thread_id=new_id, level=Access.VIEW) is None
        assert [t.pk for t in threads_for_user(user=owner)] == [thread.pk]
        pending.append(new_id)
        raise Injected("database went away")

    monkeypatch.setattr(branching, "activate", failing_activate)
    with pytest.raises(BranchFailed):
        await fork(source=thread, turn_index=1, user=owner)
    assert pending and seeded_ids == pending
    await _assert_nothing_left(thread, before, seeded_ids)


async def test_a_history_that_cannot_be_cut_is_refused_and_leaves_nothing(owner, thread, script, seeded_ids):
    await _two_turns(thread, script)
    before = await database_sync_to_async(_all_rows)()
    dangling = [HumanMessage(content="x"), AIMessage(content="", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])]
    with pytest.raises(seeding.HistoryNotSplittable):
        seeding.history_prefix(dangling, through_turn=1)
    assert seeding.history_prefix(dangling, through_turn=0) == []
    assert await database_sync_to_async(_all_rows)() == before


# -- a fork its server died in the middle of --


def _half_made_branch(source, owner):
    """What a server killed between phases 2 and 3 leaves: pending rows and a seeded checkpoint."""
    new_id = uuid.uuid4()
    branching.write_pending_rows(new_id=new_id, source=source, turn_index=1, user=owner, reason="")
    branching.seed_checkpointer(new_id=new_id, source=source, turn_index=1)
    return new_id


async def test_a_branch_left_half_made_by_a_dead_server_is_swept_once_it_is_old(owner, thread, script):
    await _two_turns(thread, script)
    kept = await fork(source=thread, turn_index=1, user=owner)
    before = await database_sync_to_async(_all_rows)()
    new_id = await database_sync_to_async(_half_made_branch)(thread, owner)
    assert await database_sync_to_async(seeding.has_history)(new_id)
    now = timezone.now()

    # Younger than any fork could take to finish: left alone.
    assert await database_sync_to_async(discard_abandoned_branches)(now=now + timedelta(minutes=4)) == 0
    assert await database_sync_to_async(BranchLink.objects.filter(thread_id=new_id).exists)()

    assert await database_sync_to_async(discard_abandoned_branches)(now=now + timedelta(minutes=6)) == 1
    assert await database_sync_to_async(_all_rows)() == before
    assert not await database_sync_to_async(seeding.has_history)(new_id)
    # The source and the finished branch are untouched.
    assert await database_sync_to_async(seeding.has_history)(kept.pk)
    listed = {t.pk for t in await database_sync_to_async(threads_for_user)(user=owner)}
    assert listed == {thread.pk, kept.pk}


@pytest.mark.parametrize(
    "parent, kwargs, title",
    [
        ("Lit review", {"turn_index": 3}, "Lit review (branch from turn 3)"),
        ("Lit review", {"turn_index": 0}, "Lit review (branch from the start)"),
        ("Lit review", {"turn_index": 3, "regenerated": True}, "Lit review (turn 4 regenerated)"),
        ("Lit review", {"turn_index": 1, "message": "  Compare   the two\nsurveys "}, "Compare the two surveys"),
        # A branch of a branch says where it starts, once.
        ("Lit review (branch from turn 3)", {"turn_index": 5}, "Lit review (branch from turn 5)"),
        ("Lit review (turn 2 regenerated)", {"turn_index": 4, "regenerated": True}, "Lit review (turn 5 regenerated)"),
        # The second branch at a turn (and the third, …) says which it is.
        ("Lit review", {"turn_index": 3, "number": 2}, "Lit review (branch 2 from turn 3)"),
        ("Lit review", {"turn_index": 0, "number": 3}, "Lit review (branch 3 from the start)"),
        ("Lit review", {"turn_index": 3, "regenerated": True, "number": 2}, "Lit review (turn 4 regenerated, take 2)"),
        ("Lit review", {"turn_index": 1, "message": "Compare them", "number": 2}, "Compare them (2)"),
        ("Lit review (branch 2 from turn 3)", {"turn_index": 5}, "Lit review (branch from turn 5)"),
        ("Lit review (turn 4 regenerated, take 2)", {"turn_index": 5, "number": 2}, "Lit review (branch 2 from turn 5)"),
    ],
)
def test_a_branch_is_titled_by_where_it_starts(parent, kwargs, title):
    assert branching.branch_title(parent, **kwargs) == title


def test_a_long_title_is_shortened_to_keep_where_the_branch_starts():
    title = branching.branch_title("x" * 200, turn_index=12)
    assert len(title) == 200 and title.endswith("… (branch from turn 12)")


def _ended_turns(thread, count):
    from conversations.turns import slot

    for n in range(1, count + 1):
        index, _ = slot.turn_begin(thread=Thread.objects.get(pk=thread.pk), user_message=f"message {n}")
        slot.turn_finish(thread=thread, turn_index=index, answer="ok")


def _titles(threads):
    return [Thread.objects.get(pk=t.pk).title for t in threads]


def test_every_branch_the_owner_makes_at_one_turn_has_a_title_of_its_own(owner, thread):
    """The thread list tells forks of one turn apart: the first keeps the
    title it always had, the next ones say which they are, and a number a
    sibling's title still has is not given again (docs/adr/0156)."""
    _ended_turns(thread, 2)
    source = Thread.objects.get(pk=thread.pk)
    first, second = (fork_thread(source=source, turn_index=1, user=owner) for _ in range(2))
    other_turn = fork_thread(source=source, turn_index=2, user=owner)
    assert _titles([first, second, other_turn]) == [
        "Lit review (branch from turn 1)",
        "Lit review (branch 2 from turn 1)",
        "Lit review (branch from turn 2)",
    ]
    # The first is renamed to what the third would be called: the third skips it.
    Thread.objects.filter(pk=first.pk).update(title="Lit review (branch 3 from turn 1)")
    third = fork_thread(source=source, turn_index=1, user=owner)
    fourth = fork_thread(source=source, turn_index=1, user=owner)
    assert _titles([third, fourth]) == ["Lit review (branch from turn 1)", "Lit review (branch 4 from turn 1)"]


@pytest.mark.postgresql_pass
def test_two_forks_of_one_turn_made_at_the_same_moment_get_two_titles(owner, thread, monkeypatch):
    """Two servers fork turn 1 at once: the second waits for the first's
    rows (the family's lock) and numbers itself after them."""
    import threading

    from django.db import connections

    _ended_turns(thread, 1)
    inside, go = threading.Event(), threading.Event()
    real_copy = branching.workspace_copy

    def first_one_waits(**kwargs):
        if not inside.is_set():
            inside.set()
            go.wait(10)
        return real_copy(**kwargs)

    monkeypatch.setattr(branching, "workspace_copy", first_one_waits)
    made = {}

    def fork_at_once(key):
        try:
            made[key] = fork_thread(source=Thread.objects.get(pk=thread.pk), turn_index=1, user=owner)
        finally:
            connections.close_all()

    first = threading.Thread(target=fork_at_once, args=("first",))
    first.start()
    assert inside.wait(10)  # the first fork has its title and holds the locks
    second = threading.Thread(target=fork_at_once, args=("second",))
    second.start()
    second.join(0.5)
    assert second.is_alive()  # waiting for the first's locks
    go.set()
    first.join(10)
    second.join(10)
    assert sorted(_titles([made["first"], made["second"]])) == [
        "Lit review (branch 2 from turn 1)",
        "Lit review (branch from turn 1)",
    ]


def _plan_history(thread):
    from workspace.models import PlanChange

    return list(
        PlanChange.objects.filter(thread=thread)
        .order_by("id")
        .values_list("summary", "author", "turn_index", "person_id", "person_username", "created_at")
    )


async def test_a_branch_carries_the_plan_history_up_to_where_it_starts(owner, other_user, thread, script):
    """docs/adr/0090: the changes that made the plan the branch starts from,
    with who made them and when, and none made after that point."""
    from workspace.services import plan as plan_services

    script(
        Reply(
            tool_calls=[
                tool_call("add_todos", "Planning.", steps=[{"text": "Outline", "depth": 0}, {"text": "Intro", "depth": 1}])
            ]
        ),
        Reply(text="Answer one."),
        Reply(tool_calls=[tool_call("toggle_todos", "Ticking.", indices=[1])]),
        Reply(text="Answer two."),
    )
    await run_turn(thread, "first message")
    intro = await database_sync_to_async(Todo.objects.get)(thread=thread, text="Intro")
    await database_sync_to_async(plan_services.todo_set_done)(todo=intro, done=True, author="person", person=other_user)
    await run_turn(thread, "second message")
    await database_sync_to_async(plan_services.todo_add)(thread=thread, text="After turn two", author="person", person=owner)
    source = await database_sync_to_async(_plan_history)(thread)
    assert [(summary, turn) for summary, _author, turn, *_ in source] == [
        ("Added 2 steps: “Outline”, “Intro”", 1),
        ("Ticked “Intro”", 1),
        ("Ticked “Outline”", 2),
        ("Added “After turn two”", 2),
    ]

    at_one = await fork(source=thread, turn_index=1, user=owner)
    at_two = await fork(source=thread, turn_index=2, user=owner)

    assert await database_sync_to_async(_plan_history)(at_one) == source[:2]
    assert await database_sync_to_async(_plan_history)(at_two) == source
    # The plan each starts from is the one those changes made.
    todos = Todo.objects.filter(thread=at_one).order_by("position").values_list("text", "done")
    assert await database_sync_to_async(list)(todos) == [("Outline", False), ("Intro", True)]
    assert await database_sync_to_async(_plan_history)(thread) == source  # the source is only read


def _artifact_times(thread):
    return list(Artifact.objects.filter(thread=thread).order_by("id").values_list("title", "turn_index", "created_at"))


async def test_a_branchs_artifacts_keep_the_times_they_were_made(owner, thread, script):
    """The owner's branch lists each chart it starts with as made when the
    source's agent made it, not when the branch was made, as its plan
    history and turns keep their times; the branch's archive says so too."""
    from conversations.archive import thread_archive

    await _two_turns(thread, script)
    made = {"First chart": timezone.now() - timedelta(days=3), "Second chart": timezone.now() - timedelta(days=2)}
    for title, at in made.items():
        await database_sync_to_async(Artifact.objects.filter(thread=thread, title=title).update)(created_at=at)

    branch = await fork(source=thread, turn_index=2, user=owner)

    assert await database_sync_to_async(_artifact_times)(branch) == [
        ("First chart", 1, made["First chart"]),
        ("Second chart", 2, made["Second chart"]),
    ]
    archived = await database_sync_to_async(lambda: thread_archive(Thread.objects.get(pk=branch.pk)))()
    assert [(a["title"], a["at"]) for a in archived["workspace"]["artifacts"]] == [
        (title, at.isoformat()) for title, at in made.items()
    ]


async def test_a_branchs_document_was_last_changed_when_its_text_was_written(owner, thread, script):
    """A branch whose text is the source's newest version says the document
    was changed when that version was written (the agent reads the date, the
    Word export states it), not at the fork."""
    await _two_turns(thread, script)
    written = timezone.now() - timedelta(days=2)
    await database_sync_to_async(DocumentRevision.objects.filter(document__thread=thread).update)(created_at=written)

    branch = await fork(source=thread, turn_index=2, user=owner)

    document = await database_sync_to_async(Document.objects.get)(thread=branch)
    assert (document.content, document.updated_at) == ("Person's text\n", written)


async def test_a_turn_cut_off_mid_step_leaves_the_thread_branchable_and_its_archive_importable(owner, thread, script):
    """A server that stops after its grace period cancels a turn in the
    middle of a tool call: the call keeps no result. The next turn runs (its
    model is sent the call as unfinished); branching at any later turn, and
    importing the thread's archive, complete it the same way instead of
    refusing "the history of turn 2 is incomplete" for good."""
    import asyncio

    from langchain_core.tools import tool

    from conversations.archive import archive_bytes, import_archive

    @tool
    async def slow_step(topic: str, action_and_reasoning: str) -> str:
        """Takes a long time (stands in for a slow tool)."""
        await asyncio.sleep(30)
        return "done"

    script(
        Reply(tool_calls=[tool_call("slow_step", "Taking a while.", topic="sources")]),
        Reply(text="The second turn's answer."),
        extra_tools=[slow_step],
    )
    await registry.start_turn(thread=thread, user_message="first")
    for _ in range(100):
        if any(getattr(m, "tool_calls", None) for m in await database_sync_to_async(read_messages)(thread.pk)):
            break
        await asyncio.sleep(0.05)
    # What registry.stop_all_turns does to a turn still running when the grace period ends.
    running = registry._running[thread.pk]
    running.task.cancel()
    await asyncio.wait((running.task,), timeout=5)
    await run_turn(thread, "second")

    branch = await database_sync_to_async(fork_thread)(source=thread, turn_index=2, user=owner)
    imported = await database_sync_to_async(import_archive)(raw=await database_sync_to_async(archive_bytes)(thread), owner=owner)

    for copy in (branch, imported):
        copied = await database_sync_to_async(read_messages)(copy.pk)
        [unfinished] = [m for m in copied if isinstance(m, ToolMessage) and m.name == "slow_step"]
        assert "did not finish" in unfinished.content
        assert [m.content for m in copied if isinstance(m, AIMessage) and m.content] == ["The second turn's answer."]
