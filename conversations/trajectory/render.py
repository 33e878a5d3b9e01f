"""The trajectory map's markup (docs/adr/0016): the map partial for a page,
one node for an open map after a turn ends, and the patch that sends a tab
to another thread.

The nodes and edges are plain strings built here with the stdlib's escape,
not a template loop or format_html: a family of a thousand turns renders
in milliseconds, and format_html costs about ten times as much per node."""

from __future__ import annotations

from html import escape

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from workspace.models import Thread
from workspace.url_templates import TURN

from ..forms import page_note_query
from .layout import COMPLETE, Edge, Graph, Node, layout_key, set_path

TEMPLATE = "conversations/panels/trajectory.html"


EDGE_CLASSES = {"turn": "tedge tedge-turn", "branch": "tedge tedge-branch"}
PATH_EDGE_CLASS = "tedge on-path"


def _edge(edge: Edge) -> str:
    return f'<path class="{EDGE_CLASSES[edge.kind]}" d="{edge.d}"/>'


def _path_edge(edge: Edge) -> str:
    return f'<path class="{PATH_EDGE_CLASS}" d="{edge.d}"/>'


def _edges_drawn_together(edges, css_class: str) -> str:
    """`edges` as one path of one subpath each ("M…V…M…V…"): they share
    their stroke, and a path element per edge cost every page of a family
    about 70 bytes a turn (35 KB at 500 turns). static/js/trajectory.js reads the subpaths
    when a pushed edge may already be drawn."""
    d = "".join(edge.d for edge in edges)
    return f'<path class="{css_class}" d="{d}"/>' if d else ""


class MapMarkup:
    """The map's markup for a family, rendered once and shared by every
    member's page: only the nodes on a member's path (and its current node)
    are rendered again for it."""

    def __init__(self, graph: Graph):
        self.graph = graph
        # A node carries only its lane and turn: the map lists each lane's
        # preview URL with a placeholder for the turn (data-urls), which
        # static/js/trajectory.js fills in (docs/adr/0081).
        self.urls = [
            reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": TURN})
            for thread in graph.threads
        ]
        self.node_parts = [self._node(node, "") for node in graph.nodes]
        self.edges = "".join(
            _edges_drawn_together([edge for edge in graph.edges if edge.kind == kind], css_class)
            for kind, css_class in EDGE_CLASSES.items()
        )

    def _node(self, node: Node, state: str) -> str:
        # Kept short: a family of a thousand turns is pushed whole.
        status = "" if node.status == COMPLETE else f" tnode-{escape(node.status)}"
        current = ' aria-current="step" data-current' if state == "current" else ""
        path = " on-path" if state else ""
        # Named by its content, "Turn N <message>": the word "Turn" is drawn
        # by the stylesheet (.tnode > b::before), so the name starts the same
        # for every node and holds the text the node shows.
        return (
            f'<button type="button" class="tnode{status}{path}" style="left:{node.x}px;top:{node.y}px"'
            f' data-lane="{node.lane}" data-turn="{node.index}"{current}>'
            f"<b>{node.index}</b> <span>{escape(node.message)}</span></button>"
        )

    def for_member(self, current) -> dict:
        """The map's template context with `current`'s path highlighted."""
        graph = set_path(self.graph, current)
        parts = list(self.node_parts)
        for node in graph.path:
            parts[node.position] = self._node(node, "current" if node is graph.current else "path")
        return {
            "graph": graph,
            "map_layout": layout_key(graph),
            "lane_urls": " ".join(self.urls),
            "nodes_html": mark_safe("".join(parts)),
            "edges_html": mark_safe(self.edges + _edges_drawn_together(graph.path_edges, PATH_EDGE_CLASS)),
        }

    def member_map(self, current) -> str:
        """`current`'s whole map, to swap in on its open pages."""
        return render_to_string(f"{TEMPLATE}#map", {**self.for_member(current), "oob": True})

    def node_patch(self, member, *, thread_id, turn_index: int) -> str | None:
        """One node for `member`'s open map (static/js/trajectory.js puts it
        in): the node of `thread_id`'s turn `turn_index` as that map draws it
        (`member`'s current turn, on its path, or neither), the edges into
        it and the map's new size. None when the map does not draw it."""
        graph = set_path(self.graph, member)
        node = graph.node(thread_id, turn_index)
        if node is None:
            return None
        state = "current" if node is graph.current else "path" if graph.on_path(node) else ""
        edges = [_edge(edge) for edge in graph.edges if edge.target is node]
        edges += [_path_edge(edge) for edge in graph.path_edges if edge.target is node]
        context = {
            "graph": graph,
            "map_layout": layout_key(graph),
            "node_html": mark_safe(self._node(node, state)),
            "edges_html": mark_safe("".join(edges)),
        }
        return render_to_string(f"{TEMPLATE}#node_patch", context)


def map_context(graph: Graph) -> dict:
    return MapMarkup(graph).for_member(graph.current_thread)


def render_map(graph: Graph, *, oob: bool = False) -> str:
    return render_to_string(f"{TEMPLATE}#map", {**map_context(graph), "oob": oob})


def navigate_html(thread: Thread, *, note: str = "") -> str:
    """Sends the page to `thread` (static/js/live.js, the "navigate" patch),
    where `note` (one of conversations.forms.PAGE_NOTES) is shown."""
    url = reverse("thread-page", kwargs={"thread_id": thread.pk}) + page_note_query(note)
    return render_to_string(f"{TEMPLATE}#navigate", {"url": url})
