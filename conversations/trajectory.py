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

import uuid
from dataclasses import dataclass, field

from django.db.models.functions import Substr
from django.template.loader import render_to_string
from django.urls import reverse

from workspace import plan_tree
from workspace.markdown import render_markdown
from workspace.models import Thread, WorkspaceSnapshot
from workspace.selectors import snapshot_for, workspace_reading_for

from .live import publisher
from .models import BranchLink, Turn
from .turns.guard import running_turn

TEMPLATE = "conversations/panels/trajectory.html"
# How much of a user message a node shows (the rest is in its preview).
MESSAGE_START_CHARS = 60
# Layout grid, in CSS pixels: one lane per thread, one row per turn number.
LANE_WIDTH = 150
ROW_HEIGHT = 34
NODE_WIDTH = 136
NODE_HEIGHT = 26
PAD = 6


@dataclass(frozen=True)
class FamilyThread:
    pk: uuid.UUID
    title: str
    parent: uuid.UUID | None = None  # only when the parent is in the family
    branch_point: int = 0  # the parent's turn it was forked after (0: a root)
    running: int | None = None  # its turn in progress, not drawn yet


@dataclass(frozen=True)
class TurnFact:
    thread: uuid.UUID
    index: int
    message: str
    status: str = Turn.Status.COMPLETE


@dataclass
class Node:
    thread: uuid.UUID
    index: int
    message: str
    status: str
    lane: int
    on_path: bool = False
    current: bool = False

    @property
    def key(self) -> tuple:
        return (self.thread, self.index)

    @property
    def x(self) -> int:
        return PAD + self.lane * LANE_WIDTH

    @property
    def y(self) -> int:
        return PAD + (self.index - 1) * ROW_HEIGHT


@dataclass(frozen=True)
class Edge:
    source: Node
    target: Node
    kind: str  # "turn" or "branch"
    on_path: bool

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
    current_thread: uuid.UUID
    threads: list[FamilyThread]  # in lane order
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    current: Node | None = None

    @property
    def width(self) -> int:
        return 2 * PAD + max(len(self.threads) - 1, 0) * LANE_WIDTH + NODE_WIDTH

    @property
    def height(self) -> int:
        rows = max((node.index for node in self.nodes), default=0)
        return 2 * PAD + max(rows - 1, 0) * ROW_HEIGHT + NODE_HEIGHT

    def node(self, thread, index) -> Node | None:
        return next((n for n in self.nodes if n.thread == thread and n.index == index), None)


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
    """The laid-out graph of a family: `threads` in lane order (a parent before
    its forks), `turns` every turn they have (shared ones included or not:
    a fork's turns up to its branch point are dropped here)."""
    by_pk = {t.pk: t for t in threads}
    lanes = {t.pk: lane for lane, t in enumerate(threads)}
    graph = Graph(current_thread=current, threads=threads)
    own: dict[uuid.UUID, list[Node]] = {t.pk: [] for t in threads}
    for fact in sorted(turns, key=lambda f: (lanes.get(f.thread, -1), f.index)):
        thread = by_pk.get(fact.thread)
        if thread is None or fact.index <= thread.branch_point or fact.index == thread.running:
            continue
        node = Node(fact.thread, fact.index, fact.message, fact.status, lanes[fact.thread])
        own[fact.thread].append(node)
        graph.nodes.append(node)
    index = {node.key: node for node in graph.nodes}

    def owner(thread_pk, turn_index):
        """The thread whose own turn `turn_index` of `thread_pk` is."""
        thread = by_pk[thread_pk]
        while thread.parent is not None and turn_index <= thread.branch_point:
            thread = by_pk[thread.parent]
        return thread.pk

    if current in by_pk:
        last = max((f.index for f in turns if f.thread == current and f.index != by_pk[current].running), default=0)
        last = max(last, by_pk[current].branch_point)
        for turn_index in range(1, last + 1):
            node = index.get((owner(current, turn_index), turn_index))
            if node is not None:
                node.on_path = True
                graph.current = node
        if graph.current is not None:
            graph.current.current = True

    for thread in threads:
        nodes = own[thread.pk]
        if nodes and thread.parent is not None:
            point = index.get((owner(thread.parent, thread.branch_point), thread.branch_point))
            if point is not None:
                graph.edges.append(Edge(point, nodes[0], "branch", point.on_path and nodes[0].on_path))
        for earlier, later in zip(nodes, nodes[1:]):
            graph.edges.append(Edge(earlier, later, "turn", earlier.on_path and later.on_path))
    return graph


# --- the graph from the database --------------------------------------------------


def family_graph(*, thread: Thread) -> Graph:
    """The trajectory graph of `thread`'s family, as its page shows it."""
    links = {
        child: (parent, point, created)
        for child, parent, point, created in BranchLink.objects.filter(
            status=BranchLink.Status.ACTIVE, thread__owner_id=thread.owner_id,
            thread__is_deleted=False, parent__is_deleted=False,
        ).values_list("thread_id", "parent_id", "branch_point_turn", "created_at")
    }
    root, children = family_of(thread.pk, links)
    order = lane_order(root, children)
    rows = Thread.objects.filter(pk__in=order, is_deleted=False).only(
        "id", "title", "running_turn_index", "running_since"
    )
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
        threads.append(FamilyThread(pk, row.title, parent, point, running_turn(row)))
    members = [t.pk for t in threads]
    statuses = {
        (thread_id, index): status
        for thread_id, index, status in Turn.objects.filter(thread_id__in=members).values_list(
            "thread_id", "index", "status"
        )
    }
    turns = [
        TurnFact(thread_id, index, _start(message), statuses.get((thread_id, index), Turn.Status.COMPLETE))
        for thread_id, index, message in WorkspaceSnapshot.objects.filter(thread_id__in=members)
        .annotate(start=Substr("user_message", 1, MESSAGE_START_CHARS + 1))
        .values_list("thread_id", "turn_index", "start")
    ]
    return assemble(current=thread.pk, threads=threads, turns=turns)


def _start(message: str) -> str:
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


# --- rendering ----------------------------------------------------------------------


def map_context(graph: Graph) -> dict:
    """The map's template context: each node with the URL of its preview
    (reversed once per thread, not once per node: a family of a thousand
    turns renders in a few milliseconds, docs/adr/0016)."""
    prefixes = {}
    for thread in graph.threads:
        url = reverse("conversations:trajectory-turn", kwargs={"thread_id": thread.pk, "turn_index": 0})
        prefixes[thread.pk] = url[: -len("0/")]
    items = [{"node": node, "url": f"{prefixes[node.thread]}{node.index}/"} for node in graph.nodes]
    return {"graph": graph, "items": items}


def render_map(graph: Graph, *, oob: bool = False) -> str:
    return render_to_string(f"{TEMPLATE}#map", {**map_context(graph), "oob": oob})


def publish_family(*, thread_id) -> None:
    """Bring every open page of the family up to date (a turn ended, a
    branch was made). Each page highlights its own path, so each member
    gets its own rendering of the one graph."""
    thread = Thread.objects.filter(pk=thread_id).first()
    if thread is None:
        return
    graph = family_graph(thread=thread)
    for member in graph.threads:
        graph_for_member = graph if member.pk == thread.pk else _repath(graph, member.pk)
        publisher.publish(member.pk, render_map(graph_for_member, oob=True))


def _repath(graph: Graph, current) -> Graph:
    facts = [TurnFact(n.thread, n.index, n.message, n.status) for n in graph.nodes]
    return assemble(current=current, threads=graph.threads, turns=facts)


# --- a turn's preview ---------------------------------------------------------------


def workspace_after_turn(*, thread: Thread, turn_index: int) -> dict:
    """The workspace as it stood after `turn_index` ended: what the next
    turn's snapshot captured, or the live rows when no later turn exists.
    Plain values for the read-only preview (nothing in it links to a row)."""
    snapshot = snapshot_for(thread=thread, turn_index=turn_index + 1)
    if snapshot is not None:
        objective_text = snapshot.objective_text
        preferences = [
            {"kind": p.get("kind", ""), "title": p.get("title", ""), "subtitle": p.get("subtitle", ""),
             "locked": bool(p.get("locked"))}
            for p in snapshot.preferences_json
        ]
        todos = [(t.get("text", ""), bool(t.get("done")), int(t.get("depth", 0))) for t in snapshot.todos_json]
        document_title, document_content = snapshot.document_title or "Untitled", snapshot.document_content
    else:
        reading = workspace_reading_for(thread=thread)
        objective_text = reading.objective_text
        preferences = [
            {"kind": kind, "title": title, "subtitle": subtitle, "locked": locked}
            for kind, title, subtitle, locked in reading.preferences
        ]
        todos = reading.todos
        document_title, document_content = (reading.document or ("Untitled", ""))[:2]
    numbers = plan_tree.outline_numbers([depth for _text, _done, depth in todos])
    plan = [
        {"text": text, "done": done, "indent": depth * 1.2, "number": number}
        for (text, done, depth), number in zip(todos, numbers)
    ]
    return {
        "objective_text": objective_text,
        "preferences": preferences,
        "plan": plan,
        "document_title": document_title,
        "document_html": render_markdown(document_content),
    }
