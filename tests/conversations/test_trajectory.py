"""The trajectory map: a family of threads as one graph of turns, its
rendering, and the read-only preview of a turn (conversations.trajectory)."""

import re
import uuid

import pytest
from django.urls import reverse

from conversations import services, trajectory
from conversations.models import BranchLink, Turn
from conversations.trajectory import FamilyThread, TurnFact, assemble
from conversations.turns import guard
from workspace.models import Thread
from workspace.services import document as document_services
from workspace.services import objective as objective_services

A, B, C, D = (uuid.UUID(int=n) for n in range(1, 5))


def facts(thread, *indices):
    return [TurnFact(thread, i, f"{thread.int}:{i}") for i in indices]


def keys(nodes):
    return {(n.thread, n.index) for n in nodes}


def edges(graph):
    return {((e.source.thread, e.source.index), (e.target.thread, e.target.index), e.kind) for e in graph.edges}


# A has turns 1-4; B forked A after turn 2 (own turns 3-5); C forked B
# after turn 4 (own turn 5); D forked A after turn 1 (own turn 2).
# Lanes depth first, earlier branch points first: A, D, B, C.
FAMILY = [
    FamilyThread(A, "A"),
    FamilyThread(D, "D", parent=A, branch_point=1),
    FamilyThread(B, "B", parent=A, branch_point=2),
    FamilyThread(C, "C", parent=B, branch_point=4),
]
# The forks also carry their shared turns, as a fork's copy might: drawn once.
TURNS = [*facts(A, 1, 2, 3, 4), *facts(B, 1, 2, 3, 4, 5), *facts(C, 1, 2, 3, 4, 5), *facts(D, 1, 2)]


def test_shared_turns_are_drawn_once_in_the_thread_that_owns_them():
    graph = assemble(current=C, threads=FAMILY, turns=TURNS)
    assert keys(graph.nodes) == {(A, 1), (A, 2), (A, 3), (A, 4), (D, 2), (B, 3), (B, 4), (B, 5), (C, 5)}
    assert edges(graph) == {
        ((A, 1), (A, 2), "turn"), ((A, 2), (A, 3), "turn"), ((A, 3), (A, 4), "turn"),
        ((B, 3), (B, 4), "turn"), ((B, 4), (B, 5), "turn"),
        ((A, 1), (D, 2), "branch"), ((A, 2), (B, 3), "branch"), ((B, 4), (C, 5), "branch"),
    }


def test_the_current_threads_path_runs_through_its_ancestors_turns():
    graph = assemble(current=C, threads=FAMILY, turns=TURNS)
    assert [(n.thread, n.index) for n in graph.path] == [(A, 1), (A, 2), (B, 3), (B, 4), (C, 5)]
    assert (graph.current.thread, graph.current.index) == (C, 5)
    path_edges = {((e.source.thread, e.source.index), (e.target.thread, e.target.index), e.kind) for e in graph.path_edges}
    assert path_edges == {((A, 1), (A, 2), "turn"), ((A, 2), (B, 3), "branch"), ((B, 3), (B, 4), "turn"),
                          ((B, 4), (C, 5), "branch")}
    assert path_edges <= edges(graph)  # the highlight follows edges that are drawn


def test_the_root_path_is_its_own_turns_and_a_fresh_fork_ends_at_its_branch_point():
    root = assemble(current=A, threads=FAMILY, turns=TURNS)
    assert keys(n for n in root.nodes if root.on_path(n)) == {(A, 1), (A, 2), (A, 3), (A, 4)}
    fresh = assemble(current=D, threads=FAMILY, turns=[f for f in TURNS if f.thread != D])
    assert keys(n for n in fresh.nodes if fresh.on_path(n)) == {(A, 1)}
    assert (fresh.current.thread, fresh.current.index) == (A, 1)


def test_lanes_follow_the_family_and_rows_the_turn_numbers():
    graph = assemble(current=A, threads=FAMILY, turns=TURNS)
    lanes = {n.thread: n.lane for n in graph.nodes}
    assert lanes == {A: 0, D: 1, B: 2, C: 3}
    assert graph.node(B, 3).y == graph.node(A, 3).y > graph.node(A, 2).y


def test_a_running_turn_is_not_a_node_yet():
    threads = [FamilyThread(A, "A", running=4)]
    graph = assemble(current=A, threads=threads, turns=facts(A, 1, 2, 3, 4))
    assert keys(graph.nodes) == {(A, 1), (A, 2), (A, 3)}
    assert graph.current.index == 3


def test_family_order_is_depth_first_with_earlier_forks_first():
    links = {B: (A, 2, 1), C: (B, 4, 2), D: (A, 1, 3)}
    root, children = trajectory.family_of(C, links)
    assert root == A
    assert trajectory.lane_order(root, children) == [A, D, B, C]


# --- from the database --------------------------------------------------------------


def run_turns(thread, *messages):
    for message in messages:
        index, _snapshot = guard.turn_begin(thread=thread, user_message=message)
        guard.turn_finish(thread=thread, turn_index=index, answer=f"Answer to {message}")
    thread.refresh_from_db()


def fork(parent, *, at, status=BranchLink.Status.ACTIVE):
    """A fork as branching leaves it: the owner's new thread, its counter at the branch point."""
    child = services.thread_create(owner=parent.owner, title=f"Fork of {parent.title} at {at}")
    Thread.objects.filter(pk=child.pk).update(turn_index=at)
    child.refresh_from_db()
    BranchLink.objects.create(thread=child, parent=parent, branch_point_turn=at, status=status)
    return child


@pytest.fixture
def family(owner):
    root = services.thread_create(owner=owner, title="Root")
    run_turns(root, "one", "two", "three", "four")
    b = fork(root, at=2)
    run_turns(b, "b three", "b four", "b five")
    c = fork(b, at=4)
    run_turns(c, "c five")
    d = fork(root, at=1)
    run_turns(d, "d two")
    return root, b, c, d


@pytest.mark.django_db
def test_every_member_sees_the_whole_family(family, django_assert_max_num_queries):
    root, b, c, d = family
    expected = {(root.pk, i) for i in (1, 2, 3, 4)} | {(b.pk, 3), (b.pk, 4), (b.pk, 5), (c.pk, 5), (d.pk, 2)}
    for member in family:
        with django_assert_max_num_queries(4):
            graph = trajectory.family_graph(thread=member)
        assert keys(graph.nodes) == expected
    graph = trajectory.family_graph(thread=c)
    assert keys(n for n in graph.nodes if graph.on_path(n)) == {(root.pk, 1), (root.pk, 2), (b.pk, 3), (b.pk, 4), (c.pk, 5)}
    assert graph.node(b.pk, 3).message == "b three"


@pytest.mark.django_db
def test_pending_branches_deleted_threads_and_other_peoples_threads_stay_out(family, other_user):
    root, b, c, d = family
    pending = fork(root, at=3, status=BranchLink.Status.PENDING)
    run_turns(pending, "pending four")
    services.thread_soft_delete(thread=d)
    theirs = services.thread_create(owner=other_user, title="Theirs")
    BranchLink.objects.create(thread=theirs, parent=root, branch_point_turn=1, status=BranchLink.Status.ACTIVE)
    run_turns(theirs, "their two")
    graph = trajectory.family_graph(thread=root)
    assert {n.thread for n in graph.nodes} == {root.pk, b.pk, c.pk}


@pytest.mark.django_db
def test_a_turn_in_progress_joins_the_map_when_it_ends(family):
    root, *_ = family
    index, _snapshot = guard.turn_begin(thread=root, user_message="five")
    assert trajectory.family_graph(thread=root).node(root.pk, index) is None
    guard.turn_finish(thread=root, turn_index=index, status=Turn.Status.FAILED)
    root.refresh_from_db()
    node = trajectory.family_graph(thread=root).node(root.pk, index)
    graph = trajectory.family_graph(thread=root)
    assert node is not None and node.status == Turn.Status.FAILED and graph.current.index == index


@pytest.mark.django_db
def test_the_map_names_each_node_by_its_turn_and_shows_its_message(owner):
    thread = services.thread_create(owner=owner)
    run_turns(thread, "<b>Plan</b> a trip to Lisbon with a very long message that goes on and on past the node", "x")
    html = trajectory.render_map(trajectory.family_graph(thread=thread))
    # Named "Turn N" (the word drawn by the stylesheet) followed by the message it shows.
    assert re.findall(r'data-turn="(\d+)"', html) == ["1", "2"]
    assert re.findall(r'<b>(\d+)</b> <span>', html) == ["1", "2"]
    assert "&lt;b&gt;Plan&lt;/b&gt; a trip" in html and "<b>Plan" not in html
    assert "goes on and on past the node" not in html  # only its start
    assert re.findall(r'data-turn="(\d+)"[^>]*aria-current', html) == ["2"]
    lane_url = re.search(r'data-urls="([^"]*)"', html).group(1)
    assert lane_url + "2/" == reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": 2})


@pytest.mark.django_db
def test_the_page_shows_the_map(owner_client, owner):
    thread = services.thread_create(owner=owner)
    run_turns(thread, "first message")
    page = owner_client.get(reverse("thread-page", kwargs={"thread_id": thread.pk})).content.decode()
    assert 'aria-label="Trajectory"' in page and 'data-turn="1"' in page and "first message" in page


# --- the preview of a turn -----------------------------------------------------------


@pytest.mark.django_db
def test_the_preview_shows_the_workspace_after_the_turn(owner_client, owner):
    thread = services.thread_create(owner=owner)
    document_services.document_save(thread=thread, title="Notes", content="after turn zero")
    run_turns(thread, "first")
    document_services.document_save(thread=thread, title="Notes", content="after turn one")
    objective_services.objective_set(thread=thread, text="Objective after turn one")
    run_turns(thread, "second")
    document_services.document_save(thread=thread, title="Notes", content="live text")

    def preview(turn, **headers):
        url = reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": turn})
        return owner_client.get(url, **headers)

    first = preview(1, HTTP_HX_REQUEST="true").content.decode()
    assert "Viewing turn 1" in first and "Continue from here" in first
    assert "after turn one" in first and "Objective after turn one" in first  # turn 2's snapshot
    assert "Answer to first" in first and "Answer to second" not in first  # the chat up to turn 1
    latest = preview(2).content.decode()
    assert "Viewing turn 2" in latest and "live text" in latest  # no later turn: the live rows
    assert preview(3).status_code == 404 and preview(0).status_code == 404


@pytest.mark.django_db
def test_a_forks_shared_turn_is_previewed_in_its_parent_only(owner_client, family):
    root, b, *_ = family

    def status(thread, turn):
        url = reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": turn})
        return owner_client.get(url).status_code

    assert status(b, 2) == 404 and status(root, 2) == 200 and status(b, 3) == 200


@pytest.mark.django_db
def test_the_preview_of_another_persons_turn_is_not_found(other_client, owner):
    thread = services.thread_create(owner=owner)
    run_turns(thread, "mine")
    url = reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": 1})
    response = other_client.get(url)
    assert response.status_code == 404 and "mine" not in response.content.decode()
