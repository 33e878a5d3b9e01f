"""The plan's tree algebra, on plain lists of depths (docs/adr/0002).

A plan is stored as a pre-order list: row i has a depth, the first row has
depth 0 and each row is at most one level deeper than the row before it.
Every function here is pure: it reads depths and returns indices or a
`Layout` (which old row goes where, at which depth), and
workspace.services.plan writes the result back. Refusals raise
InvalidInput with a sentence fit for the person or the model.
"""

from dataclasses import dataclass

from .errors import InvalidInput

MAX_DEPTH = 8  # nine levels: 1 to 1.1.1.1.1.1.1.1.1
TOO_DEEP = f"The plan can nest at most {MAX_DEPTH + 1} levels deep."


@dataclass(frozen=True)
class Layout:
    """A new plan made of the old rows: row k of the new plan is old row
    `order[k]`, at depth `depths[k]`."""

    order: list[int]
    depths: list[int]


def is_valid(depths: list[int]) -> bool:
    previous = -1
    for depth in depths:
        if depth < 0 or depth > previous + 1 or depth > MAX_DEPTH:
            return False
        previous = depth
    return True


def subtree_end(depths: list[int], i: int) -> int:
    """One past the last descendant of row i."""
    j = i + 1
    while j < len(depths) and depths[j] > depths[i]:
        j += 1
    return j


def siblings(depths: list[int], i: int) -> list[int]:
    """Row i and its siblings (same parent), in order."""
    depth = depths[i]
    start = i
    while start > 0 and depths[start - 1] >= depth:
        start -= 1
    found = []
    j = start
    while j < len(depths) and depths[j] >= depth:
        if depths[j] == depth:
            found.append(j)
        j += 1
    return found


def sibling(depths: list[int], i: int, step: int) -> int | None:
    """The previous (step -1) or next (step +1) sibling of row i, if any."""
    depth = depths[i]
    j = i + step
    while 0 <= j < len(depths):
        if depths[j] < depth:
            return None
        if depths[j] == depth:
            return j
        j += step
    return None


def outline_numbers(depths: list[int]) -> list[str]:
    """Dotted outline numbers (1, 1.1, 1.1.1, 2) for a pre-order list."""
    counters: list[int] = []
    numbers = []
    for depth in depths:
        del counters[depth + 1 :]
        while len(counters) < depth + 1:
            counters.append(0)
        counters[depth] += 1
        numbers.append(".".join(str(n) for n in counters[: depth + 1]))
    return numbers


def child_slot(depths: list[int], parent: int | None) -> tuple[int, int]:
    """(insert at, depth) for a new last child of row `parent`, or for a new
    top-level row at the end when `parent` is None."""
    if parent is None:
        return len(depths), 0
    return subtree_end(depths, parent), depths[parent] + 1


def check_outline(depths: list[int], *, base: int) -> None:
    """An outline to insert (depths relative to its own top level) fits
    under a parent at depth `base - 1`."""
    if base + max(depths, default=0) > MAX_DEPTH:
        raise InvalidInput(TOO_DEEP)


def _identity(depths: list[int]) -> list[int]:
    return list(range(len(depths)))


def indent(depths: list[int], i: int) -> Layout:
    """Row i and its subtree become the last children of its previous sibling."""
    if i == 0 or depths[i - 1] < depths[i]:
        raise InvalidInput("This step has no step above it at the same level, so it cannot be indented.")
    end = subtree_end(depths, i)
    if max(depths[i:end]) + 1 > MAX_DEPTH:
        raise InvalidInput(TOO_DEEP)
    new = list(depths)
    for j in range(i, end):
        new[j] += 1
    return Layout(order=_identity(depths), depths=new)


def outdent(depths: list[int], i: int) -> Layout:
    """Row i and its subtree move one level up, right after its parent's
    subtree; the rows that followed it stay under the old parent."""
    if depths[i] == 0:
        raise InvalidInput("This step is already at the top level, so it cannot be outdented.")
    parent = i - 1
    while depths[parent] >= depths[i]:
        parent -= 1
    end = subtree_end(depths, i)
    moving = list(range(i, end))
    rest = [j for j in range(len(depths)) if not i <= j < end]
    insert_at = rest.index(parent)
    parent_end = insert_at + 1
    while parent_end < len(rest) and depths[rest[parent_end]] > depths[parent]:
        parent_end += 1
    order = rest[:parent_end] + moving + rest[parent_end:]
    shifted = {j: depths[j] - 1 for j in moving}
    return Layout(order=order, depths=[shifted.get(j, depths[j]) for j in order])


def move_among_siblings(depths: list[int], i: int, sibling_index: int) -> Layout:
    """Row i (with its subtree) takes place `sibling_index` (0-based) among
    its siblings; nothing changes level."""
    peers = siblings(depths, i)
    if not isinstance(sibling_index, int) or isinstance(sibling_index, bool) or not 0 <= sibling_index < len(peers):
        raise InvalidInput(f"Position {sibling_index!r} is out of range; this level has {len(peers)} steps.")
    blocks = [list(range(s, subtree_end(depths, s))) for s in peers]
    block = blocks.pop(peers.index(i))
    blocks.insert(sibling_index, block)
    start, stop = peers[0], subtree_end(depths, peers[-1])
    order = list(range(start)) + [j for b in blocks for j in b] + list(range(stop, len(depths)))
    return Layout(order=order, depths=[depths[j] for j in order])


ACROSS_LEVELS = "Dragging only reorders a step among the steps at its own level; use Indent or Outdent to change its level."


def parent_of(depths: list[int], i: int) -> int | None:
    """The row row i is a sub-step of, or None at the top level."""
    j = i - 1
    while j >= 0 and depths[j] >= depths[i]:
        j -= 1
    return j if j >= 0 else None


def place_before(depths: list[int], i: int, before: int | None) -> Layout:
    """Row i (with its subtree) dropped just before row `before` (None: at
    the end of the plan), as a drag in the tree means it. The drop must land
    among row i's siblings (between two of them, or after the last one, still
    inside the parent's subtree); anywhere else would change its level, which
    only indent and outdent do (docs/adr/0002, 0023)."""
    end = subtree_end(depths, i)
    if before is not None and i < before < end:
        raise InvalidInput("A step cannot be dropped among its own sub-steps.")
    if before == i:
        return Layout(order=_identity(depths), depths=list(depths))
    rest = [j for j in range(len(depths)) if not i <= j < end]
    rest_depths = [depths[j] for j in rest]
    slot = len(rest) if before is None else rest.index(before)
    parent = parent_of(depths, i)  # before row i, so its place in `rest` is the same
    first = 0 if parent is None else parent + 1
    last = len(rest) if parent is None else subtree_end(rest_depths, parent)
    depth = depths[i]
    if not first <= slot <= last or (slot < last and rest_depths[slot] != depth):
        raise InvalidInput(ACROSS_LEVELS)
    return move_among_siblings(depths, i, sum(1 for d in rest_depths[first:slot] if d == depth))


def move_step(depths: list[int], i: int, direction: str) -> Layout:
    """One place up or down among its siblings."""
    if direction not in ("up", "down"):
        raise InvalidInput("Direction must be 'up' or 'down'.")
    peers = siblings(depths, i)
    target = peers.index(i) + (-1 if direction == "up" else 1)
    if not 0 <= target < len(peers):
        raise InvalidInput(f"This step is already the {'first' if direction == 'up' else 'last'} at its level.")
    return move_among_siblings(depths, i, target)


def one_based(depths: list[int], index) -> int:
    """0-based row for a 1-based plan index, with a message the model can act on."""
    if not isinstance(index, int) or isinstance(index, bool):
        raise InvalidInput(f"Index {index!r} is not a number.")
    if not 1 <= index <= len(depths):
        raise InvalidInput(
            f"Plan index {index} is out of range; the plan has {len(depths)} steps (1-based, in outline order)."
            if depths
            else f"Plan index {index} is out of range; the plan is empty."
        )
    return index - 1
