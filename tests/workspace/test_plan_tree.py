"""Property-style tests of the plan tree.

Random sequences of tree operations run against the real services on a
fresh thread. After every operation the stored plan must be a valid pre-order
tree with dense positions, and it must equal what an independent model says:
a nested tree of nodes (children lists), a different representation from the
flat position/depth list the services keep. An operation the model refuses
must raise and leave the database exactly as it was. A few worked examples
of workspace.plan_tree's pure functions follow the properties.
"""

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversations.services import thread_create
from workspace import plan_tree
from workspace.errors import InvalidInput, NotFound, WorkspaceError
from workspace.models import TODO_MAX_DEPTH, Todo
from workspace.services import plan as plan_services

pytestmark = pytest.mark.django_db

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


class Refused(Exception):
    """The model says the services must refuse this operation."""


class Node:
    def __init__(self, pk: int, text: str):
        self.pk = pk
        self.text = text
        self.done = False
        self.children: list[Node] = []


class PlanModel:
    def __init__(self):
        self.root = Node(pk=0, text="")

    def preorder(self) -> list[tuple[Node, int, Node]]:
        rows = []

        def walk(node, depth):
            for child in node.children:
                rows.append((child, depth, node))
                walk(child, depth + 1)

        walk(self.root, 0)
        return rows

    def locate(self, pk):
        for node, depth, parent in self.preorder():
            if node.pk == pk:
                return node, depth, parent
        raise Refused("gone")

    def parent_of(self, target):
        for node, _, parent in self.preorder():
            if node is target:
                return parent
        raise AssertionError("not in tree")

    @staticmethod
    def height(node) -> int:
        return 1 + max((PlanModel.height(c) for c in node.children), default=-1)

    @staticmethod
    def subtree(node) -> list[int]:
        pks = [node.pk]
        for child in node.children:
            pks += PlanModel.subtree(child)
        return pks

    def rows(self):
        return [(n.pk, i, d, n.text, n.done) for i, (n, d, _) in enumerate(self.preorder())]

    # Each operation mutates the model or raises Refused, never both.

    def add_under(self, parent_pk, node):
        if parent_pk is None:
            self.root.children.append(node)
            return
        parent, depth, _ = self.locate(parent_pk)
        if depth + 1 > TODO_MAX_DEPTH:
            raise Refused("too deep")
        parent.children.append(node)

    def check_outline(self, depths, parent_index):
        if not depths:
            raise Refused("empty")
        previous = -1
        for d in depths:
            if d > previous + 1:
                raise Refused("skips a level")
            previous = d
        base = 0
        if parent_index is not None:
            rows = self.preorder()
            if not 1 <= parent_index <= len(rows):
                raise Refused("parent index out of range")
            base = rows[parent_index - 1][1] + 1
        if base + max(depths) > TODO_MAX_DEPTH:
            raise Refused("too deep")

    def add_outline(self, nodes_and_depths, parent_index):
        parent = self.root if parent_index is None else self.preorder()[parent_index - 1][0]
        stack = [parent]
        for node, d in nodes_and_depths:
            del stack[d + 1 :]
            stack[-1].children.append(node)
            stack.append(node)

    def indent(self, pk):
        node, depth, parent = self.locate(pk)
        i = parent.children.index(node)
        if i == 0:
            raise Refused("no previous sibling")
        if depth + 1 + self.height(node) > TODO_MAX_DEPTH:
            raise Refused("too deep")
        parent.children.pop(i)
        parent.children[i - 1].children.append(node)

    def outdent(self, pk):
        node, _, parent = self.locate(pk)
        if parent is self.root:
            raise Refused("top level")
        grandparent = self.parent_of(parent)
        parent.children.remove(node)
        grandparent.children.insert(grandparent.children.index(parent) + 1, node)

    def move_to(self, pk, k):
        node, _, parent = self.locate(pk)
        if not isinstance(k, int) or not 0 <= k < len(parent.children):
            raise Refused("out of range")
        parent.children.remove(node)
        parent.children.insert(k, node)

    def move(self, pk, direction):
        node, _, parent = self.locate(pk)
        target = parent.children.index(node) + (-1 if direction == "up" else 1)
        if not 0 <= target < len(parent.children):
            raise Refused("at the edge")
        self.move_to(pk, target)

    def place_before(self, pk, before_pk):
        """A drag: the node goes before `before_pk` (None: the end of the
        plan), which must be a sibling, or the first row after its parent's
        subtree (then it goes last among its siblings)."""
        node, _, parent = self.locate(pk)
        if before_pk == pk:
            return
        if before_pk in self.subtree(node):
            raise Refused("inside itself")
        siblings = [c.pk for c in parent.children]
        if before_pk in siblings:
            parent.children.remove(node)
            parent.children.insert([c.pk for c in parent.children].index(before_pk), node)
            return
        order = [n.pk for n, _, _ in self.preorder()]
        after_parent = None
        if parent is not self.root:
            end = order.index(parent.pk) + len(self.subtree(parent))
            after_parent = order[end] if end < len(order) else None
        if before_pk != after_parent:
            raise Refused("another level")
        parent.children.remove(node)
        parent.children.append(node)

    def delete(self, pk) -> list[int]:
        node, _, parent = self.locate(pk)
        parent.children.remove(node)
        return self.subtree(node)

    def targets(self, indices) -> list[Node]:
        rows = self.preorder()
        if not indices:
            raise Refused("no indices")
        for index in indices:
            if not 1 <= index <= len(rows):
                raise Refused("index out of range")
        unique = []
        for index in indices:
            if rows[index - 1][0] not in unique:
                unique.append(rows[index - 1][0])
        return unique

    def remove_by_index(self, indices):
        for node in self.targets(indices):
            present = {n.pk for n, _, _ in self.preorder()}
            if node.pk in present:
                self.delete(node.pk)

    def toggle_by_index(self, indices):
        for node in self.targets(indices):
            node.done = not node.done


def _stored(thread):
    return list(Todo.objects.filter(thread=thread).order_by("position").values_list("pk", "position", "depth", "text", "done"))


def _assert_valid(thread):
    rows = _stored(thread)
    assert [r[1] for r in rows] == list(range(len(rows))), "positions are not dense 0..n-1"
    assert plan_tree.is_valid([r[2] for r in rows]), f"not a pre-order tree: {[r[2] for r in rows]}"
    return rows


OPERATIONS = [
    "add_end",
    "add_under",
    "add_outline",
    "indent",
    "outdent",
    "move_up",
    "move_down",
    "delete",
    "remove_by_index",
    "toggle_by_index",
    "set_done",
    "stale_step",
    "indent_then_outdent",
    "place_before",
]


def _fresh_thread():
    owner = get_user_model().objects.create(username=f"prop-{uuid.uuid4().hex[:12]}")
    return thread_create(owner=owner, title="Property")


def _run(thread, model, name, data, deleted):
    """Apply one random operation to both sides; returns what the model expects."""
    rows = model.preorder()
    counter = len(_stored(thread)) + len(deleted)
    pick = lambda: rows[data.draw(st.integers(0, len(rows) - 1), label="row")][0]  # noqa: E731

    if name == "add_end":
        todo = plan_services.todo_add(thread=thread, text=f"step {counter}")
        model.add_under(None, Node(todo.pk, todo.text))
        return

    if not rows and name not in ("add_outline", "remove_by_index", "toggle_by_index", "stale_step"):
        todo = plan_services.todo_add(thread=thread, text=f"step {counter}")
        model.add_under(None, Node(todo.pk, todo.text))
        return

    if name == "add_under":
        parent = pick()
        if model.locate(parent.pk)[1] + 1 > TODO_MAX_DEPTH:
            _expect_refusal(thread, InvalidInput, lambda: plan_services.todo_add(thread=thread, text="x", parent=_todo(parent)))
            return
        todo = plan_services.todo_add(thread=thread, text=f"step {counter}", parent=_todo(parent))
        model.add_under(parent.pk, Node(todo.pk, todo.text))
        return

    if name == "add_outline":
        depths = data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4), label="depths")
        parent_index = data.draw(st.none() | st.integers(0, len(rows) + 1), label="parent_index")
        steps = [{"text": f"outline {counter}.{n}", "depth": d} for n, d in enumerate(depths)]
        try:
            model.check_outline(depths, parent_index)
        except Refused:
            _expect_refusal(
                thread,
                InvalidInput,
                lambda: plan_services.todos_add_outline(thread=thread, steps=steps, parent_index=parent_index),
            )
            return
        created = plan_services.todos_add_outline(thread=thread, steps=steps, parent_index=parent_index)
        assert [t.text for t in created] == [s["text"] for s in steps]
        model.add_outline([(Node(t.pk, t.text), d) for t, d in zip(created, depths)], parent_index)
        return

    if name == "stale_step":
        if not deleted:
            return
        ghost = deleted[data.draw(st.integers(0, len(deleted) - 1), label="ghost")]
        operation = data.draw(
            st.sampled_from(
                [
                    lambda t: plan_services.todo_indent(todo=t),
                    lambda t: plan_services.todo_outdent(todo=t),
                    lambda t: plan_services.todo_move(todo=t, direction="up"),
                    lambda t: plan_services.todo_move(todo=t, direction="down"),
                    lambda t: plan_services.todo_place(todo=t),
                    lambda t: plan_services.todo_delete(todo=t),
                    lambda t: plan_services.todo_add(thread=thread, text="child of a ghost", parent=t),
                ]
            ),
            label="ghost operation",
        )
        _expect_refusal(thread, NotFound, lambda: operation(ghost))
        return

    if name in ("remove_by_index", "toggle_by_index"):
        indices = data.draw(st.lists(st.integers(0, len(rows) + 1), min_size=0, max_size=3), label="indices")
        service = plan_services.todos_remove_by_index if name == "remove_by_index" else plan_services.todos_toggle_by_index
        apply = model.remove_by_index if name == "remove_by_index" else model.toggle_by_index
        before = {r[0]: r for r in _stored(thread)}
        try:
            model.targets(indices)
        except Refused:
            _expect_refusal(thread, InvalidInput, lambda: service(thread=thread, indices=indices))
            return
        result = service(thread=thread, indices=indices)
        assert result.done and not result.skipped
        apply(indices)
        if name == "remove_by_index":
            gone = set(before) - {n.pk for n, _, _ in model.preorder()}
            deleted.extend(Todo(pk=pk, thread=thread, text="", position=0) for pk in gone)
        return

    node = pick()
    todo = _todo(node)

    if name == "set_done":
        done = data.draw(st.booleans(), label="done")
        plan_services.todo_set_done(todo=todo, done=done)
        node.done = done
        return

    if name == "delete":
        subtree = model.subtree(node)
        before = {r[0] for r in _stored(thread)}
        assert plan_services.todo_delete(todo=todo) == len(subtree)
        model.delete(node.pk)
        after = {r[0] for r in _stored(thread)}
        # Exactly the step and its descendants went.
        assert before - after == set(subtree) and after <= before
        deleted.extend(Todo(pk=pk, thread=thread, text="", position=0) for pk in subtree)
        return

    if name in ("move_up", "move_down"):
        direction = "up" if name == "move_up" else "down"

        def call():
            plan_services.todo_move(todo=todo, direction=direction)

        subtree = model.subtree(node)
        depth = model.locate(node.pk)[1]
        try:
            model.move(node.pk, direction)
        except Refused:
            _expect_refusal(thread, InvalidInput, call)
            return
        call()
        stored = _stored(thread)
        start = [r[0] for r in stored].index(node.pk)
        block = stored[start : start + len(subtree)]
        # The moved step carries its whole subtree, contiguous and at the same depths.
        assert [r[0] for r in block] == subtree
        assert block[0][2] == depth
        return

    if name in ("indent", "outdent"):
        service = plan_services.todo_indent if name == "indent" else plan_services.todo_outdent
        subtree = model.subtree(node)
        try:
            model.indent(node.pk) if name == "indent" else model.outdent(node.pk)
        except Refused:
            _expect_refusal(thread, InvalidInput, lambda: service(todo=todo))
            return
        service(todo=todo)
        stored = _stored(thread)
        start = [r[0] for r in stored].index(node.pk)
        assert [r[0] for r in stored[start : start + len(subtree)]] == subtree
        return

    if name == "place_before":
        before_row = data.draw(st.none() | st.integers(0, len(rows) - 1), label="before")
        before = None if before_row is None else rows[before_row][0]
        subtree = model.subtree(node)
        depth = model.locate(node.pk)[1]

        def call():
            plan_services.todo_place(todo=todo, before=None if before is None else _todo(before))

        try:
            model.place_before(node.pk, None if before is None else before.pk)
        except Refused:
            _expect_refusal(thread, InvalidInput, call)
            return
        call()
        stored = _stored(thread)
        start = [r[0] for r in stored].index(node.pk)
        block = stored[start : start + len(subtree)]
        assert [r[0] for r in block] == subtree and block[0][2] == depth
        return

    if name == "indent_then_outdent":
        _, _, parent = model.locate(node.pk)
        is_last = parent.children[-1] is node
        try:
            model.indent(node.pk)
        except Refused:
            _expect_refusal(thread, InvalidInput, lambda: plan_services.todo_indent(todo=todo))
            return
        before = _stored(thread)
        plan_services.todo_indent(todo=todo)
        _assert_valid(thread)
        plan_services.todo_outdent(todo=_todo(node))
        model.outdent(node.pk)
        if is_last:
            # With no following siblings, outdent exactly undoes indent.
            assert [r[:3] for r in _stored(thread)] == [r[:3] for r in before]
        return

    raise AssertionError(f"unknown operation {name}")


def _todo(node) -> Todo:
    return Todo.objects.get(pk=node.pk)


def _expect_refusal(thread, error, call):
    before = _stored(thread)
    with pytest.raises(error) as exc:
        call()
    assert isinstance(exc.value, WorkspaceError) and exc.value.message
    assert _stored(thread) == before, "a refused operation changed the plan"


@PROPERTY_SETTINGS
@given(data=st.data())
def test_random_tree_operations_keep_a_valid_preorder_tree_matching_the_model(data):
    with transaction.atomic():
        thread = _fresh_thread()
        model = PlanModel()
        deleted: list[Todo] = []
        steps = data.draw(st.lists(st.sampled_from(OPERATIONS), min_size=1, max_size=25), label="operations")
        for name in steps:
            _run(thread, model, name, data, deleted)
            rows = _assert_valid(thread)
            assert rows == model.rows(), f"after {name}: stored plan differs from the model"
        transaction.set_rollback(True)


@PROPERTY_SETTINGS
@given(depths=st.lists(st.integers(0, TODO_MAX_DEPTH + 1), min_size=0, max_size=12))
def test_is_valid_plan_matches_the_preorder_rule(depths):
    expected = all(0 <= d <= TODO_MAX_DEPTH for d in depths) and all(
        d <= (depths[i - 1] + 1 if i else 0) for i, d in enumerate(depths)
    )
    assert plan_tree.is_valid(depths) is expected


def _clamp_to_preorder(depths):
    out = []
    for d in depths:
        out.append(min(d, out[-1] + 1) if out else 0)
    return out


@PROPERTY_SETTINGS
@given(depths=st.lists(st.integers(0, 3), min_size=1, max_size=10).map(_clamp_to_preorder))
def test_outline_numbers_count_siblings_under_each_parent(depths):
    numbers = plan_tree.outline_numbers(depths)
    for number, depth in zip(numbers, depths):
        assert number.count(".") == depth
    assert len(set(numbers)) == len(numbers)
    # Every dotted number's parent appears before it.
    for i, number in enumerate(numbers):
        if "." in number:
            assert number.rsplit(".", 1)[0] in numbers[:i]


def test_move_among_siblings_reorders_whole_subtrees_at_one_level():
    from workspace import plan_tree

    depths = [0, 0, 1, 0]  # A, B, B.1, C
    assert plan_tree.move_among_siblings(depths, 3, 0) == plan_tree.Layout(order=[3, 0, 1, 2], depths=[0, 0, 0, 1])
    assert plan_tree.move_among_siblings(depths, 1, 0) == plan_tree.Layout(order=[1, 2, 0, 3], depths=[0, 1, 0, 0])
    assert plan_tree.move_among_siblings(depths, 0, 0).order == [0, 1, 2, 3]
    for bad in (3, -1, "1", True):
        with pytest.raises(InvalidInput, match="out of range; this level has 3 steps"):
            plan_tree.move_among_siblings(depths, 0, bad)


def test_place_before_moves_among_siblings_and_refuses_other_levels():
    depths = [0, 1, 1, 0, 1, 0]  # A, A.1, A.2, B, B.1, C
    # C before A; A.1 after A.2 (before B: the first row after A's subtree); B at the end.
    assert plan_tree.place_before(depths, 5, 0) == plan_tree.Layout(order=[5, 0, 1, 2, 3, 4], depths=[0, 0, 1, 1, 0, 1])
    assert plan_tree.place_before(depths, 1, 3).order == [0, 2, 1, 3, 4, 5]
    assert plan_tree.place_before(depths, 3, None).order == [0, 1, 2, 5, 3, 4]
    assert plan_tree.place_before(depths, 2, 2).order == [0, 1, 2, 3, 4, 5]
    # A.1 before B.1 or C, C before A.2 or B.1: each would change its level.
    for i, before in ((1, 4), (1, 5), (5, 2), (5, 4), (1, 0), (4, None)):
        with pytest.raises(InvalidInput, match="only reorders a step among the steps at its own level"):
            plan_tree.place_before(depths, i, before)
    with pytest.raises(InvalidInput, match="among its own sub-steps"):
        plan_tree.place_before(depths, 3, 4)


def test_outline_numbers_restart_counters_below_a_new_parent():
    depths = [0, 1, 2, 2, 1, 0, 1, 2]
    assert plan_tree.outline_numbers(depths) == ["1", "1.1", "1.1.1", "1.1.2", "1.2", "2", "2.1", "2.1.1"]
