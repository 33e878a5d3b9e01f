"""Preferences: the person's constraints, hard before soft. Locks bind only
the agent: its path passes `respect_lock=True`, the person's `False`."""

from collections.abc import Mapping, Sequence

from django.db import connection, transaction

from .. import selectors
from ..errors import ChangedMeanwhile, InvalidInput, NotFound, PreferenceLocked
from ..indices import index_as_shown
from ..models import PREFERENCE_SUBTITLE_MAX_CHARS, PREFERENCE_TITLE_MAX_CHARS, Preference, Thread
from ..text import as_a_page_reads_it, clean_text
from .common import BatchResult, changed


def _clean_title(title) -> str:
    return clean_text(title, label="Title", max_chars=PREFERENCE_TITLE_MAX_CHARS)


def _clean_subtitle(subtitle) -> str:
    return clean_text(subtitle or "", label="Subtitle", max_chars=PREFERENCE_SUBTITLE_MAX_CHARS, allow_empty=True)


def _clean_kind(kind) -> str:
    if kind not in Preference.Kind.values:
        raise InvalidInput(f"Kind must be 'hard' or 'soft', not {kind!r}.")
    return kind


def _next_position(thread: Thread) -> int:
    last = Preference.objects.filter(thread=thread).order_by("-position").values_list("position", flat=True).first()
    return 0 if last is None else last + 1


@transaction.atomic
def preference_add(*, thread: Thread, title: str, subtitle: str = "", kind: str = "soft", respect_lock: bool) -> Preference:
    """Add one preference (locks do not apply to adding; the flag keeps every
    preference write explicit about which path it is on)."""
    preference = Preference.objects.create(
        thread=thread,
        title=_clean_title(title),
        subtitle=_clean_subtitle(subtitle),
        kind=_clean_kind(kind),
        position=_next_position(thread),
    )
    changed(thread.pk, "preferences", [preference.pk])
    return preference


@transaction.atomic
def preferences_add(*, thread: Thread, items: list[dict], respect_lock: bool) -> BatchResult:
    """Add several preferences; one whose title (case-insensitive) already
    exists is reused instead of duplicated. All items are validated first.
    The new rows go in with one INSERT and one count of the write, announced
    as one change: one statement each, not one of each per item."""
    cleaned = []
    for n, item in enumerate(items, start=1):
        try:
            cleaned.append(
                (_clean_title(item.get("title")), _clean_subtitle(item.get("subtitle")), _clean_kind(item.get("kind", "soft")))
            )
        except InvalidInput as exc:
            raise InvalidInput(f"Item {n}: {exc.message}") from None
    if not cleaned:
        raise InvalidInput("Give at least one preference.")
    existing = {title.casefold() for title in Preference.objects.filter(thread=thread).values_list("title", flat=True)}
    result = BatchResult()
    new = []
    for title, subtitle, kind in cleaned:
        if title.casefold() in existing:
            result.skipped.append(f"'{title}' already recorded (reused the existing preference)")
            continue
        new.append(Preference(thread=thread, title=title, subtitle=subtitle, kind=kind))
        existing.add(title.casefold())
        result.done.append(f"recorded '{title}' ({kind})")
    if not new:
        return result
    position = _next_position(thread)
    for offset, preference in enumerate(new):
        preference.position = position + offset
    if connection.features.can_return_rows_from_bulk_insert:
        Preference.objects.bulk_create(new)
    else:  # the ids are needed: the caller's `added`, the change's ids
        for preference in new:
            preference.save()
    changed(thread.pk, "preferences", [preference.pk for preference in new])
    for preference in new:
        result.added[preference.pk] = (preference.title, preference.subtitle, preference.kind)
    return result


def _refresh_lock(preference: Preference) -> None:
    """Re-read the row inside the transaction, locked: the object may have
    been loaded before someone changed, locked (or deleted) it in another tab."""
    row = (
        Preference.objects.select_for_update().filter(pk=preference.pk).values_list("locked", "title", "subtitle", "kind").first()
    )
    if row is None:
        raise NotFound("That preference no longer exists.")
    preference.locked, preference.title, preference.subtitle, preference.kind = row


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
    shown: tuple[str, str, str] | None = None,
) -> Preference:
    """`shown`: the (title, subtitle, kind) the person's page showed (None:
    not known). When the preference holds others now, someone edited it
    meanwhile and their edit stays (ChangedMeanwhile, docs/adr/0125), unless
    it already holds what this edit would make of it."""
    _check_lock(preference, respect_lock=respect_lock, verb="modified")
    before = (preference.title, preference.subtitle, preference.kind)
    if title is not None:
        preference.title = _clean_title(title)
    if subtitle is not None:
        preference.subtitle = _clean_subtitle(subtitle)
    if kind is not None:
        preference.kind = _clean_kind(kind)
    if (preference.title, preference.subtitle, preference.kind) == before:
        return preference  # nothing to write, nothing to announce
    if shown is not None and tuple(map(as_a_page_reads_it, shown)) != tuple(map(as_a_page_reads_it, before)):
        raise ChangedMeanwhile(_edited_meanwhile(*before), base=dict(zip(("was_title", "was_subtitle", "was_kind"), before)))
    # Named fields only, so a stale object never writes back an old lock.
    preference.save(update_fields=["title", "subtitle", "kind", "updated_at"])
    changed(preference.thread_id, "preferences", [preference.pk])
    return preference


def _edited_meanwhile(title: str, subtitle: str, kind: str) -> str:
    detail = f" with the detail “{subtitle}”" if subtitle else " with no detail"
    return (
        f"Someone else changed this preference meanwhile: it now reads “{title}”{detail} ({kind}). Your changes were "
        "not saved and are still in the form: Save again to replace theirs, or Cancel to keep it."
    )


@transaction.atomic
def preference_delete(*, preference: Preference, respect_lock: bool) -> None:
    _check_lock(preference, respect_lock=respect_lock, verb="removed")
    pk, thread_id = preference.pk, preference.thread_id
    preference.delete()
    changed(thread_id, "preferences", [pk])


@transaction.atomic
def preference_set_locked(*, preference: Preference, locked: bool, respect_lock: bool) -> Preference:
    """Lock or unlock. Only the person (or staff) may: the agent path is refused."""
    if respect_lock:
        raise PreferenceLocked("Only the user can lock or unlock a preference.")
    _refresh_lock(preference)
    preference.locked = bool(locked)
    preference.save(update_fields=["locked", "updated_at"])
    changed(preference.thread_id, "preferences", [preference.pk])
    return preference


def _preference_at(preferences: list[Preference], index, shown: Sequence[int] | None) -> Preference:
    index = index_as_shown([p.pk for p in preferences], index, shown, row="Preference", rows="the preferences")
    if not isinstance(index, int) or isinstance(index, bool):
        raise InvalidInput(f"Index {index!r} is not a number.")
    if not 1 <= index <= len(preferences):
        raise InvalidInput(
            f"Preference index {index} is out of range; there are {len(preferences)} preferences (1-based)."
            if preferences
            else f"Preference index {index} is out of range; there are no preferences yet."
        )
    return preferences[index - 1]


def _locked_rows(preferences: Sequence[Preference]) -> dict[int, tuple[bool, str, str, str]]:
    """The batch's rows as stored now, locked, in one statement (in id
    order, so two batches over the same rows wait on each other in the same
    order): what `_refresh_lock` reads of one row, for each."""
    rows = (
        Preference.objects.select_for_update()
        .filter(pk__in={preference.pk for preference in preferences})
        .order_by("pk")
        .values_list("pk", "locked", "title", "subtitle", "kind")
    )
    return {pk: (locked, title, subtitle, kind) for pk, locked, title, subtitle, kind in rows}


def _as_locked(preference: Preference, rows: Mapping[int, tuple[bool, str, str, str]]) -> None:
    """`_refresh_lock` from the batch's locked read."""
    row = rows.get(preference.pk)
    if row is None:
        raise NotFound("That preference no longer exists.")
    preference.locked, preference.title, preference.subtitle, preference.kind = row


@transaction.atomic
def preferences_update_by_index(
    *,
    thread: Thread,
    updates: list[dict],
    respect_lock: bool,
    shown: Sequence[int] | None = None,
    values_shown: Mapping[int, tuple[str, str, str]] | None = None,
) -> BatchResult:
    """Edit preferences by their 1-based index (hard before soft; of the
    preferences as `shown`, their ids in the order the caller was shown them:
    workspace.indices). Locked ones are skipped and reported when
    `respect_lock`; an invalid item fails the batch. `values_shown`: each
    preference's (title, subtitle, kind) as the caller was shown it; one
    someone edited since keeps their edit, and is reported (docs/adr/0115).
    What the batch changed is in the result's `updated`.

    Each item is `preference_update`'s check and write, against the rows as
    one locked read found them (the batch's own writes included), and the
    batch is counted and announced once: one statement each for the whole
    batch, not a savepoint, a read, a count and a change per item (the
    count proof needs one raise per write transaction, docs/adr/0140)."""
    preferences = selectors.preferences_for(thread=thread)
    targets = [(_preference_at(preferences, u.get("index"), shown), u) for u in updates]
    if not targets:
        raise InvalidInput("Give at least one update.")
    result = BatchResult()
    # What the caller knows each row holds: what it was shown, then what
    # this batch wrote (two entries may edit two fields of one row).
    known = dict(values_shown) if values_shown is not None else None
    # Checked again on the rows locked: a person's edit committed since the
    # read above keeps theirs too.
    locked_rows = _locked_rows([preference for preference, _update in targets])
    written: list[int] = []
    for preference, update in targets:
        fields = {k: update.get(k) for k in ("title", "subtitle", "kind") if update.get(k) is not None}
        if not fields:
            raise InvalidInput(f"Update for index {update.get('index')} changes nothing; give title, subtitle or kind.")
        now = (preference.title, preference.subtitle, preference.kind)
        if known is not None and known.get(preference.pk, now) != now:
            result.skipped.append(f"'{preference.title}' was edited after you were shown it, so it was not changed")
            continue
        _as_locked(preference, locked_rows)
        if respect_lock and preference.locked:
            result.skipped.append(
                f"Preference '{preference.title}' is locked and cannot be modified; ask the user to unlock it first."
            )
            continue
        before = (preference.title, preference.subtitle, preference.kind)
        if "title" in fields:
            preference.title = _clean_title(fields["title"])
        if "subtitle" in fields:
            preference.subtitle = _clean_subtitle(fields["subtitle"])
        if "kind" in fields:
            preference.kind = _clean_kind(fields["kind"])
        after = (preference.title, preference.subtitle, preference.kind)
        if after != before:
            was = known.get(preference.pk) if known else None
            if was is not None and tuple(map(as_a_page_reads_it, was)) != tuple(map(as_a_page_reads_it, before)):
                preference.title, preference.subtitle, preference.kind = before
                result.skipped.append(f"'{now[0]}' was edited after you were shown it, so it was not changed")
                continue
            # Named fields only, so a stale object never writes back an old lock.
            preference.save(update_fields=["title", "subtitle", "kind", "updated_at"])
            locked_rows[preference.pk] = (preference.locked, *after)
            written.append(preference.pk)
        result.updated[preference.pk] = after
        if known is not None:
            known[preference.pk] = after
        result.done.append(f"updated '{preference.title}'")
    if written:
        changed(thread.pk, "preferences", written)
    return result


@transaction.atomic
def preferences_remove_by_index(
    *, thread: Thread, indices: list[int], respect_lock: bool, shown: Sequence[int] | None = None
) -> BatchResult:
    """Remove preferences by index; locked ones are skipped and reported
    when `respect_lock`. As `preferences_update_by_index`: one locked read
    of the rows, one DELETE, one count and one change for the batch."""
    preferences = selectors.preferences_for(thread=thread)
    targets = []
    for index in indices:
        preference = _preference_at(preferences, index, shown)
        if preference not in targets:
            targets.append(preference)
    if not targets:
        raise InvalidInput("Give at least one index.")
    result = BatchResult()
    locked_rows = _locked_rows(targets)
    removed = []
    for preference in targets:
        _as_locked(preference, locked_rows)
        if respect_lock and preference.locked:
            result.skipped.append(
                f"Preference '{preference.title}' is locked and cannot be removed; ask the user to unlock it first."
            )
            continue
        removed.append(preference.pk)
        result.done.append(f"removed '{preference.title}'")
    if removed:
        Preference.objects.filter(pk__in=removed).delete()
        changed(thread.pk, "preferences", removed)
    return result
