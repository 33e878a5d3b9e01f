"""The trajectory map: a family of threads as one graph of turns, its
rendering, and the read-only preview of a turn (conversations.trajectory)."""

import ast
import re
import uuid
from pathlib import Path

import pytest
from django.urls import reverse

from conversations import services, trajectory
from conversations.models import BranchLink, Turn
from conversations.trajectory import layout
from conversations.trajectory.layout import FamilyThread, TurnFact, assemble, family_of, lane_order
from conversations.turns import slot
from workspace.models import Thread
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.url_templates import TURN

A, B, C, D = (uuid.UUID(int=n) for n in range(1, 5))


def facts(thread, *indices):
    return [TurnFact(thread, i, f"{thread.int}:{i}") for i in indices]


def shape(graph):
    """Everything a drawn map shows of a graph."""
    nodes = [(n.thread, n.index, n.message, n.status, n.lane, n.position, n.x, n.y) for n in graph.nodes]
    return graph.threads, nodes, edges(graph), [n.index for n in graph.path], graph.width, graph.height


def keys(nodes):
    return {(n.thread, n.index) for n in nodes}


def edges(graph):
    return {((e.source.thread, e.source.index), (e.target.thread, e.target.index), e.kind) for e in graph.edges}


def test_the_layout_needs_no_database_and_marks_a_turn_as_the_models_do():
    source = Path(layout.__file__).read_text()
    imported = {
        alias.name if isinstance(node, ast.Import) else node.module or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [node])
    }
    assert not [name for name in imported if name.startswith(("django", "conversations", "workspace"))], imported
    assert layout.COMPLETE == Turn.Status.COMPLETE


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
        ((A, 1), (A, 2), "turn"),
        ((A, 2), (A, 3), "turn"),
        ((A, 3), (A, 4), "turn"),
        ((B, 3), (B, 4), "turn"),
        ((B, 4), (B, 5), "turn"),
        ((A, 1), (D, 2), "branch"),
        ((A, 2), (B, 3), "branch"),
        ((B, 4), (C, 5), "branch"),
    }


def test_the_current_threads_path_runs_through_its_ancestors_turns():
    graph = assemble(current=C, threads=FAMILY, turns=TURNS)
    assert [(n.thread, n.index) for n in graph.path] == [(A, 1), (A, 2), (B, 3), (B, 4), (C, 5)]
    assert (graph.current.thread, graph.current.index) == (C, 5)
    path_edges = {((e.source.thread, e.source.index), (e.target.thread, e.target.index), e.kind) for e in graph.path_edges}
    assert path_edges == {
        ((A, 1), (A, 2), "turn"),
        ((A, 2), (B, 3), "branch"),
        ((B, 3), (B, 4), "turn"),
        ((B, 4), (C, 5), "branch"),
    }
    assert path_edges <= edges(graph)  # the highlight follows edges that are drawn


def test_the_root_path_is_its_own_turns_and_a_fresh_fork_ends_at_its_branch_point():
    root = assemble(current=A, threads=FAMILY, turns=TURNS)
    assert keys(n for n in root.nodes if root.on_path(n)) == {(A, 1), (A, 2), (A, 3), (A, 4)}
    fresh = assemble(current=D, threads=FAMILY, turns=[f for f in TURNS if f.thread != D])
    assert keys(n for n in fresh.nodes if fresh.on_path(n)) == {(A, 1)}
    assert (fresh.current.thread, fresh.current.index) == (A, 1)


def test_a_forks_origin_is_its_parent_and_branch_point_and_a_root_has_none():
    assert assemble(current=C, threads=FAMILY, turns=TURNS).origin == layout.BranchOrigin(B, "B", 4)
    assert assemble(current=D, threads=FAMILY, turns=[]).origin == layout.BranchOrigin(A, "A", 1)
    assert assemble(current=A, threads=FAMILY, turns=TURNS).origin is None


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
    root, children = family_of(C, links)
    assert root == A
    assert lane_order(root, children) == [A, D, B, C]


# --- from the database --------------------------------------------------------------


def run_turns(thread, *messages):
    for message in messages:
        index, _snapshot = slot.turn_begin(thread=thread, user_message=message)
        slot.turn_finish(thread=thread, turn_index=index, answer=f"Answer to {message}")
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
        # One to find it has links (docs/adr/0135), then the family's four.
        with django_assert_max_num_queries(5):
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
def test_a_branch_whose_parent_was_deleted_draws_the_turns_it_came_with_as_its_own(family, owner_client):
    root, b, c, d = family
    e = fork(c, at=3)  # forked from a turn c only inherited
    run_turns(e, "e four")
    services.thread_soft_delete(thread=b)

    graph = trajectory.family_graph(thread=c)
    # Turns 1-2 ran in the root, 3-4 in the deleted b: all of them are c's history.
    assert keys(graph.nodes) == {(c.pk, 1), (c.pk, 2), (c.pk, 3), (c.pk, 4), (c.pk, 5), (e.pk, 4)}
    assert [n.message for n in graph.path] == ["one", "two", "b three", "b four", "c five"]
    assert ((c.pk, 3), (e.pk, 4), "branch") in edges(graph)
    assert graph.origin is None
    # The root's family no longer holds c, and lost nothing of its own.
    assert keys(trajectory.family_graph(thread=root).nodes) == {(root.pk, i) for i in (1, 2, 3, 4)} | {(d.pk, 2)}

    def preview(thread, turn):
        url = reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": turn})
        return owner_client.get(url)

    after_three = preview(c, 3)
    assert after_three.status_code == 200 and "Viewing turn 3" in after_three.content.decode()
    assert trajectory.is_own_turn(thread=c, turn_index=1) and trajectory.is_own_turn(thread=c, turn_index=4)
    assert trajectory.continue_point(user=root.owner, thread_id=c.pk, turn_index=2) == (c, 2)
    # e's own turns from before its branch point are still c's to show.
    assert preview(e, 3).status_code == 404 and not trajectory.is_own_turn(thread=e, turn_index=3)


@pytest.mark.django_db
def test_a_turn_in_progress_joins_the_map_when_it_ends(family):
    root, *_ = family
    index, _snapshot = slot.turn_begin(thread=root, user_message="five")
    assert trajectory.family_graph(thread=root).node(root.pk, index) is None
    slot.turn_finish(thread=root, turn_index=index, status=Turn.Status.FAILED)
    root.refresh_from_db()
    node = trajectory.family_graph(thread=root).node(root.pk, index)
    graph = trajectory.family_graph(thread=root)
    assert node is not None and node.status == Turn.Status.FAILED and graph.current.index == index


@pytest.mark.django_db
def test_a_thread_with_no_branch_link_is_read_in_four_plain_statements_as_its_family_would_be(owner, django_assert_num_queries):
    from conversations.trajectory import reads

    thread = services.thread_create(owner=owner, title="Alone")
    run_turns(thread, "one", "two\nlines", "three")
    index, _snapshot = slot.turn_begin(thread=thread, user_message="four")
    slot.turn_finish(thread=thread, turn_index=index, status=Turn.Status.FAILED)
    slot.turn_begin(thread=thread, user_message="five, running")

    with django_assert_num_queries(4) as queries:
        alone = trajectory.family_graph(thread=thread)
    # Plain reads: no correlated subquery for the ORM to build (docs/adr/0140).
    assert not any("(SELECT" in query["sql"].upper() for query in queries.captured_queries)
    assert shape(alone) == shape(reads._family_graph(thread))
    assert [n.status for n in alone.nodes] == ["complete", "complete", "complete", Turn.Status.FAILED]
    assert alone.threads[0].running == 5 and alone.threads[0].title == "Alone"
    # A branch from it, or a branch it is, makes it a family again.
    branch = fork(thread, at=2)
    assert [t.pk for t in trajectory.family_graph(thread=thread).threads] == [thread.pk, branch.pk]
    assert [t.pk for t in trajectory.family_graph(thread=branch).threads] == [thread.pk, branch.pk]


@pytest.mark.django_db
def test_the_page_draws_a_lone_threads_map_from_its_chats_rows_as_the_map_reads_it(owner, django_assert_num_queries):
    from conversations.chat import ChatHistory

    thread = services.thread_create(owner=owner, title="Alone")
    # A node shows the message's start as the map's own read cuts it, lines folded.
    run_turns(thread, "one" + " " * 70 + "then the rest of a long first message", "two\n\n" + "lines " * 20)
    index, _snapshot = slot.turn_begin(thread=thread, user_message="three")
    slot.turn_finish(thread=thread, turn_index=index, status=Turn.Status.FAILED)
    slot.turn_begin(thread=thread, user_message="four, running")
    thread.refresh_from_db()

    rows = ChatHistory(thread=thread, user=owner).lone_rows()
    with django_assert_num_queries(0):
        drawn = trajectory.family_graph(thread=thread, lone=rows)
    assert shape(drawn) == shape(trajectory.family_graph(thread=thread))
    assert drawn.nodes[0].message == "one…"
    assert [n.status for n in drawn.nodes] == ["complete", "complete", Turn.Status.FAILED]
    assert drawn.threads[0].running == 4
    # Joined to a branch, either way round, it has no lone rows: its family is read.
    branch = fork(thread, at=2)
    assert ChatHistory(thread=thread, user=owner).lone_rows() is None
    assert ChatHistory(thread=branch, user=owner).lone_rows() is None


@pytest.mark.django_db
def test_the_map_names_each_node_by_its_turn_and_shows_its_message(owner):
    thread = services.thread_create(owner=owner)
    run_turns(thread, "<b>Plan</b> a trip to Lisbon with a very long message that goes on and on past the node", "x")
    html = trajectory.render_map(trajectory.family_graph(thread=thread))
    # Named "Turn N" (the word drawn by the stylesheet) followed by the message it shows.
    assert re.findall(r'data-turn="(\d+)"', html) == ["1", "2"]
    assert re.findall(r"<b>(\d+)</b> <span>", html) == ["1", "2"]
    assert "&lt;b&gt;Plan&lt;/b&gt; a trip" in html and "<b>Plan" not in html
    assert "goes on and on past the node" not in html  # only its start
    assert re.findall(r'data-turn="(\d+)"[^>]*aria-current', html) == ["2"]
    lane_url = re.search(r'data-urls="([^"]*)"', html).group(1)
    # The page fills in the turn (static/js/trajectory.js).
    assert lane_url.replace(TURN, "2") == reverse(
        "conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": 2}
    )


def _patch_parts(html):
    node = re.search(r'<button type="button" class="(tnode[^"]*)"[^>]*data-turn="\d+"[^>]*>', html)
    return {
        "layout": re.search(r'data-layout="([0-9a-f]+)"', html).group(1),
        "size": re.search(r'data-width="(\d+)" data-height="(\d+)"', html).groups(),
        "nodes": [f"Turn {n}" for n in re.findall(r'data-turn="(\d+)"', html)],
        "classes": node.group(1),
        "current": "aria-current" in node.group(0),
        "edges": re.findall(r'<path class="([^"]+)"', html),
    }


@pytest.mark.django_db
def test_a_turn_end_sends_each_member_only_the_new_node(family):
    root, b, c, d = family
    index, _snapshot = slot.turn_begin(thread=b, user_message="b six")
    slot.turn_finish(thread=b, turn_index=index, answer="six")
    patches = trajectory.turn_ended_patches(thread=b, turn_index=index)
    assert set(patches) == {root.pk, b.pk, c.pk, d.pk}
    layout = re.search(r'data-layout="([0-9a-f]+)"', trajectory.render_map(trajectory.family_graph(thread=root))).group(1)
    graph = trajectory.family_graph(thread=b)
    for member, html in patches.items():
        parts = _patch_parts(html)
        # One node, whatever the family's size (the whole map is 10 nodes here), ~260 bytes a node.
        assert parts["nodes"] == ["Turn 6"] and 'id="trajectory-map"' not in html and len(html) < 800
        assert parts["layout"] == layout and parts["size"] == (str(graph.width), str(graph.height))
        if member == b.pk:
            # B's own new turn: its current one, on its path, the path's edge drawn over the turn edge.
            assert parts["current"] and "on-path" in parts["classes"]
            assert parts["edges"] == ["tedge tedge-turn", "tedge on-path"]
        else:
            assert not parts["current"] and "on-path" not in parts["classes"]
            assert parts["edges"] == ["tedge tedge-turn"]


@pytest.mark.django_db
def test_the_first_node_and_a_new_lane_change_the_layout_a_node_patch_names(owner):
    thread = services.thread_create(owner=owner)
    run_turns(thread, "one")
    [first] = trajectory.turn_ended_patches(thread=thread, turn_index=1).values()
    assert 'id="trajectory-map"' in first  # nothing drawn before it: the whole (one-node) map
    before = re.search(r'data-layout="([0-9a-f]+)"', first).group(1)
    branch = fork(thread, at=1)
    run_turns(branch, "branch two")
    patches = trajectory.turn_ended_patches(thread=branch, turn_index=2)
    # The branch's lane is new: an open map of the root built before it has other lanes and asks for itself again.
    assert _patch_parts(patches[thread.pk])["layout"] != before
    assert _patch_parts(patches[branch.pk])["edges"] == ["tedge tedge-branch", "tedge on-path"]


@pytest.mark.django_db
def test_the_map_is_served_whole_to_its_owner_only(owner, other_user):
    from django.test import Client

    thread = services.thread_create(owner=owner)
    run_turns(thread, "first message", "second")
    url = reverse("conversations:trajectory-map", kwargs={"thread_id": thread.pk})
    clients = {user: Client() for user in (owner, other_user)}
    for user, client in clients.items():
        client.force_login(user)
    html = clients[owner].get(url).content.decode()
    assert html.startswith('<div id="trajectory-map"') and "hx-swap-oob" not in html
    assert re.findall(r'data-turn="(\d+)"', html) == ["1", "2"]
    assert clients[other_user].get(url).status_code == 404


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


@pytest.mark.django_db
def test_the_map_draws_each_kind_of_edge_as_one_path_of_every_edge(family):
    root, b, _c, _d = family
    graph = trajectory.family_graph(thread=b)
    html = trajectory.render_map(graph)
    paths = re.findall(r'<path class="([^"]+)" d="([^"]+)"/>', html)
    assert [css for css, _d in paths] == ["tedge tedge-turn", "tedge tedge-branch", "tedge on-path"]
    drawn = {css: ["M" + part for part in d.split("M")[1:]] for css, d in paths}
    assert drawn["tedge tedge-turn"] == [edge.d for edge in graph.edges if edge.kind == "turn"]
    assert drawn["tedge tedge-branch"] == [edge.d for edge in graph.edges if edge.kind == "branch"]
    assert drawn["tedge on-path"] == [edge.d for edge in graph.path_edges] and len(graph.path_edges) >= 2


def _checks_sent(monkeypatch) -> list:
    """The map checks pushed to threads' open pages, as (thread id, layout, nodes)."""
    from conversations.trajectory import publish

    sent: list = []
    real = publish.publisher.publish

    def record(thread_id, html):
        found = re.search(r'data-check data-layout="([0-9a-f]+)" data-nodes="([^"]*)"', html)
        if found:
            sent.append((thread_id, found.group(1), found.group(2)))
        return real(thread_id, html)

    monkeypatch.setattr(publish.publisher, "publish", record)
    return sent


def _check_of(thread) -> tuple:
    graph = trajectory.family_graph(thread=Thread.objects.get(pk=thread.pk))
    return thread.pk, layout.layout_key(graph), layout.nodes_key(graph)


@pytest.mark.django_db
def test_a_deleted_or_restored_thread_leaves_or_rejoins_every_open_map_of_its_family(
    family, owner_client, staff, monkeypatch, django_capture_on_commit_callbacks
):
    """The owner deletes b (the root's branch, c's parent) while pages of the
    root, c and d are open: each is sent its family's map as it now is, so
    its map drops b's lane (and c draws b's turns as its own) without a
    reload, as a page that joins is (docs/adr/0156, 0159). A staff restore
    brings the lane back the same way. Before, an open map kept a deleted
    thread's lane until a turn of the family ended."""
    from conversations.presence import presence_open

    root, b, c, d = family
    for member in family:
        presence_open(thread_id=member.pk, user=root.owner, channel_name=f"page-of-{member.pk}")
    sent = _checks_sent(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        assert owner_client.post(f"/threads/{b.pk}/delete/", HTTP_HX_REQUEST="true").status_code == 200

    # The root's family (root, d) and c's own: each page the map it now has; none to the deleted b.
    assert sorted(sent) == sorted(_check_of(member) for member in (root, c, d))
    assert _check_of(root)[1] != _check_of(c)[1]

    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.thread_restore(thread=Thread.objects.get(pk=b.pk), staff_user=staff)
    assert sorted(sent) == sorted(_check_of(member) for member in (root, b, c, d))
    assert len({layout_key for _pk, layout_key, _nodes in sent}) == 1


@pytest.mark.django_db
def test_a_thread_deleted_with_no_page_of_its_family_open_reads_no_family(
    family, owner_client, monkeypatch, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    """Nobody has the family open: the delete reads the owner's open pages
    and nothing of the family's maps after its commit (docs/adr/0159)."""
    root, b, c, d = family
    sent = _checks_sent(monkeypatch)
    with django_assert_max_num_queries(12), django_capture_on_commit_callbacks(execute=True):
        assert owner_client.post(f"/threads/{root.pk}/delete/", HTTP_HX_REQUEST="true").status_code == 200
    assert sent == []
