"""All writes to the workspace. Views, agent tools and admin actions call these.

Every function is keyword-only and atomic, validates its input and raises a
`WorkspaceError` subclass (nothing changed) with a message fit for a person or
the model. Preference writes take `respect_lock`: the agent path passes True
(locked items are skipped and reported), the person's path passes False.
"""

import json
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from conversations.models import Thread

from . import selectors
from .errors import DocumentConflict, InvalidInput, NotFound, PreferenceLocked
from .models import (
    ARTIFACT_TITLE_MAX_CHARS,
    DOCUMENT_TITLE_MAX_CHARS,
    OBJECTIVE_MAX_CHARS,
    PREFERENCE_SUBTITLE_MAX_CHARS,
    PREFERENCE_TITLE_MAX_CHARS,
    TODO_MAX_DEPTH,
    TODO_TEXT_MAX_CHARS,
    Artifact,
    Document,
    Objective,
    Preference,
    Todo,
    WorkspaceSnapshot,
)

ARTIFACT_PAYLOAD_MAX_BYTES = 1_000_000
ARTIFACT_TYPE_MAX_CHARS = 50


@dataclass
class BatchResult:
    """Outcome of an index-addressed batch write (the agent's tools)."""

    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = []
        if self.done:
            parts.append("; ".join(self.done))
        if self.skipped:
            parts.append("skipped: " + "; ".join(self.skipped))
        return ". ".join(parts) if parts else "nothing changed"


# --- validation helpers -------------------------------------------------------


def _clean_text(value, *, label: str, max_chars: int, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{label} must be text.")
    value = value.strip()
    if not value and not allow_empty:
        raise InvalidInput(f"{label} cannot be empty.")
    if "\x00" in value:
        # PostgreSQL text columns refuse NUL; say so instead of failing on save.
        raise InvalidInput(f"{label} cannot contain NUL characters.")
    if len(value) > max_chars:
        raise InvalidInput(f"{label} is too long ({len(value)} characters; the limit is {max_chars}).")
    return value


def _clean_kind(kind) -> str:
    if kind not in Preference.Kind.values:
        raise InvalidInput(f"Kind must be 'hard' or 'soft', not {kind!r}.")
    return kind


def _touch(thread: Thread) -> None:
    _touch_id(thread.pk)


def _touch_id(thread_id) -> None:
    # By id, so a row's `thread_id` will do: `row.thread` would load the
    # whole thread (a query) only to read its pk.
    Thread.objects.filter(pk=thread_id).update(last_activity_at=timezone.now())


# --- objective ----------------------------------------------------------------


@transaction.atomic
def objective_set(*, thread: Thread, text: str) -> Objective:
    text = _clean_text(text, label="Objective", max_chars=OBJECTIVE_MAX_CHARS)
    objective, _ = Objective.objects.update_or_create(thread=thread, defaults={"text": text})
    _touch(thread)
    return objective


# --- preferences --------------------------------------------------------------


def _next_preference_position(thread: Thread) -> int:
    last = Preference.objects.filter(thread=thread).order_by("-position").values_list("position", flat=True).first()
    return 0 if last is None else last + 1


@transaction.atomic
def preference_add(*, thread: Thread, title: str, subtitle: str = "", kind: str = "soft", respect_lock: bool) -> Preference:
    """Add one preference (locks do not apply to adding; the flag keeps every
    preference write explicit about which path it is on)."""
    preference = Preference(
        thread=thread,
        title=_clean_text(title, label="Title", max_chars=PREFERENCE_TITLE_MAX_CHARS),
        subtitle=_clean_text(subtitle or "", label="Subtitle", max_chars=PREFERENCE_SUBTITLE_MAX_CHARS, allow_empty=True),
        kind=_clean_kind(kind),
        position=_next_preference_position(thread),
    )
    preference.save()
    _touch(thread)
    return preference


@transaction.atomic
def preferences_add(*, thread: Thread, items: list[dict], respect_lock: bool) -> BatchResult:
    """Add several preferences; one whose title (case-insensitive) already
    exists is reused instead of duplicated. All items are validated first."""
    cleaned = []
    for n, item in enumerate(items, start=1):
        try:
            cleaned.append(
                (
                    _clean_text(item.get("title"), label="Title", max_chars=PREFERENCE_TITLE_MAX_CHARS),
                    _clean_text(item.get("subtitle") or "", label="Subtitle", max_chars=PREFERENCE_SUBTITLE_MAX_CHARS, allow_empty=True),
                    _clean_kind(item.get("kind", "soft")),
                )
            )
        except InvalidInput as exc:
            raise InvalidInput(f"Item {n}: {exc.message}") from None
    if not cleaned:
        raise InvalidInput("Give at least one preference.")
    existing = {p.title.casefold(): p for p in Preference.objects.filter(thread=thread)}
    result = BatchResult()
    for title, subtitle, kind in cleaned:
        if title.casefold() in existing:
            result.skipped.append(f"'{title}' already recorded (reused the existing preference)")
            continue
        preference = preference_add(thread=thread, title=title, subtitle=subtitle, kind=kind, respect_lock=respect_lock)
        existing[title.casefold()] = preference
        result.done.append(f"recorded '{title}' ({kind})")
    return result


def _refresh_lock(preference: Preference) -> None:
    """Re-read the row's lock inside the transaction: the object may have been
    loaded before the person locked (or deleted) it in another tab."""
    locked = Preference.objects.select_for_update().filter(pk=preference.pk).values_list("locked", flat=True).first()
    if locked is None:
        raise NotFound("That preference no longer exists.")
    preference.locked = locked


def _check_lock(preference: Preference, *, respect_lock: bool, verb: str) -> None:
    _refresh_lock(preference)
    if respect_lock and preference.locked:
        raise PreferenceLocked(
            f"Preference '{preference.title}' is locked and cannot be {verb}; ask the user to unlock it first."
        )


@transaction.atomic
def preference_update(
    *,
    preference: Preference,
    title: str | None = None,
    subtitle: str | None = None,
    kind: str | None = None,
    respect_lock: bool,
) -> Preference:
    _check_lock(preference, respect_lock=respect_lock, verb="modified")
    if title is not None:
        preference.title = _clean_text(title, label="Title", max_chars=PREFERENCE_TITLE_MAX_CHARS)
    if subtitle is not None:
        preference.subtitle = _clean_text(subtitle, label="Subtitle", max_chars=PREFERENCE_SUBTITLE_MAX_CHARS, allow_empty=True)
    if kind is not None:
        preference.kind = _clean_kind(kind)
    # Named fields only, so a stale object never writes back an old lock.
    preference.save(update_fields=["title", "subtitle", "kind", "updated_at"])
    _touch_id(preference.thread_id)
    return preference


@transaction.atomic
def preference_delete(*, preference: Preference, respect_lock: bool) -> None:
    _check_lock(preference, respect_lock=respect_lock, verb="removed")
    thread = preference.thread
    preference.delete()
    _touch(thread)


@transaction.atomic
def preference_set_locked(*, preference: Preference, locked: bool, respect_lock: bool) -> Preference:
    """Lock or unlock. Only the person (or staff) may: the agent path is refused."""
    if respect_lock:
        raise PreferenceLocked("Only the user can lock or unlock a preference.")
    _refresh_lock(preference)
    preference.locked = bool(locked)
    preference.save(update_fields=["locked", "updated_at"])
    _touch_id(preference.thread_id)
    return preference


def _preference_at(preferences: list[Preference], index) -> Preference:
    if not isinstance(index, int) or isinstance(index, bool):
        raise InvalidInput(f"Index {index!r} is not a number.")
    if not 1 <= index <= len(preferences):
        raise InvalidInput(
            f"Preference index {index} is out of range; there are {len(preferences)} preferences (1-based)."
            if preferences
            else f"Preference index {index} is out of range; there are no preferences yet."
        )
    return preferences[index - 1]


@transaction.atomic
def preferences_update_by_index(*, thread: Thread, updates: list[dict], respect_lock: bool) -> BatchResult:
    """Edit preferences by their 1-based index (hard before soft). Locked ones
    are skipped and reported when `respect_lock`; an invalid item fails the batch."""
    preferences = selectors.preferences_for(thread=thread)
    targets = [(_preference_at(preferences, u.get("index")), u) for u in updates]
    if not targets:
        raise InvalidInput("Give at least one update.")
    result = BatchResult()
    for preference, update in targets:
        fields = {k: update.get(k) for k in ("title", "subtitle", "kind") if update.get(k) is not None}
        if not fields:
            raise InvalidInput(f"Update for index {update.get('index')} changes nothing; give title, subtitle or kind.")
        try:
            preference_update(preference=preference, respect_lock=respect_lock, **fields)
        except PreferenceLocked as exc:
            result.skipped.append(exc.message)
            continue
        result.done.append(f"updated '{preference.title}'")
    return result


@transaction.atomic
def preferences_remove_by_index(*, thread: Thread, indices: list[int], respect_lock: bool) -> BatchResult:
    preferences = selectors.preferences_for(thread=thread)
    targets = []
    for index in indices:
        preference = _preference_at(preferences, index)
        if preference not in targets:
            targets.append(preference)
    if not targets:
        raise InvalidInput("Give at least one index.")
    result = BatchResult()
    for preference in targets:
        try:
            preference_delete(preference=preference, respect_lock=respect_lock)
        except PreferenceLocked as exc:
            result.skipped.append(exc.message)
            continue
        result.done.append(f"removed '{preference.title}'")
    return result


# --- plan (todo tree) -----------------------------------------------------------
#
# The plan is stored as a pre-order list: dense positions 0..n-1 and a depth per
# row, valid when the first row has depth 0 and every row's depth is at most
# one more than the previous row's. Every operation below computes the new
# order in memory and writes it back with `_write_plan`, so the stored tree is
# valid after each call.


def _plan(thread: Thread) -> list[Todo]:
    return list(Todo.objects.select_for_update().filter(thread=thread).order_by("position", "id"))


def _subtree_end(todos: list[Todo], i: int) -> int:
    """Index one past the last descendant of todos[i]."""
    j = i + 1
    while j < len(todos) and todos[j].depth > todos[i].depth:
        j += 1
    return j


def _write_plan(thread: Thread, todos: list[Todo]) -> None:
    changed = []
    for position, todo in enumerate(todos):
        if todo.position != position or todo.pk is None or getattr(todo, "_depth_changed", False):
            todo.position = position
            changed.append(todo)
    if not is_valid_plan([t.depth for t in todos]):
        # Guard against a bug in an operation above; the transaction rolls back.
        raise InvalidInput("That change would break the plan's structure, so nothing was changed.")
    new = [t for t in changed if t.pk is None]
    old = [t for t in changed if t.pk is not None]
    if old:
        Todo.objects.bulk_update(old, ["position", "depth"])
    for todo in new:
        todo.save()
    _touch(thread)


def is_valid_plan(depths: list[int]) -> bool:
    previous = -1
    for depth in depths:
        if depth < 0 or depth > previous + 1 or depth > TODO_MAX_DEPTH:
            return False
        previous = depth
    return True


def _set_depth(todo: Todo, depth: int) -> None:
    todo.depth = depth
    todo._depth_changed = True


def _todo_in_plan(todos: list[Todo], todo: Todo) -> int:
    for i, candidate in enumerate(todos):
        if candidate.pk == todo.pk:
            return i
    raise NotFound("That plan step no longer exists.")


@transaction.atomic
def todo_add(*, thread: Thread, text: str, parent: Todo | None = None) -> Todo:
    """Add a step at the end of the plan, or as the last sub-step of `parent`."""
    text = _clean_text(text, label="Step text", max_chars=TODO_TEXT_MAX_CHARS)
    todos = _plan(thread)
    if parent is None:
        insert_at, depth = len(todos), 0
    else:
        i = _todo_in_plan(todos, parent)
        insert_at, depth = _subtree_end(todos, i), todos[i].depth + 1
        if depth > TODO_MAX_DEPTH:
            raise InvalidInput(f"The plan can nest at most {TODO_MAX_DEPTH + 1} levels deep.")
    todo = Todo(thread=thread, text=text, depth=depth, position=insert_at)
    todos.insert(insert_at, todo)
    _write_plan(thread, todos)
    return todo


@transaction.atomic
def todos_add_outline(*, thread: Thread, steps: list[dict], parent_index: int | None = None) -> list[Todo]:
    """Add an outline of steps ({text, depth}, depth relative to the outline's
    top level) at the end of the plan, or nested under the 1-based `parent_index`."""
    if not steps:
        raise InvalidInput("Give at least one step.")
    cleaned = []
    previous_depth = -1
    for n, step in enumerate(steps, start=1):
        try:
            text = _clean_text(step.get("text"), label="Step text", max_chars=TODO_TEXT_MAX_CHARS)
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
    todos = _plan(thread)
    if parent_index is None:
        insert_at, base = len(todos), 0
    else:
        i = _todo_index(todos, parent_index)
        insert_at, base = _subtree_end(todos, i), todos[i].depth + 1
    if base + max(d for _, d in cleaned) > TODO_MAX_DEPTH:
        raise InvalidInput(f"The plan can nest at most {TODO_MAX_DEPTH + 1} levels deep.")
    created = [Todo(thread=thread, text=text, depth=base + depth, position=0) for text, depth in cleaned]
    todos[insert_at:insert_at] = created
    _write_plan(thread, todos)
    return created


def _todo_index(todos: list[Todo], index) -> int:
    """0-based list index for a 1-based plan index, with a message the model can act on."""
    if not isinstance(index, int) or isinstance(index, bool):
        raise InvalidInput(f"Index {index!r} is not a number.")
    if not 1 <= index <= len(todos):
        raise InvalidInput(
            f"Plan index {index} is out of range; the plan has {len(todos)} steps (1-based, in outline order)."
            if todos
            else f"Plan index {index} is out of range; the plan is empty."
        )
    return index - 1


def _require_todo(todo: Todo) -> None:
    # Deleted in another tab (or by the agent) since it was loaded: a clear
    # message rather than Django's "update_fields did not affect any rows".
    if not Todo.objects.select_for_update().filter(pk=todo.pk).exists():
        raise NotFound("That plan step no longer exists.")


@transaction.atomic
def todo_update_text(*, todo: Todo, text: str) -> Todo:
    text = _clean_text(text, label="Step text", max_chars=TODO_TEXT_MAX_CHARS)
    _require_todo(todo)
    todo.text = text
    todo.save(update_fields=["text", "updated_at"])
    _touch_id(todo.thread_id)
    return todo


@transaction.atomic
def todo_set_done(*, todo: Todo, done: bool) -> Todo:
    _require_todo(todo)
    _save_done(todo, done)
    _touch_id(todo.thread_id)
    return todo


def _save_done(todo: Todo, done: bool) -> None:
    todo.done = bool(done)
    todo.save(update_fields=["done", "updated_at"])


@transaction.atomic
def todo_delete(*, todo: Todo) -> int:
    """Delete a step and its whole subtree; returns how many rows went."""
    todos = _plan(todo.thread)
    i = _todo_in_plan(todos, todo)
    end = _subtree_end(todos, i)
    doomed = todos[i:end]
    Todo.objects.filter(pk__in=[t.pk for t in doomed]).delete()
    del todos[i:end]
    _write_plan(todo.thread, todos)
    return len(doomed)


@transaction.atomic
def todo_indent(*, todo: Todo) -> None:
    """Make the step (with its subtree) the last sub-step of its previous sibling."""
    todos = _plan(todo.thread)
    i = _todo_in_plan(todos, todo)
    if i == 0 or todos[i - 1].depth < todos[i].depth:
        raise InvalidInput("This step has no step above it at the same level, so it cannot be indented.")
    end = _subtree_end(todos, i)
    if max(t.depth for t in todos[i:end]) + 1 > TODO_MAX_DEPTH:
        raise InvalidInput(f"The plan can nest at most {TODO_MAX_DEPTH + 1} levels deep.")
    for t in todos[i:end]:
        _set_depth(t, t.depth + 1)
    _write_plan(todo.thread, todos)


@transaction.atomic
def todo_outdent(*, todo: Todo) -> None:
    """Move the step (with its subtree) one level up, right after its parent's
    subtree; the steps that followed it stay under the old parent."""
    todos = _plan(todo.thread)
    i = _todo_in_plan(todos, todo)
    if todos[i].depth == 0:
        raise InvalidInput("This step is already at the top level, so it cannot be outdented.")
    parent = i - 1
    while todos[parent].depth >= todos[i].depth:
        parent -= 1
    end = _subtree_end(todos, i)
    moving = todos[i:end]
    del todos[i:end]
    insert_at = _subtree_end(todos, parent)
    for t in moving:
        _set_depth(t, t.depth - 1)
    todos[insert_at:insert_at] = moving
    _write_plan(todo.thread, todos)


def _siblings(todos: list[Todo], i: int) -> list[int]:
    """List indices of todos[i] and its siblings, in order."""
    depth = todos[i].depth
    start = i
    while start > 0 and todos[start - 1].depth >= depth:
        start -= 1
    result = []
    j = start
    while j < len(todos) and todos[j].depth >= depth:
        if todos[j].depth == depth:
            result.append(j)
        j += 1
    return result


@transaction.atomic
def todo_move_to(*, todo: Todo, sibling_index: int) -> None:
    """Reorder a step (with its subtree) among its siblings only: `sibling_index`
    is its new 0-based place among them."""
    todos = _plan(todo.thread)
    i = _todo_in_plan(todos, todo)
    siblings = _siblings(todos, i)
    if not isinstance(sibling_index, int) or isinstance(sibling_index, bool) or not 0 <= sibling_index < len(siblings):
        raise InvalidInput(f"Position {sibling_index!r} is out of range; this level has {len(siblings)} steps.")
    blocks = [todos[s:_subtree_end(todos, s)] for s in siblings]
    current = siblings.index(i)
    block = blocks.pop(current)
    blocks.insert(sibling_index, block)
    start, stop = siblings[0], _subtree_end(todos, siblings[-1])
    todos[start:stop] = [t for b in blocks for t in b]
    _write_plan(todo.thread, todos)


def todo_move(*, todo: Todo, direction: str) -> None:
    """Move one place up or down among its siblings."""
    if direction not in ("up", "down"):
        raise InvalidInput("Direction must be 'up' or 'down'.")
    with transaction.atomic():
        todos = _plan(todo.thread)
        i = _todo_in_plan(todos, todo)
        siblings = _siblings(todos, i)
        current = siblings.index(i)
        target = current - 1 if direction == "up" else current + 1
        if not 0 <= target < len(siblings):
            raise InvalidInput(f"This step is already the {'first' if direction == 'up' else 'last'} at its level.")
        todo_move_to(todo=todo, sibling_index=target)


@transaction.atomic
def todos_toggle_by_index(*, thread: Thread, indices: list[int]) -> BatchResult:
    todos = _plan(thread)
    targets = _unique([todos[_todo_index(todos, index)] for index in indices])
    if not targets:
        raise InvalidInput("Give at least one index.")
    result = BatchResult()
    numbers = dict(zip((t.pk for t in todos), selectors.outline_numbers(todos)))
    # The rows were just read and locked by _plan() in this transaction, so
    # none can have gone; one activity touch covers the batch.
    for todo in targets:
        _save_done(todo, not todo.done)
        result.done.append(f"{numbers[todo.pk]} '{todo.text}' marked {'done' if todo.done else 'not done'}")
    _touch(thread)
    return result


@transaction.atomic
def todos_update_by_index(*, thread: Thread, updates: list[dict]) -> BatchResult:
    todos = _plan(thread)
    targets = [(todos[_todo_index(todos, u.get("index"))], u.get("text")) for u in updates]
    if not targets:
        raise InvalidInput("Give at least one update.")
    for n, (_, text) in enumerate(targets, start=1):
        try:
            _clean_text(text, label="Step text", max_chars=TODO_TEXT_MAX_CHARS)
        except InvalidInput as exc:
            raise InvalidInput(f"Update {n}: {exc.message}") from None
    result = BatchResult()
    for todo, text in targets:
        todo_update_text(todo=todo, text=text)
        result.done.append(f"rewrote step to '{todo.text}'")
    return result


@transaction.atomic
def todos_remove_by_index(*, thread: Thread, indices: list[int]) -> BatchResult:
    todos = _plan(thread)
    targets = _unique([todos[_todo_index(todos, index)] for index in indices])
    if not targets:
        raise InvalidInput("Give at least one index.")
    result = BatchResult()
    gone: set[int] = set()
    for todo in targets:
        if todo.pk in gone:
            continue  # already removed with an ancestor
        i = _todo_in_plan(todos, todo)
        end = _subtree_end(todos, i)
        gone.update(t.pk for t in todos[i:end])
        removed = end - i
        del todos[i:end]
        result.done.append(f"removed '{todo.text}'" + (f" and {removed - 1} sub-steps" if removed > 1 else ""))
    Todo.objects.filter(pk__in=gone).delete()
    _write_plan(thread, todos)
    return result


def _unique(todos: list[Todo]) -> list[Todo]:
    seen, result = set(), []
    for todo in todos:
        if todo.pk not in seen:
            seen.add(todo.pk)
            result.append(todo)
    return result


# --- document ----------------------------------------------------------------


def _document_for_update(thread: Thread) -> Document:
    document, _ = Document.objects.select_for_update().get_or_create(
        thread=thread, defaults={"title": "Untitled", "content": "", "version": 0}
    )
    return document


def _clean_document_content(content) -> str:
    if not isinstance(content, str):
        raise InvalidInput("Document content must be text.")
    if "\x00" in content:
        raise InvalidInput("Document content cannot contain NUL characters.")
    limit = settings.HAICO_DOCUMENT_MAX_CHARS
    if len(content) > limit:
        raise InvalidInput(f"The document is too long ({len(content):,} characters; the limit is {limit:,}).")
    return content


@transaction.atomic
def document_save(
    *, thread: Thread, title: str | None = None, content: str | None = None, base_version: int | None = None
) -> Document:
    """Write the title and/or content. With `base_version` (the person's path),
    a save based on a version that is no longer current is refused."""
    document = _document_for_update(thread)
    if base_version is not None and base_version != document.version:
        raise DocumentConflict(
            "The document changed since you loaded it (someone or the agent edited it). "
            "Your text is kept here; copy what you need, then reload to see the latest version.",
            current_version=document.version,
        )
    if title is not None:
        document.title = _clean_text(title, label="Document title", max_chars=DOCUMENT_TITLE_MAX_CHARS)
    if content is not None:
        document.content = _clean_document_content(content)
    document.version += 1
    document.save()
    _touch(thread)
    return document


@transaction.atomic
def document_append(*, thread: Thread, text: str) -> Document:
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("Text to append cannot be empty.")
    document = _document_for_update(thread)
    separator = "" if not document.content or document.content.endswith("\n") else "\n"
    document.content = _clean_document_content(document.content + separator + text)
    document.version += 1
    document.save()
    _touch(thread)
    return document


# --- artifacts ---------------------------------------------------------------


@transaction.atomic
def artifact_create(*, thread: Thread, artifact_type: str, title: str, payload: dict, turn_index: int) -> Artifact:
    artifact_type = _clean_text(artifact_type, label="Artifact type", max_chars=ARTIFACT_TYPE_MAX_CHARS)
    title = _clean_text(title or "", label="Artifact title", max_chars=ARTIFACT_TITLE_MAX_CHARS, allow_empty=True)
    if not isinstance(payload, dict):
        raise InvalidInput("Artifact payload must be a JSON object.")
    try:
        # NaN / Infinity are not JSON: the database's JSON check would reject
        # them on insert (an IntegrityError, i.e. a 500) instead of a clear message.
        encoded = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidInput("Artifact payload must be plain JSON (objects, lists, text, numbers).") from None
    if "\\u0000" in encoded:
        # PostgreSQL's jsonb cannot store the NUL escape.
        raise InvalidInput("Artifact payload cannot contain NUL characters.")
    size = len(encoded)
    if size > ARTIFACT_PAYLOAD_MAX_BYTES:
        raise InvalidInput(f"Artifact payload is too large ({size:,} bytes; the limit is {ARTIFACT_PAYLOAD_MAX_BYTES:,}).")
    artifact = Artifact.objects.create(
        thread=thread, artifact_type=artifact_type, title=title, payload=payload, turn_index=turn_index
    )
    _touch(thread)
    return artifact


# --- snapshots -----------------------------------------------------------------


@transaction.atomic
def snapshot_capture(*, thread: Thread, turn_index: int, user_message: str) -> WorkspaceSnapshot:
    """Record the workspace as the agent will see it at the start of this turn."""
    document = selectors.document_for(thread=thread)
    return WorkspaceSnapshot.objects.create(
        thread=thread,
        turn_index=turn_index,
        user_message=user_message,
        document_title=document.title,
        document_content=document.content,
        objective_text=selectors.objective_text_for(thread=thread),
        preferences_json=[
            {"title": p.title, "subtitle": p.subtitle, "kind": p.kind, "locked": p.locked}
            for p in selectors.preferences_for(thread=thread)
        ],
        todos_json=[
            {"text": t.text, "done": t.done, "position": t.position, "depth": t.depth}
            for t in selectors.todos_for(thread=thread)
        ],
    )
