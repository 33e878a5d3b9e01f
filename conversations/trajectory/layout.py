"""The trajectory map's graph, laid out: plain values in, nodes with their
places and the edges between them out (docs/adr/0016). No Django here, so
the shape rules are tested without a database.

The family is every thread related to one through active branch links: up
to the root, then every descendant. A node is one ended turn; a forked
thread's turns up to its branch point are its parent's, so they are drawn
once, in the thread that owns them, and the fork's own turns hang off the
parent's branch-point turn. Edges join a thread's consecutive turns and a
branch point to the fork's first own turn.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise

# A turn that ended normally (conversations.models.Turn.Status.COMPLETE);
# the map marks only the others.
COMPLETE = "complete"
# Layout grid, in CSS pixels: one lane per thread, one row per turn number.
LANE_WIDTH = 150
ROW_HEIGHT = 44
NODE_WIDTH = 136
NODE_HEIGHT = 26
PAD = 6


@dataclass(frozen=True, slots=True)
class FamilyThread:
    pk: uuid.UUID
    title: str
    parent: uuid.UUID | None = None  # only when the parent is in the family
    branch_point: int = 0  # the parent's turn it was forked after (0: a root)
    running: int | None = None  # its turn in progress, not drawn yet


@dataclass(frozen=True, slots=True)
class BranchOrigin:
    parent_id: uuid.UUID
    parent_title: str
    turn_index: int  # the parent's turn it was branched after (0: before turn 1)


@dataclass(frozen=True, slots=True)
class TurnFact:
    thread: uuid.UUID
    index: int
    message: str
    status: str = COMPLETE


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

    @property
    def origin(self) -> BranchOrigin | None:
        """Where the current thread was branched from, for its top bar: its
        parent in the family and the parent's turn; None for a root."""
        lane = self._lanes.get(self.current_thread)
        if lane is None or self.threads[lane].parent is None:
            return None
        member = self.threads[lane]
        parent = self.threads[self._lanes[member.parent]]
        return BranchOrigin(parent_id=parent.pk, parent_title=parent.title, turn_index=member.branch_point)


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


def layout_key(graph: Graph) -> str:
    """Names a map's lanes (which thread each one is, in order): a node
    patch fits an open map only when that map has the same lanes, since a
    node's place depends on its lane (a new branch adds one, and may move
    others right)."""
    lanes = " ".join(str(thread.pk) for thread in graph.threads)
    return hashlib.sha1(lanes.encode(), usedforsecurity=False).hexdigest()[:12]


def nodes_key(graph: Graph) -> str:
    """What a map's nodes are, as an open page can count them on itself
    (static/js/trajectory.js): how many it draws of each status ("complete:5
    failed:1"). With `layout_key`, what a page that has just joined its
    thread's pushes checks its map against (docs/adr/0156)."""
    counts = Counter(node.status for node in graph.nodes)
    return " ".join(f"{status}:{count}" for status, count in sorted(counts.items()))
