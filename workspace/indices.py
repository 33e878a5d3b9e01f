"""The 1-based indices the agent's tools take for plan steps and preferences
(the #N of its prompt's <workspace> block), resolved against what the agent
was shown rather than against the rows as they are when the call runs."""

from collections.abc import Sequence

from .errors import InvalidInput


def index_as_shown(ids_now: Sequence[int], index, shown: Sequence[int] | None, *, row: str, rows: str) -> object:
    """The 1-based index, among the rows as they are now (`ids_now`, in
    order), of the row a caller means by `index`. With `shown`, the ids of
    the rows in the order the caller was shown them (the agent's prompt),
    `index` names the row shown there, wherever it is now: someone else's
    step added above it, or a step moved, does not turn the call onto
    another row (docs/adr/0113). Past the end of `shown` (rows the caller
    added since) and without it, `index` counts in the rows as they are
    now; anything not a whole number is returned for the caller's own
    check. The row shown there removed since: nothing is done, and the
    message says so (`row`: "Step", `rows`: "the plan")."""
    if shown is None or not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= len(shown):
        return index
    wanted = shown[index - 1]
    for position, row_id in enumerate(ids_now, start=1):
        if row_id == wanted:
            return position
    raise InvalidInput(
        f"{row} #{index} of {rows} you were shown was removed since, so nothing was changed. "
        f"Your next call is shown {rows} as it is now."
    )
