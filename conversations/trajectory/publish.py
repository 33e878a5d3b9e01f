"""Keeping every open page of a family's map up to date (docs/adr/0016,
docs/adr/0047): after a turn ends or a branch is made, each member's page
gets its own map, or only the node that changed."""

from __future__ import annotations

from django.template.loader import render_to_string

from workspace.models import Thread

from ..live import publisher
from ..models import BranchLink, OpenPage
from .layout import layout_key, nodes_key
from .reads import family_graph
from .render import TEMPLATE, MapMarkup


def map_check(*, thread_id) -> str:
    """For a page of the thread that has just joined its pushes: what its
    map should show now (its lanes, how many nodes of each status), for the
    page to fetch its map if it shows something else; "" for no thread, or
    a family with no node yet (its page's map is as empty).

    Not the map itself: a whole map rendered here could reach the page after
    a newer node's push from another server had, and take that node off
    again; a fetch the page makes once it has this is rendered after the
    join, and static/js/trajectory.js fetches again for a node pushed while
    a fetch is on its way (docs/adr/0156)."""
    thread = Thread.objects.filter(pk=thread_id).first()
    if thread is None:
        return ""
    graph = family_graph(thread=thread)
    if not graph.nodes:
        return ""
    return _check_html(graph)


def _check_html(graph) -> str:
    """What an open page's map should show (its lanes and node counts), to compare with its own."""
    return render_to_string(f"{TEMPLATE}#map_check", {"map_layout": layout_key(graph), "map_nodes": nodes_key(graph)})


def publish_checks_of_families_around(*, thread_id) -> None:
    """A thread of a family was deleted or restored: its lane, and the
    turns its branches show from before their branch points, left or came
    back. Every open page of the families it was or is now in (its
    parent's, each of its branches') is sent its map check (`map_check`),
    and a page whose map no longer matches fetches it, as on joining
    (static/js/trajectory.js, docs/adr/0156, 0159). Without it an open map
    kept a deleted thread's lane until the next turn of the family ended,
    or a reload. A family none of whose threads is open is not read: the
    owner's open pages and links are, once each; then one family read per
    family with an open page, a few bytes per member."""
    row = Thread.objects.filter(pk=thread_id).values_list("owner_id", "is_deleted").first()
    if row is None:
        return
    owner_id, deleted = row
    open_threads = set(OpenPage.objects.filter(thread__owner_id=owner_id).values_list("thread_id", flat=True))
    if not open_threads:
        return
    # Live branches by parent, each live thread's live parent, and the thread's own parent.
    parents, children, its_parent = {}, {}, None
    for child, parent, child_deleted, parent_deleted in (
        BranchLink.objects.filter(status=BranchLink.Status.ACTIVE, thread__owner_id=owner_id)
        .order_by()
        .values_list("thread_id", "parent_id", "thread__is_deleted", "parent__is_deleted")
    ):
        if child == thread_id and not parent_deleted:
            its_parent = parent
        if not child_deleted:
            children.setdefault(parent, []).append(child)
            if not parent_deleted:
                parents[child] = parent
    seeds = [*([] if deleted else [thread_id]), *([its_parent] if its_parent else []), *children.get(thread_id, [])]
    done: set = set()
    for seed in seeds:
        if seed in done:
            continue
        # The family as the map shows it, or more (threads other people set apart): from its root down.
        root, members = seed, set()
        while root in parents and root not in members:
            members.add(root)
            root = parents[root]
        members, frontier = {root}, [root]
        while frontier:
            below = [child for parent in frontier for child in children.get(parent, []) if child not in members]
            members.update(below)
            frontier = below
        done |= members
        thread = Thread.objects.filter(pk=seed, is_deleted=False).first() if members & open_threads else None
        if thread is None:
            continue
        graph = family_graph(thread=thread)
        html = _check_html(graph)
        for member in graph.threads:
            done.add(member.pk)
            publisher.publish(member.pk, html)


def family_maps(*, thread_id) -> dict:
    """Every family member's map (to swap in on its open pages), by thread:
    one assembly and one rendering of the family, each member's path
    highlighted in its own."""
    thread = Thread.objects.filter(pk=thread_id).first()
    if thread is None:
        return {}
    markup = MapMarkup(family_graph(thread=thread))
    return {member.pk: markup.member_map(member.pk) for member in markup.graph.threads}


def turn_ended_patches(*, thread: Thread, turn_index: int) -> dict:
    """What every family member's open map needs after `thread`'s turn
    `turn_index` ended, by thread: that turn's node (a few hundred bytes,
    whatever the family's size), or the whole map when the node is the
    first one drawn or is not drawn at all. A map whose lanes changed since
    its page was built asks for itself again (static/js/trajectory.js).
    `thread` may be the turn's own instance: the family's titles and
    running turns are read here, only its id and owner are taken from it."""
    markup = MapMarkup(family_graph(thread=thread))
    patches = {}
    for member in markup.graph.threads:
        patch = None if len(markup.graph.nodes) < 2 else markup.node_patch(member.pk, thread_id=thread.pk, turn_index=turn_index)
        patches[member.pk] = markup.member_map(member.pk) if patch is None else patch
    return patches


def publish_family(*, thread_id) -> None:
    """Bring every open page of the family up to date (a turn ended, a branch was made)."""
    for member, html in family_maps(thread_id=thread_id).items():
        publisher.publish(member, html)
