"""The workspace panels as named partials: one template per panel serves the
full page, the HTMX response and the WebSocket push (OOB swap).

`render_panel("plan", thread=t, oob=True)` is what the turn runner sends when
a tool changed the plan; the HTMX views return the same fragment."""

from django.conf import settings
from django.template.loader import render_to_string

from . import selectors
from .artifact_registry import artifact_view, option_label
from .markdown import render_markdown
from .models import Thread

PANEL_TEMPLATES = {
    "objective": "workspace/panels/objective.html#panel",
    "preferences": "workspace/panels/preferences.html#panel",
    "plan": "workspace/panels/plan.html#panel",
    "centre": "workspace/panels/centre.html#panel",
}


def objective_context(*, thread: Thread, **extra) -> dict:
    objective = selectors.objective_for(thread=thread)
    return {
        "thread": thread,
        "objective": objective,
        "objective_text": objective.text if objective else selectors.STANDING_OBJECTIVE,
        "is_standing_objective": objective is None,
        **extra,
    }


def preferences_context(*, thread: Thread, **extra) -> dict:
    return {"thread": thread, "preferences": selectors.preferences_for(thread=thread), **extra}


def plan_context(*, thread: Thread, **extra) -> dict:
    rows = selectors.plan_rows(thread=thread)
    return {
        "thread": thread,
        "rows": rows,
        "plan_done": sum(1 for row in rows if row.todo.done),
        # The panel is re-rendered after every agent tool call that touches
        # the plan: one read of it serves both views.
        "plan_markdown": selectors.plan_markdown(thread=thread, rows=rows),
        **extra,
    }


def centre_context(*, thread: Thread, selected_artifact_id: int | None = None, **extra) -> dict:
    """The live document, or the selected artifact rendered through the registry.
    An id that is not an artifact of this thread shows the document."""
    artifacts = selectors.artifact_index_for(thread=thread)
    selected = None
    if selected_artifact_id is not None:
        selected = selectors.artifact_for(thread=thread, artifact_id=selected_artifact_id)
    document = selectors.document_for(thread=thread)
    return {
        "thread": thread,
        "document": document,
        "document_html": render_markdown(document.content) if selected is None else "",
        "document_max_chars": settings.HAICO_DOCUMENT_MAX_CHARS,
        "artifacts": artifacts,
        "artifact_options": [(a, option_label(a)) for a in artifacts],
        "selected_artifact": selected,
        "artifact_view": artifact_view(selected) if selected else None,
        **extra,
    }


PANEL_CONTEXTS = {
    "objective": objective_context,
    "preferences": preferences_context,
    "plan": plan_context,
    "centre": centre_context,
}


def panel_context(name: str, *, thread: Thread, **extra) -> dict:
    return PANEL_CONTEXTS[name](thread=thread, **extra)


def render_panel(name: str, *, thread: Thread, request=None, oob: bool = False, **extra) -> str:
    """The panel's HTML. With `oob`, its root element carries hx-swap-oob so
    htmx (HTTP or WebSocket) replaces the panel in place by id."""
    context = panel_context(name, thread=thread, oob=oob, **extra)
    return render_to_string(PANEL_TEMPLATES[name], context, request=request)
