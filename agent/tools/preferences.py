"""Preferences: the user's explicit rules, hard before soft, addressed by 1-based
index in that order. Locked ones are the user's alone: the agent's edits and
removals skip them and say so."""

from workspace import selectors
from workspace.errors import PreferenceLocked
from workspace.services import preferences as preference_services

from ..context import Seen
from ..workspace_lines import preference_line
from .decorator import workspace_tool
from .schemas import AddPreferencesArgs, PreferenceIndicesArgs, UpdatePreferencesArgs
from .text import Summary, batch_summary, sentence


def _outcome(result) -> Summary:
    # Some targets changed: success, with the skipped ones reported (locked,
    # or edited by someone after the model was shown them). Every target
    # skipped: a refusal, so the model does not claim a change.
    if not result.done and result.skipped:
        raise PreferenceLocked(" ".join(sentence(s) for s in result.skipped))
    return batch_summary(result)


@workspace_tool(
    name="add_preferences",
    description="Record rules the user explicitly stated (hard = non-negotiable, soft = preferred). "
    "A single one is a one-element list; an existing title is not duplicated.",
    args_schema=AddPreferencesArgs,
    uses_seen=True,
    idempotent=True,
)
def add_preferences(thread, *, items: list[dict], seen: Seen | None = None) -> Summary:
    result = preference_services.preferences_add(thread=thread, items=items, respect_lock=True)
    if seen is not None:
        seen.preferences_added(result.added)
    return batch_summary(result)


@workspace_tool(
    name="list_preferences",
    description="Read the preferences with their indices. Rarely needed: they are in your context every turn.",
    read_only=True,
)
def list_preferences(thread) -> str:
    preferences = selectors.shown_preferences(thread_id=thread.pk)
    if not preferences:
        return "(none recorded yet)"
    return "\n".join(preference_line(i, preference) for i, preference in enumerate(preferences, start=1))


@workspace_tool(
    name="update_preferences",
    description="Edit preferences by their #N index (list of {index, title?, subtitle?, kind?}). Locked ones are skipped.",
    args_schema=UpdatePreferencesArgs,
    uses_seen=True,
    destructive=True,
    idempotent=True,
)
def update_preferences(thread, *, updates: list[dict], seen: Seen | None = None) -> Summary:
    result = preference_services.preferences_update_by_index(
        thread=thread,
        updates=updates,
        respect_lock=True,
        shown=seen.preferences_shown if seen is not None else None,
        values_shown=seen.preference_values_shown if seen is not None else None,
    )
    if seen is not None:
        seen.preferences_written(result.updated)
    return _outcome(result)


@workspace_tool(
    name="remove_preferences",
    description="Delete preferences by their #N index, only when the user explicitly asks. Locked ones are skipped.",
    args_schema=PreferenceIndicesArgs,
    uses_seen=True,
    destructive=True,
)
def remove_preferences(thread, *, indices: list[int], seen: Seen | None = None) -> Summary:
    shown = seen.preferences_shown if seen is not None else None
    return _outcome(
        preference_services.preferences_remove_by_index(thread=thread, indices=indices, respect_lock=True, shown=shown)
    )
