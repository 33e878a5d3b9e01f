"""Keeping every open page of a family's map up to date (docs/adr/0016,
docs/adr/0047): after a turn ends or a branch is made, each member's page
gets its own map, or only the node that changed."""

from __future__ import annotations

from workspace.models import Thread

from ..live import publisher
from .reads import family_graph
from .render import MapMarkup, render_map


def map_push(*, thread_id) -> str:
    """The thread's own map, to swap in on its page (one that may have
    missed a turn's end), or ""."""
    thread = Thread.objects.filter(pk=thread_id).first()
    return "" if thread is None else render_map(family_graph(thread=thread), oob=True)


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
