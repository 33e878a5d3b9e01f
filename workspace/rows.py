"""The rows of the plan and the preferences, and of a table artifact, as
HTML: the one renderer the page, the HTMX answers and the live patches all use.

Written in Python rather than as template partials because a workspace can
hold hundreds of rows and every change of one row is rendered for every
open page: the template engine took ~35 µs a row (300 plan steps: 10.7 ms
of a page's 30 ms budget), this takes ~2 µs (docs/adr/0009). Every value
that comes from a person or the model goes through `escape_html`.

A row carries only what it shows; static/js/plan.js and preferences.js handle its controls
from the panel, reading the row's id from its element id (step-<id>,
pref-<id>). `after` (in patches only) is the id of the row before it, ""
for the first, so a page can put a new or moved row in its place.
"""

from django.utils.safestring import SafeString, mark_safe

from .models import Preference
from .selectors import PlanStep, ShownPreference
from .text import escape_html


def _after(after) -> str:
    return "" if after is None else f' data-after="{escape_html(after)}"'


def step_row(step: PlanStep) -> str:
    number = escape_html(step.number)
    done = step.done
    return (
        f'<li id="step-{int(step.pk)}" class="step{" is-done" if done else ""}" data-depth="{int(step.depth)}"'
        f'{_after(step.after)}><div class="edit-view">'
        f'<input type="checkbox" aria-label="Done: step {number}"{" checked" if done else ""}>'
        f'<span class="step-number">{number}</span><span class="step-text">{escape_html(step.text)}</span>'
        f'<button class="step-menu" aria-label="Actions for step {number}"></button></div></li>'
    )


def preference_row(preference: ShownPreference) -> str:
    title = escape_html(preference.title)
    kind = "hard" if preference.kind == Preference.Kind.HARD else "soft"
    locked = preference.locked
    lock_verb = "Unlock" if locked else "Lock"
    subtitle = f'<p class="pref-subtitle">{escape_html(preference.subtitle)}</p>' if preference.subtitle else ""
    badge = (
        '<span class="badge badge-lock" title="Locked: the assistant cannot change or remove it">Locked</span>' if locked else ""
    )
    return (
        f'<li id="pref-{int(preference.pk)}" class="pref pref-{kind}{" is-locked" if locked else ""}"'
        f'{_after(preference.after)}><div class="edit-view">'
        f'<div class="pref-line"><span class="pref-title">{title}</span>{badge}</div>{subtitle}'
        # static/js/keyboard.js makes it a toolbar named after the preference
        # ("Actions for preference …", one Tab stop), which is what tells a
        # screen reader whose Lock, Edit and Delete these are: the buttons'
        # own names stay one word, so a hundred rows do not carry the title
        # three more times each (docs/adr/0088).
        f'<div class="row-actions">'
        # The button says what a click does, to the eye and to a screen reader alike
        # (not a pressed toggle, whose name would have to stay the same).
        f'<button data-pref-act="lock"{" data-locked" if locked else ""}>{lock_verb}</button>'
        f'<button data-pref-act="edit">Edit</button>'
        f'<button data-pref-act="delete">Delete</button>'
        f"</div></div></li>"
    )


def step_rows(steps) -> SafeString:
    return mark_safe("".join(step_row(step) for step in steps))


def preference_rows(preferences) -> SafeString:
    return mark_safe("".join(preference_row(preference) for preference in preferences))


def table_rows(rows) -> SafeString:
    """A table artifact's rows (artifact_registry.build_data_table's cells):
    a number's cell right-aligned with its value for the sort
    (static/js/tables.js). Every row of a 10 000-row table took the template
    engine about 2 s (docs/adr/0141)."""
    out = []
    for row in rows:
        cells = "".join(
            f"<td>{escape_html(cell['text'])}</td>"
            if cell["sort"] is None
            else f'<td class="num" data-sort-value="{escape_html(cell["sort"])}">{escape_html(cell["text"])}</td>'
            for cell in row
        )
        out.append(f"<tr>{cells}</tr>\n")
    return mark_safe("".join(out))


def chart_rows(rows) -> SafeString:
    """A chart's Data table rows (artifact_registry.build_chart's `table_rows`:
    the point's name, then its values as text), written as a table's are."""
    out = []
    for label, *values in rows:
        cells = "".join(f'<td class="num">{escape_html(value)}</td>' for value in values)
        out.append(f'<tr><th scope="row">{escape_html(label)}</th>{cells}</tr>\n')
    return mark_safe("".join(out))
