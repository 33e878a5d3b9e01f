"""The plan: a tree of steps stored as a pre-order list (docs/adr/0002).

Each operation loads the thread's steps (locked), asks workspace.plan_tree
for the new layout, and writes positions and depths back in the same
transaction, refusing any result that is not a valid tree.

Every change is kept with who made it (PlanChange, docs/adr/0090): one row
per operation, a person's click or one tool call of the agent, written in
the same transaction. `author`, `token_name` and `person` say who, as for
the objective (workspace.services.objective); a script's change is the
system's. An operation that changes nothing (the same text again, a drop
where the step already was) records nothing."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from django.db import transaction
from django.utils import timezone

from .. import people, plan_tree, write_counts
from ..errors import ChangedMeanwhile, InvalidInput, NotFound, StepMoved
from ..events import Change, announce
from ..indices import index_as_shown
from ..models import TODO_TEXT_MAX_CHARS, PlanChange, Thread, Todo
from ..selectors import PLAN_ORDER, PlanStep, plan_written
from ..text import as_a_page_reads_it, clean_text
from .common import BatchResult, changed, turn_counter

Author = PlanChange.Author
Action = PlanChange.Action

# How a change names its steps: each text up to this many characters, and
# at most this many steps of one tool call (then "and N more").
PLAN_SUMMARY_STEP_CHARS = 200
PLAN_SUMMARY_MAX_STEPS = 10


def _quoted(text: str) -> str:
    if len(text) > PLAN_SUMMARY_STEP_CHARS:
        text = text[: PLAN_SUMMARY_STEP_CHARS - 1].rstrip() + "…"
    return f"“{text}”"


def _listed(names: list[str]) -> str:
    """Names already quoted, joined; past PLAN_SUMMARY_MAX_STEPS, "and N more"."""
    shown = ", ".join(names[:PLAN_SUMMARY_MAX_STEPS])
    hidden = len(names) - PLAN_SUMMARY_MAX_STEPS
    return f"{shown} and {hidden} more" if hidden > 0 else shown


def _steps(n: int) -> str:
    return "1 step" if n == 1 else f"{n} steps"


def _sub_steps(n: int) -> str:
    return "its sub-step" if n == 1 else f"its {n} sub-steps"


def _record(counted, thread_id, action: str, summary: str, *, author: str, token_name: str, person) -> None:
    """One row of the plan's history, and its announcement (after commit).
    `counted`: the thread as the change's own `changed` left it (the
    caller's thread row may be older), its turn counter the row's."""
    entry = PlanChange.objects.create(
        thread_id=thread_id,
        action=action,
        summary=summary,
        author=author,
        token_name=token_name,
        turn_index=turn_counter(thread_id, counted),
        **people.by(person),
    )
    announce(Change(thread_id=thread_id, surface="plan_history", ids=frozenset({entry.pk})))


def _clean_step_text(text) -> str:
    return clean_text(text, label="Step text", max_chars=TODO_TEXT_MAX_CHARS)


def _plan(thread_id) -> list[Todo]:
    """The plan, its rows locked, after the thread's row (every plan write
    locks the thread first: write_counts.lock_thread; one order, so two
    writes never wait on each other's locks)."""
    write_counts.lock_thread(thread_id)
    return list(Todo.objects.select_for_update().filter(thread_id=thread_id).order_by(*PLAN_ORDER))


@dataclass(slots=True)
class _Step:
    """A plan row as a write that changes only marks reads it: plain values,
    not a model instance (building a dozen Todo instances cost about as much
    as the locked read's SQL and queryset together, docs/adr/0140)."""

    pk: int
    text: str
    done: bool
    depth: int


def _plan_rows(thread_id) -> list[_Step]:
    """`_plan`, locked the same way (SELECT … FOR UPDATE where the database
    has it), as plain rows."""
    write_counts.lock_thread(thread_id)
    rows = Todo.objects.select_for_update().filter(thread_id=thread_id).order_by(*PLAN_ORDER)
    return [_Step(*row) for row in rows.values_list("id", "text", "done", "depth")]


# A plan row as a write holds it: a model instance, or plain values.
_Held = TypeVar("_Held", Todo, _Step)


def _depths(todos: Sequence[_Held]) -> list[int]:
    return [t.depth for t in todos]


def _row_of(todos: list[Todo], todo: Todo) -> int:
    for i, candidate in enumerate(todos):
        if candidate.pk == todo.pk:
            return i
    raise NotFound("That plan step no longer exists.")


def _write(todos: list[Todo], depths: list[int]) -> None:
    """Store `todos` in this order at these depths (dense positions 0..n-1),
    writing only the rows that moved; new rows (no pk) are inserted."""
    if not plan_tree.is_valid(depths):
        # Guards against a bug in an operation; the transaction rolls back.
        raise InvalidInput("That change would break the plan's structure, so nothing was changed.")
    moved = []
    for position, (todo, depth) in enumerate(zip(todos, depths)):
        if todo.pk is None:
            todo.position, todo.depth = position, depth
            todo.save()
        elif todo.position != position or todo.depth != depth:
            todo.position, todo.depth = position, depth
            moved.append(todo)
    if moved:
        Todo.objects.bulk_update(moved, ["position", "depth"])


# What a move is called in the history, by the operation that made it.
MOVE_WORDING = {
    "indent": "Indented {name}",
    "outdent": "Outdented {name}",
    "up": "Moved {name} up",
    "down": "Moved {name} down",
    "place": "Moved {name}",  # a drag
}


def _rearrange(
    todo: Todo, layout_for, todos: list[Todo] | None = None, *, verb: str, by: dict, shown_number: str | None = None
) -> None:
    """`shown_number`: the step's outline number as the person's page showed
    it; a step someone moved since (or under a parent that moved) stays
    where it is now (StepMoved, docs/adr/0125)."""
    todos = _plan(todo.thread_id) if todos is None else todos
    i = _row_of(todos, todo)
    depths = _depths(todos)
    was = plan_tree.outline_numbers(depths)[i]
    if shown_number is not None and shown_number != was:
        raise StepMoved(f"{_quoted(todos[i].text)} was moved by someone else meanwhile; the plan shows it as it is now.")
    layout = layout_for(depths, i)
    subtree = todos[i : plan_tree.subtree_end(depths, i)]
    now = plan_tree.outline_numbers(layout.depths)[layout.order.index(i)]
    arranged = [todos[j] for j in layout.order]
    _write(arranged, layout.depths)
    counted = _changed_keeping(todo.thread_id, arranged, [t.pk for t in subtree], reordered=True)
    if layout.order == list(range(len(todos))) and layout.depths == depths:
        return  # dropped where it already was: nothing for the history
    what = MOVE_WORDING[verb].format(name=_quoted(todos[i].text))
    _record(counted, todo.thread_id, Action.MOVED, f"{what}: {was} → {now}", **by)


def _changed_keeping(thread_id, todos: Sequence[_Held], ids, *, reordered: bool = False):
    """`changed` for a plan write that holds the whole plan, locked and in
    plan order as it leaves it (`todos`: each with .pk, .text, .done and
    .depth as written): that plan becomes the kept reading's once the write
    commits, at the count its own counting statement returned (docs/adr/0140).
    The hook is registered before the change is announced, so it runs before
    the change's live patches are rendered; a rolled-back write runs none."""
    written: list[tuple[int, ...]] = []
    numbers = plan_tree.outline_numbers(_depths(todos))
    steps = [PlanStep(t.pk, t.text, t.done, t.depth, number) for t, number in zip(todos, numbers)]

    def keep_the_plan() -> None:
        if written:
            plan_written(thread_id, written[0], steps)

    transaction.on_commit(keep_the_plan)
    counted = changed(thread_id, "plan", ids, reordered=reordered)
    if counted is not None:
        written.append(counted.counts)
    return counted


def _by(author: str, token_name: str, person) -> dict:
    return {"author": author, "token_name": token_name, "person": person}


@transaction.atomic
def todo_add(
    *,
    thread: Thread,
    text: str,
    parent: Todo | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> Todo:
    """Add a step at the end of the plan, or as the last sub-step of `parent`."""
    text = _clean_step_text(text)
    todos = _plan(thread.pk)
    depths = _depths(todos)
    parent_row = None if parent is None else _row_of(todos, parent)
    insert_at, depth = plan_tree.child_slot(depths, parent_row)
    if depth > plan_tree.MAX_DEPTH:
        raise InvalidInput(plan_tree.TOO_DEEP)
    todo = Todo(thread=thread, text=text)
    plan = todos[:insert_at] + [todo] + todos[insert_at:]
    _write(plan, depths[:insert_at] + [depth] + depths[insert_at:])
    counted = _changed_keeping(thread.pk, plan, [todo.pk])
    under = "" if parent_row is None else f" under {_quoted(todos[parent_row].text)}"
    _record(counted, thread.pk, Action.ADDED, f"Added {_quoted(text)}{under}", **_by(author, token_name, person))
    return todo


@transaction.atomic
def todos_add_outline(
    *,
    thread: Thread,
    steps: list[dict],
    parent_index: int | None = None,
    shown: Sequence[int] | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> list[Todo]:
    """Add an outline of steps ({text, depth}, depth relative to the outline's
    top level) at the end of the plan, or nested under the 1-based `parent_index`
    (of the plan as `shown`, the step ids in the order the caller was shown
    them: common.index_as_shown)."""
    if not steps:
        raise InvalidInput("Give at least one step.")
    cleaned = []
    previous_depth = -1
    for n, step in enumerate(steps, start=1):
        try:
            text = _clean_step_text(step.get("text"))
        except InvalidInput as exc:
            raise InvalidInput(f"Step {n}: {exc.message}") from None
        depth = step.get("depth", 0)
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise InvalidInput(f"Step {n}: depth must be a whole number of 0 or more.")
        if depth > previous_depth + 1:
            raise InvalidInput(
                f"Step {n}: depth {depth} skips a level; the first step has depth 0 and each step "
                "may be at most one level deeper than the step before it."
            )
        cleaned.append((text, depth))
        previous_depth = depth
    todos = _plan(thread.pk)
    depths = _depths(todos)
    parent = None if parent_index is None else plan_tree.one_based(depths, _as_shown(todos, parent_index, shown))
    insert_at, base = plan_tree.child_slot(depths, parent)
    plan_tree.check_outline([d for _, d in cleaned], base=base)
    created = [Todo(thread=thread, text=text) for text, _ in cleaned]
    plan = todos[:insert_at] + created + todos[insert_at:]
    _write(plan, depths[:insert_at] + [base + d for _, d in cleaned] + depths[insert_at:])
    counted = _changed_keeping(thread.pk, plan, [t.pk for t in created])
    names = [_quoted(text) for text, _ in cleaned]
    what = f"Added {names[0]}" if len(names) == 1 else f"Added {_steps(len(names))}: {_listed(names)}"
    under = "" if parent is None else f" under {_quoted(todos[parent].text)}"
    _record(counted, thread.pk, Action.ADDED, what + under, **_by(author, token_name, person))
    return created


def _current(todo: Todo) -> tuple[str, bool]:
    """The step's text and done mark as stored now, its row locked. Deleted
    in another tab (or by the agent) since it was loaded: a clear message
    rather than Django's "update_fields did not affect any rows"."""
    write_counts.lock_thread(todo.thread_id)
    row = Todo.objects.select_for_update().filter(pk=todo.pk).values_list("text", "done").first()
    if row is None:
        raise NotFound("That plan step no longer exists.")
    return row


@transaction.atomic
def todo_update_text(
    *, todo: Todo, text: str, was: str | None = None, author: str = Author.SYSTEM, token_name: str = "", person=None
) -> Todo:
    """`was`: the text the person's page showed (None: not known). When the
    step reads otherwise now, someone renamed it meanwhile and theirs stays
    (ChangedMeanwhile, docs/adr/0125), unless it already reads `text`."""
    text = _clean_step_text(text)
    current, _done = _current(todo)
    if was is not None and as_a_page_reads_it(was) != as_a_page_reads_it(current) and text != current:
        raise ChangedMeanwhile(
            f"Someone else changed this step meanwhile: it now reads {_quoted(current)}. Your text was not saved and is "
            "still in the form: Save again to replace theirs, or Cancel to keep it.",
            base={"was": current},
        )
    todo.text = text
    todo.save(update_fields=["text", "updated_at"])
    counted = changed(todo.thread_id, "plan", [todo.pk])
    if text != current:
        _record(
            counted,
            todo.thread_id,
            Action.RENAMED,
            f"Renamed {_quoted(current)} to {_quoted(text)}",
            **_by(author, token_name, person),
        )
    return todo


@transaction.atomic
def todo_set_done(*, todo: Todo, done: bool, author: str = Author.SYSTEM, token_name: str = "", person=None) -> Todo:
    text, was_done = _current(todo)
    todo.done = bool(done)
    todo.save(update_fields=["done", "updated_at"])
    counted = changed(todo.thread_id, "plan", [todo.pk])
    if todo.done != was_done:
        action, verb = (Action.TICKED, "Ticked") if todo.done else (Action.UNTICKED, "Unticked")
        _record(counted, todo.thread_id, action, f"{verb} {_quoted(text)}", **_by(author, token_name, person))
    return todo


@transaction.atomic
def todo_delete(*, todo: Todo, author: str = Author.SYSTEM, token_name: str = "", person=None) -> int:
    """Delete a step and its whole subtree; returns how many rows went."""
    todos = _plan(todo.thread_id)
    i = _row_of(todos, todo)
    depths = _depths(todos)
    end = plan_tree.subtree_end(depths, i)
    doomed = todos[i:end]
    Todo.objects.filter(pk__in=[t.pk for t in doomed]).delete()
    _write(todos[:i] + todos[end:], depths[:i] + depths[end:])
    counted = changed(todo.thread_id, "plan", [t.pk for t in doomed], reordered=True)
    summary = f"Removed {_quoted(doomed[0].text)}" + (f" and {_sub_steps(len(doomed) - 1)}" if len(doomed) > 1 else "")
    _record(counted, todo.thread_id, Action.REMOVED, summary, **_by(author, token_name, person))
    return len(doomed)


@transaction.atomic
def todo_indent(
    *, todo: Todo, shown_number: str | None = None, author: str = Author.SYSTEM, token_name: str = "", person=None
) -> None:
    """Make the step (with its subtree) the last sub-step of its previous
    sibling. `shown_number`: see `_rearrange`, as for outdent and move."""
    _rearrange(todo, plan_tree.indent, verb="indent", by=_by(author, token_name, person), shown_number=shown_number)


@transaction.atomic
def todo_outdent(
    *, todo: Todo, shown_number: str | None = None, author: str = Author.SYSTEM, token_name: str = "", person=None
) -> None:
    """Move the step (with its subtree) one level up, right after its parent's
    subtree; the steps that followed it stay under the old parent."""
    _rearrange(todo, plan_tree.outdent, verb="outdent", by=_by(author, token_name, person), shown_number=shown_number)


@transaction.atomic
def todo_move(
    *,
    todo: Todo,
    direction: str,
    shown_number: str | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> None:
    """Move one place up or down among its siblings, with its subtree."""
    if direction not in ("up", "down"):
        raise InvalidInput("Direction must be 'up' or 'down'.")
    _rearrange(
        todo,
        lambda depths, i: plan_tree.move_step(depths, i, direction),
        verb=direction,
        by=_by(author, token_name, person),
        shown_number=shown_number,
    )


@transaction.atomic
def todo_place(
    *,
    todo: Todo,
    before: Todo | None = None,
    shown_number: str | None = None,
    shown_before: str | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> None:
    """A drag in the tree: the step (with its subtree) goes just before
    `before` (None: the end of the plan), which must keep it at its level
    among its siblings; a drop anywhere else is refused, nothing moves.

    `shown_number` and `shown_before`: what the person's page showed, the
    step's outline number and the number of the step it was dropped before
    ("" when it was dropped at the end of its level). `before` names a row,
    not a place: on a page someone changed since, that row may now sit
    elsewhere (or the step itself), and the step would land where the person
    never dropped it. When either differs from the plan now, nothing moves
    (StepMoved, docs/adr/0125); None for both: placed as before."""
    todos = _plan(todo.thread_id)
    target = None if before is None else _row_of(todos, before)
    if shown_number is not None and shown_before is not None:
        _check_drop(todos, _row_of(todos, todo), target, shown_number, shown_before)
    _rearrange(
        todo,
        lambda depths, i: plan_tree.place_before(depths, i, target),
        todos,
        verb="place",
        by=_by(author, token_name, person),
    )


def _check_drop(todos: list[Todo], i: int, target: int | None, shown_number: str, shown_before: str) -> None:
    """The drop as the person's page showed it is the drop in the plan now:
    the step where it was, and the step it was dropped before where it was,
    or, dropped at the end of its level, `target` still right after that
    level (the numbers alone do not say that a level grew or shrank)."""
    depths = _depths(todos)
    numbers = plan_tree.outline_numbers(depths)
    name = _quoted(todos[i].text)
    if numbers[i] != shown_number:
        raise StepMoved(f"{name} was moved by someone else meanwhile; the plan shows it as it is now.")
    if shown_before:
        if target is None:
            raise InvalidInput("A step dropped at the end of the plan was dropped before no step; send no number for it.")
        if numbers[target] != shown_before:
            raise StepMoved(
                f"{_quoted(todos[target].text)} was moved by someone else meanwhile, so {name} was not moved; "
                "the plan shows them as they are now."
            )
        return
    parent = plan_tree.parent_of(depths, i)
    level_end = len(depths) if parent is None else plan_tree.subtree_end(depths, parent)
    if (len(depths) if target is None else target) != level_end:
        raise StepMoved(
            f"The steps at the level of {name} were changed by someone else meanwhile, so it was not moved to their end; "
            "the plan shows it as it is now."
        )


def drop_target_gone(todo: Todo) -> StepMoved:
    """What a drag is told when its page showed a step to drop `todo`
    before that has been removed since (docs/adr/0125)."""
    return StepMoved(
        f"The step {_quoted(todo.text)} was dropped before was removed by someone else meanwhile, so it was not moved; "
        "the plan shows it as it is now."
    )


def _unique(todos: list[_Held]) -> list[_Held]:
    seen, result = set(), []
    for todo in todos:
        if todo.pk not in seen:
            seen.add(todo.pk)
            result.append(todo)
    return result


def _as_shown(todos: list[_Held], index, shown: Sequence[int] | None):
    return index_as_shown([t.pk for t in todos], index, shown, row="Step", rows="the plan")


def _targets(todos: list[_Held], indices, shown: Sequence[int] | None) -> list[_Held]:
    depths = _depths(todos)
    targets = _unique([todos[plan_tree.one_based(depths, _as_shown(todos, index, shown))] for index in indices])
    if not targets:
        raise InvalidInput("Give at least one index.")
    return targets


@transaction.atomic
def todos_toggle_by_index(
    *,
    thread: Thread,
    indices: list[int],
    shown: Sequence[int] | None = None,
    steps_shown: Mapping[int, tuple[str, bool]] | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> BatchResult:
    """Flip the done mark of steps. `steps_shown`: each step's (text, mark)
    as the caller was shown it. A step whose mark someone changed since already has
    the mark the caller meant to give it: it is left as it is and reported,
    so the agent never unticks a step the person ticked (docs/adr/0115).
    The steps flipped are in the result's `updated`: each with the mark it
    holds now and the text as the caller was shown it. Only the mark is
    checked and written here, so the text now may be someone else's, which
    the caller's next edit of the step must still find changed."""
    todos = _plan_rows(thread.pk)
    targets = _targets(todos, indices, shown)
    numbers = dict(zip((t.pk for t in todos), plan_tree.outline_numbers(_depths(todos))))
    result = BatchResult()
    flipping = []
    for todo in targets:
        if steps_shown is not None and steps_shown.get(todo.pk, (todo.text, todo.done))[1] != todo.done:
            mark = "done" if todo.done else "not done"
            result.skipped.append(
                f"{numbers[todo.pk]} '{todo.text}' is already marked {mark}: it was marked so after you were shown the plan"
            )
        else:
            flipping.append(todo)
    if not flipping:
        return result
    targets = flipping
    # The rows were just read and locked in this transaction, so none can
    # have gone; one activity touch covers the batch.
    now = timezone.now()
    for todo in targets:
        todo.done = not todo.done
    # At most two plain UPDATEs (those now done, those now not done):
    # bulk_update's CASE per row cost three times as much to build, for the
    # one or two steps a tick usually is.
    for done in (True, False):
        ids = [todo.pk for todo in targets if todo.done is done]
        if ids:
            Todo.objects.filter(pk__in=ids).update(done=done, updated_at=now)
    for todo in targets:
        shown_text = steps_shown.get(todo.pk, (todo.text, todo.done))[0] if steps_shown is not None else todo.text
        result.updated[todo.pk] = (shown_text, todo.done)
        result.done.append(f"{numbers[todo.pk]} '{todo.text}' marked {'done' if todo.done else 'not done'}")
    # The plan as this write leaves it, the kept reading's once it commits,
    # so the change's live patches and the next prompt need not read it again.
    counted = _changed_keeping(thread.pk, todos, [t.pk for t in targets])
    ticked = [_quoted(t.text) for t in targets if t.done]
    unticked = [_quoted(t.text) for t in targets if not t.done]
    if ticked and unticked:
        action, summary = Action.TOGGLED, f"Ticked {_listed(ticked)}; unticked {_listed(unticked)}"
    elif ticked:
        action, summary = Action.TICKED, f"Ticked {_listed(ticked)}"
    else:
        action, summary = Action.UNTICKED, f"Unticked {_listed(unticked)}"
    _record(counted, thread.pk, action, summary, **_by(author, token_name, person))
    return result


@transaction.atomic
def todos_update_by_index(
    *,
    thread: Thread,
    updates: list[dict],
    shown: Sequence[int] | None = None,
    steps_shown: Mapping[int, tuple[str, bool]] | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> BatchResult:
    """Rewrite the text of steps. `steps_shown`: each step's (text, mark) as
    the caller was shown it; a step someone rewrote since keeps their text, and
    is reported (docs/adr/0115). The steps written are in the result's
    `updated`: each with the text it holds now and the mark as the caller
    was shown it (only the text is checked and written here, so the mark
    now may be the person's tick), as for `todos_toggle_by_index`."""
    todos = _plan(thread.pk)
    depths = _depths(todos)
    targets = [(todos[plan_tree.one_based(depths, _as_shown(todos, u.get("index"), shown))], u.get("text")) for u in updates]
    if not targets:
        raise InvalidInput("Give at least one update.")
    cleaned = []
    for n, (todo, text) in enumerate(targets, start=1):
        try:
            cleaned.append((todo, _clean_step_text(text)))
        except InvalidInput as exc:
            raise InvalidInput(f"Update {n}: {exc.message}") from None
    result = BatchResult()
    renames = []
    written = []
    # What the caller knows each step holds: what it was shown, then what
    # this batch wrote (two entries may rewrite one step).
    known = dict(steps_shown) if steps_shown is not None else {}
    for todo, text in cleaned:
        was = known.get(todo.pk, (todo.text, todo.done))[0]
        if was != todo.text and text != todo.text:
            result.skipped.append(
                f"step '{todo.text}' was rewritten after you were shown it (it read '{was}'), so your text was not written"
            )
            continue
        if text != todo.text:
            renames.append(f"{_quoted(todo.text)} to {_quoted(text)}")
        todo.text = text
        todo.save(update_fields=["text", "updated_at"])
        written.append(todo)
        result.updated[todo.pk] = known[todo.pk] = (todo.text, known.get(todo.pk, (todo.text, todo.done))[1])
        result.done.append(f"rewrote step to '{todo.text}'")
    if not written:
        return result
    counted = _changed_keeping(thread.pk, todos, [t.pk for t in written])
    if renames:
        listed = "; ".join(renames[:PLAN_SUMMARY_MAX_STEPS])
        more = len(renames) - PLAN_SUMMARY_MAX_STEPS
        summary = f"Renamed {listed}" if len(renames) == 1 else f"Renamed {_steps(len(renames))}: {listed}"
        _record(
            counted,
            thread.pk,
            Action.RENAMED,
            summary + (f" and {more} more" if more > 0 else ""),
            **_by(author, token_name, person),
        )
    return result


@transaction.atomic
def todos_remove_by_index(
    *,
    thread: Thread,
    indices: list[int],
    shown: Sequence[int] | None = None,
    steps_shown: Mapping[int, tuple[str, bool]] | None = None,
    author: str = Author.SYSTEM,
    token_name: str = "",
    person=None,
) -> BatchResult:
    """Remove steps with their sub-steps. `steps_shown`: each step's (text,
    mark) as the caller was shown it; a step someone rewrote, ticked or
    unticked since is kept and reported: the caller decided from what it
    said then (docs/adr/0115)."""
    todos = _plan(thread.pk)
    targets = _targets(todos, indices, shown)
    result = BatchResult()
    gone: set[int] = set()
    names = []
    for todo in targets:
        if todo.pk in gone:
            continue  # already removed with an ancestor
        if steps_shown is not None and steps_shown.get(todo.pk, (todo.text, todo.done)) != (todo.text, todo.done):
            was, was_done = steps_shown[todo.pk]
            mark = "done" if todo.done else "not done"
            result.skipped.append(
                f"step '{todo.text}' ({mark}) was changed after you were shown it (it read '{was}', "
                f"{'done' if was_done else 'not done'}), so it was not removed"
            )
            continue
        depths = _depths(todos)
        i = _row_of(todos, todo)
        end = plan_tree.subtree_end(depths, i)
        gone.update(t.pk for t in todos[i:end])
        removed = end - i
        del todos[i:end]
        result.done.append(f"removed '{todo.text}'" + (f" and {removed - 1} sub-steps" if removed > 1 else ""))
        names.append(_quoted(todo.text) + (f" and {_sub_steps(removed - 1)}" if removed > 1 else ""))
    if not gone:
        return result
    Todo.objects.filter(pk__in=gone).delete()
    _write(todos, _depths(todos))
    counted = _changed_keeping(thread.pk, todos, gone, reordered=True)
    summary = f"Removed {names[0]}" if len(names) == 1 else f"Removed {_steps(len(names))}: {_listed(names)}"
    _record(counted, thread.pk, Action.REMOVED, summary, **_by(author, token_name, person))
    return result
