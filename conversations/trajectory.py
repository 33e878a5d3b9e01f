"""The trajectory map: a thread's conversation family as a graph of turns
(docs/adr/0016).

The family is every thread related to this one through active branch links
(conversations.models.BranchLink): up to the root, then every descendant.
A node is one ended turn; a forked thread's turns up to its branch point are
its parent's, so they are drawn once, in the thread that owns them, and the
fork's own turns hang off the parent's branch-point turn. Edges join a
thread's consecutive turns and a branch point to the fork's first own turn.

`assemble` is pure (plain values in, a laid-out graph out), so the shape
rules are tested without a database; `family_graph` reads the rows for it in
four queries, whatever the family's size. `render_map` / `publish_family`
give the page, and every open page of the family, the same partial.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from html import escape
from itertools import pairwise

from django.db.models import CharField
from django.db.models.functions import Cast, Substr
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from workspace import plan_tree
from workspace.errors import InvalidInput
from workspace.markdown import render_markdown
from workspace.models import Thread, WorkspaceSnapshot
from workspace.selectors import thread_for_user, workspace_after_turn

from .forms import page_note_query
from .live import publisher
from .models import BranchLink, Turn
from .turns.slot import running_turn, running_turns

TEMPLATE = "conversations/panels/trajectory.html"
# How much of a user message a node shows (the rest is in its preview).
MESSAGE_START_CHARS = 60
# Layout grid, in CSS pixels: one lane per thread, one row per turn number.
LANE_WIDTH = 150
ROW_HEIGHT = 44
NODE_WIDTH = 136
NODE_HEIGHT = 26
PAD = 6
NO_SUCH_TURN = "That turn is not on your trajectory map any more; reload the page and choose another."


@dataclass(frozen=True, slots=True)
class FamilyThread:
    pk: uuid.UUID
    title: str
    parent: uuid.UUID | None = None  # only when the parent is in the family
    branch_point: int = 0  # the parent's turn it was forked after (0: a root)
    running: int | None = None  # its turn in progress, not drawn yet


@dataclass(frozen=True, slots=True)
class TurnFact:
    thread: uuid.UUID
    index: int
    message: str
    status: str = Turn.Status.COMPLETE


@dataclass(slots=True)
class Node:
    thread: uuid.UUID
    index: int
    message: str
    status: str
    lane: int
    position: int  # in Graph.nodes
    x: int = 0
    y: int = 0

    def __post_init__(self):
        self.x = PAD + self.lane * LANE_WIDTH
        self.y = PAD + (self.index - 1) * ROW_HEIGHT


@dataclass(frozen=True, slots=True)
class Edge:
    source: Node
    target: Node
    kind: str  # "turn" or "branch"

    @property
    def d(self) -> str:
        """The SVG path from the bottom middle of `source` to the top middle of `target`."""
        x1, y1 = self.source.x + NODE_WIDTH // 2, self.source.y + NODE_HEIGHT
        x2, y2 = self.target.x + NODE_WIDTH // 2, self.target.y
        if x1 == x2:
            return f"M{x1} {y1}V{y2}"
        mid = (y1 + y2) // 2
        return f"M{x1} {y1}C{x1} {mid} {x2} {mid} {x2} {y2}"


@dataclass
class Graph:
    """The family's nodes and edges, and one member's path through them:
    its turns from 1 to its latest ended one, wherever each is drawn."""

    threads: list[FamilyThread]  # in lane order
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    current_thread: uuid.UUID | None = None
    path: list[Node] = field(default_factory=list)  # by turn number
    path_edges: list[Edge] = field(default_factory=list)
    _index: dict = field(default_factory=dict, repr=False)  # (lane, turn) -> node
    _lanes: dict = field(default_factory=dict, repr=False)  # thread pk -> lane
    _last: dict = field(default_factory=dict, repr=False)  # lane -> its latest own turn

    @property
    def current(self) -> Node | None:
        return self.path[-1] if self.path else None

    def on_path(self, node: Node) -> bool:
        return any(step is node for step in self.path)

    @property
    def width(self) -> int:
        return 2 * PAD + max(len(self.threads) - 1, 0) * LANE_WIDTH + NODE_WIDTH

    @property
    def height(self) -> int:
        rows = max((node.index for node in self.nodes), default=0)
        return 2 * PAD + max(rows - 1, 0) * ROW_HEIGHT + NODE_HEIGHT

    def node(self, thread, index) -> Node | None:
        lane = self._lanes.get(thread)
        return None if lane is None else self._index.get((lane, index))


# --- the family ---------------------------------------------------------------


def family_of(thread_id, links: dict) -> tuple[uuid.UUID, dict[uuid.UUID, list[uuid.UUID]]]:
    """The root of `thread_id`'s family and every member's children, from
    `links` ({child: (parent, branch point, created_at)}, active links only).
    Children in the order they were forked: by branch point, then age."""
    root, seen = thread_id, {thread_id}
    while root in links and links[root][0] not in seen:
        root = links[root][0]
        seen.add(root)
    children: dict = {}
    for child, (parent, branch_point, created_at) in links.items():
        children.setdefault(parent, []).append((branch_point, created_at, str(child), child))
    ordered = {parent: [c[-1] for c in sorted(kids)] for parent, kids in children.items()}
    return root, ordered


def lane_order(root, children: dict) -> list[uuid.UUID]:
    """Depth first from the root: a fork sits right of its parent, before its parent's later forks."""
    order, stack, seen = [], [root], set()
    while stack:
        thread = stack.pop()
        if thread in seen:
            continue
        seen.add(thread)
        order.append(thread)
        stack.extend(reversed(children.get(thread, ())))
    return order


# --- the graph (pure) -----------------------------------------------------------


def assemble(*, current, threads: list[FamilyThread], turns: list[TurnFact]) -> Graph:
    """The laid-out graph of a family and `current`'s path through it:
    `threads` in lane order (a parent before its forks), `turns` every turn
    they have (shared ones included or not: a fork's turns up to its branch
    point are dropped here)."""
    graph = Graph(threads=threads)
    lanes = graph._lanes = {t.pk: lane for lane, t in enumerate(threads)}
    skip = [(t.branch_point, t.running) for t in threads]
    own: list[list[Node]] = [[] for _ in threads]
    for fact in turns:
        lane = lanes.get(fact.thread)
        if lane is None:
            continue
        branch_point, running = skip[lane]
        if fact.index <= branch_point or fact.index == running:
            continue
        own[lane].append(Node(fact.thread, fact.index, fact.message, fact.status, lane, 0))
    index = graph._index
    for lane, nodes in enumerate(own):
        nodes.sort(key=lambda node: node.index)
        for node in nodes:
            node.position = len(graph.nodes)
            graph.nodes.append(node)
            index[(lane, node.index)] = node
        if nodes:
            graph._last[lane] = nodes[-1].index
    for lane, thread in enumerate(threads):
        nodes = own[lane]
        if nodes and thread.parent is not None:
            point = index.get((_owner_lane(graph, lane, thread.branch_point), thread.branch_point))
            if point is not None:
                graph.edges.append(Edge(point, nodes[0], "branch"))
        graph.edges.extend(Edge(earlier, later, "turn") for earlier, later in pairwise(nodes))
    if current is not None:
        set_path(graph, current)
    return graph


def _owner_lane(graph: Graph, lane: int, turn_index: int) -> int:
    """The lane whose own turn `turn_index` of the thread in `lane` is."""
    threads, lanes = graph.threads, graph._lanes
    thread = threads[lane]
    while thread.parent is not None and turn_index <= thread.branch_point:
        lane = lanes[thread.parent]
        thread = threads[lane]
    return lane


def set_path(graph: Graph, current) -> Graph:
    """Make `current` the member whose path the graph highlights."""
    graph.current_thread = current
    graph.path, graph.path_edges = [], []
    lane = graph._lanes.get(current)
    if lane is None:
        return graph
    thread = graph.threads[lane]
    last = max(thread.branch_point, graph._last.get(lane, 0))
    previous = None
    for turn_index in range(1, last + 1):
        node = graph._index.get((_owner_lane(graph, lane, turn_index), turn_index))
        if node is None:
            continue
        if previous is not None:
            graph.path_edges.append(Edge(previous, node, "turn" if previous.lane == node.lane else "branch"))
        graph.path.append(node)
        previous = node
    return graph


# --- the graph from the database --------------------------------------------------


def family_graph(*, thread: Thread) -> Graph:
    """The trajectory graph of `thread`'s family, as its page shows it."""
    links = {
        child: (parent, point, created)
        for child, parent, point, created in BranchLink.objects.filter(
            status=BranchLink.Status.ACTIVE,
            thread__owner_id=thread.owner_id,
            thread__is_deleted=False,
            parent__is_deleted=False,
        ).values_list("thread_id", "parent_id", "branch_point_turn", "created_at")
    }
    root, children = family_of(thread.pk, links)
    order = lane_order(root, children)
    rows = Thread.objects.filter(pk__in=order, is_deleted=False).only("id", "title")
    running = running_turns(order)
    present = {row.pk: row for row in rows}
    present.setdefault(thread.pk, thread)
    threads = []
    for pk in order:
        row = present.get(pk)
        if row is None:
            continue
        parent, point, _created = links.get(pk, (None, 0, None))
        if parent not in present:
            parent, point = None, 0
        threads.append(FamilyThread(pk, row.title, parent, point, running.get(pk)))
    # Thread ids come back as text (Cast), mapped to the members' UUIDs by a
    # dict: building a UUID per row was most of the assembly time.
    by_text = {}
    for member in threads:
        by_text[member.pk.hex] = by_text[str(member.pk)] = member.pk
    members = [member.pk for member in threads]
    as_text = Cast("thread_id", output_field=CharField())
    # Only the turns that did not complete have a status worth a row here.
    statuses = {
        (by_text[thread_id], index): status
        for thread_id, index, status in Turn.objects.filter(thread_id__in=members)
        .exclude(status=Turn.Status.COMPLETE)
        .values_list(as_text, "index", "status")
    }
    turns = []
    complete = Turn.Status.COMPLETE
    for thread_id, index, message in WorkspaceSnapshot.objects.filter(thread_id__in=members).values_list(
        as_text, "turn_index", Substr("user_message", 1, MESSAGE_START_CHARS + 1)
    ):
        pk = by_text[thread_id]
        turns.append(TurnFact(pk, index, _start(message), statuses.get((pk, index), complete)))
    return assemble(current=thread.pk, threads=threads, turns=turns)


def _start(message: str) -> str:
    if "\n" in message or "\t" in message or "\r" in message:
        message = " ".join(message.split())
    return message if len(message) <= MESSAGE_START_CHARS else message[:MESSAGE_START_CHARS].rstrip() + "…"


def is_own_turn(*, thread: Thread, turn_index: int) -> bool:
    """Whether the map draws `turn_index` as a node of `thread`: an ended
    turn it has, past its branch point (up to there the turns are its parent's)."""
    if turn_index < 1 or turn_index > thread.turn_index or turn_index == running_turn(thread):
        return False
    link = BranchLink.objects.filter(thread=thread, status=BranchLink.Status.ACTIVE).first()
    if link is not None and turn_index <= link.branch_point_turn and not link.parent.is_deleted:
        return False
    return WorkspaceSnapshot.objects.filter(thread=thread, turn_index=turn_index).exists()


def continue_point(*, user, thread_id, turn_index) -> tuple[Thread, int]:
    """The thread and turn a message sent from a preview continues from, as
    the chat form carries them ("Continue from here"); InvalidInput when
    they are not a turn of the person's map."""
    try:
        thread_id = uuid.UUID(str(thread_id))
        turn_index = int(turn_index)
    except (TypeError, ValueError, AttributeError):
        raise InvalidInput(NO_SUCH_TURN) from None
    thread = thread_for_user(user=user, thread_id=thread_id)
    if thread is None or not is_own_turn(thread=thread, turn_index=turn_index):
        raise InvalidInput(NO_SUCH_TURN)
    return thread, turn_index


def navigate_html(thread: Thread, *, note: str = "") -> str:
    """Sends the page to `thread` (static/js/live.js, the "navigate" patch),
    where `note` (one of conversations.forms.PAGE_NOTES) is shown."""
    url = reverse("thread-page", kwargs={"thread_id": thread.pk}) + page_note_query(note)
    return render_to_string(f"{TEMPLATE}#navigate", {"url": url})


# --- rendering ----------------------------------------------------------------------


class MapMarkup:
    """The map's markup for a family, rendered once and shared by every
    member's page: only the nodes on a member's path (and its current node)
    are rendered again for it. Plain string building with the stdlib's
    escape, not a template loop: a thousand nodes render in milliseconds
    (docs/adr/0016)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.urls = [
            reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": 0})[: -len("0/")]
            for thread in graph.threads
        ]
        self.node_parts = [self._node(node, "") for node in graph.nodes]
        self.edges = "".join(f'<path class="tedge tedge-{edge.kind}" d="{edge.d}"/>' for edge in graph.edges)

    def _node(self, node: Node, state: str) -> str:
        # Kept short: a family of a thousand turns is pushed whole. The
        # preview URL is the lane's (data-urls on the map) plus the turn
        # number (static/js/trajectory.js).
        status = "" if node.status == Turn.Status.COMPLETE else f" tnode-{node.status}"
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
        path = "".join(f'<path class="tedge on-path" d="{edge.d}"/>' for edge in graph.path_edges)
        return {
            "graph": graph,
            "map_layout": layout_key(graph),
            "lane_urls": " ".join(self.urls),
            "nodes_html": mark_safe("".join(parts)),
            "edges_html": mark_safe(self.edges + path),
        }

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
        edges = [f'<path class="tedge tedge-{edge.kind}" d="{edge.d}"/>' for edge in graph.edges if edge.target is node]
        edges += [f'<path class="tedge on-path" d="{edge.d}"/>' for edge in graph.path_edges if edge.target is node]
        context = {
            "graph": graph,
            "map_layout": layout_key(graph),
            "node_html": mark_safe(self._node(node, state)),
            "edges_html": mark_safe("".join(edges)),
        }
        return render_to_string(f"{TEMPLATE}#node_patch", context)


def layout_key(graph: Graph) -> str:
    """Names a map's lanes (which thread each one is, in order): a node
    patch fits an open map only when that map has the same lanes, since a
    node's place depends on its lane (a new branch adds one, and may move
    others right)."""
    lanes = " ".join(str(thread.pk) for thread in graph.threads)
    return hashlib.sha1(lanes.encode(), usedforsecurity=False).hexdigest()[:12]


def map_context(graph: Graph) -> dict:
    return MapMarkup(graph).for_member(graph.current_thread)


def render_map(graph: Graph, *, oob: bool = False) -> str:
    return render_to_string(f"{TEMPLATE}#map", {**map_context(graph), "oob": oob})


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
    return {
        member.pk: render_to_string(f"{TEMPLATE}#map", {**markup.for_member(member.pk), "oob": True})
        for member in markup.graph.threads
    }


def turn_ended_patches(*, thread_id, turn_index: int) -> dict:
    """What every family member's open map needs after `thread_id`'s turn
    `turn_index` ended, by thread: that turn's node (a few hundred bytes,
    whatever the family's size), or the whole map when the node is the
    first one drawn or is not drawn at all. A map whose lanes changed since
    its page was built asks for itself again (static/js/trajectory.js)."""
    thread = Thread.objects.filter(pk=thread_id).first()
    if thread is None:
        return {}
    markup = MapMarkup(family_graph(thread=thread))
    patches = {}
    for member in markup.graph.threads:
        patch = None if len(markup.graph.nodes) < 2 else markup.node_patch(member.pk, thread_id=thread.pk, turn_index=turn_index)
        if patch is None:
            patch = render_to_string(f"{TEMPLATE}#map", {**markup.for_member(member.pk), "oob": True})
        patches[member.pk] = patch
    return patches


def publish_family(*, thread_id) -> None:
    """Bring every open page of the family up to date (a turn ended, a branch was made)."""
    for member, html in family_maps(thread_id=thread_id).items():
        publisher.publish(member, html)


# --- a turn's preview ---------------------------------------------------------------


def preview_context(*, thread: Thread, turn_index: int) -> dict | None:
    """The workspace after `turn_index` as the preview shows it: the state a
    branch from there starts from (workspace.selectors.workspace_after_turn,
    docs/adr/0014), read-only plain values. None if it cannot be read."""
    after = workspace_after_turn(thread=thread, turn_index=turn_index)
    if after is None:
        return None
    numbers = plan_tree.outline_numbers([step["depth"] for step in after.todos])
    plan = [
        {"text": step["text"], "done": step["done"], "indent": step["depth"] * 1.2, "number": number}
        for step, number in zip(after.todos, numbers)
    ]
    return {
        "objective_text": after.objective_text,
        "preferences": after.preferences,
        "plan": plan,
        "document_title": after.document_title,
        "document_html": render_markdown(after.document_content),
    }
