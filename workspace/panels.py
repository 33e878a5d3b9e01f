"""The workspace panels as named partials: one template per panel serves the
full page, the HTMX response and the WebSocket push.

`render_changes(thread, changes)` turns committed change events
(workspace.events) into the fragments that bring an open page up to date:
patches of the touched plan steps and preferences (applied by
static/js/live.js, so nothing the person is typing is replaced), the new
entries of the plan's history, the objective's read view, the document's new text, a new artifact shown in the
centre. The live layer pushes them; the HTMX views answer with them."""

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse

from . import exports, rows, selectors, url_templates
from .artifact_registry import TABLE_ROWS_SHOWN, ArtifactView, artifact_view, option_label, shown_size
from .events import Change
from .markdown import render_markdown
from .models import Document, Preference, Thread
from .text import utf8_size
from .text_splice import splice_from, utf16_units

PANEL_TEMPLATES = {
    "objective": "workspace/panels/objective.html#panel",
    "preferences": "workspace/panels/preferences.html#panel",
    "plan": "workspace/panels/plan.html#panel",
    "centre": "workspace/panels/centre.html#panel",
}
LIVE = "workspace/panels/live.html"
# A longer document's preview comes by its own request after the page: the
# page stays light and quick however long the document grows.
PREVIEW_INLINE_MAX_CHARS = 8_000


def objective_context(*, thread: Thread, **extra) -> dict:
    objective = selectors.objective_for(thread=thread)
    return {
        "thread": thread,
        "objective": objective,
        "objective_text": objective.text if objective else selectors.STANDING_OBJECTIVE,
        "is_standing_objective": objective is None,
        **extra,
    }


# A row's actions, each URL once per panel with the row's id left to fill in (docs/adr/0081).
PREFERENCE_URLS = {
    "edit": "workspace:preference-update",
    "delete": "workspace:preference-delete",
    "lock": "workspace:preference-lock",
}
STEP_URLS = {
    "add": "workspace:plan-add-child",
    "edit": "workspace:plan-update",
    "done": "workspace:plan-done",
    "delete": "workspace:plan-delete",
    "indent": "workspace:plan-indent",
    "outdent": "workspace:plan-outdent",
    "move": "workspace:plan-move",
    "place": "workspace:plan-place",
}


def preferences_context(*, thread: Thread, **extra) -> dict:
    preferences = selectors.shown_preferences(thread_id=thread.pk)
    return {
        "thread": thread,
        "preferences": preferences,
        "pref_urls": url_templates.row_urls(PREFERENCE_URLS, thread_id=thread.pk),
        "hard_html": rows.preference_rows(p for p in preferences if p.kind == Preference.Kind.HARD),
        "soft_html": rows.preference_rows(p for p in preferences if p.kind != Preference.Kind.HARD),
        **extra,
    }


def plan_context(*, thread: Thread, **extra) -> dict:
    steps = selectors.plan_steps(thread=thread)
    return {
        "thread": thread,
        "steps": steps,
        "steps_html": rows.step_rows(steps),
        "step_urls": url_templates.row_urls(STEP_URLS, thread_id=thread.pk),
        "plan_done": sum(1 for step in steps if step.done),
        **extra,
    }


def centre_context(
    *,
    thread: Thread,
    selected_artifact_id: int | None = None,
    all_rows: bool = False,
    view: ArtifactView | None = None,
    **extra,
) -> dict:
    """The live document, or the selected artifact rendered through the registry.
    An id that is not an artifact of this thread shows the document.
    `all_rows`: every row of a table, not only its first (docs/adr/0141).
    `view`: the selected artifact's view, as already built."""
    artifacts = selectors.artifact_index_for(thread=thread)
    selected = None
    if view is not None and view.artifact.pk == selected_artifact_id:
        selected = view.artifact
    elif selected_artifact_id is not None:
        selected = selectors.artifact_for(thread=thread, artifact_id=selected_artifact_id)
    document = selectors.document_for(thread=thread)
    deferred = selected is None and len(document.content) > PREVIEW_INLINE_MAX_CHARS
    return {
        "thread": thread,
        "document": document,
        "document_html": render_markdown(document.content) if selected is None and not deferred else "",
        "preview_deferred": deferred,
        "document_max_chars": settings.HAICO_DOCUMENT_MAX_CHARS,
        "artifacts": artifacts,
        "artifact_options": [(a, option_label(a)) for a in artifacts],
        "selected_artifact": selected,
        # The review compares with the document just read, not a second read of it.
        "review": selectors.document_review(thread=thread, document=document) if selected is None and document.pk else None,
        # Only said when the agent put an artifact on show over the document.
        "review_waiting": bool(extra.get("agent_shown") and _review_waiting(thread)),
        "artifact_view": (
            view
            if view is not None and view.artifact is selected
            else artifact_view(selected, rows_shown=None if all_rows else TABLE_ROWS_SHOWN)
            if selected
            else None
        ),
        "table_all_url": (
            f"{reverse('workspace:centre', kwargs={'thread_id': thread.pk})}?artifact={selected.pk}&rows=all" if selected else ""
        ),
        "csv_types": exports.CSV_TYPES,
        "artifact_filename": exports.file_stem(selected.title, default="chart") if selected else "",
        **extra,
    }


def _review_waiting(thread: Thread) -> bool:
    review = selectors.document_review(thread=thread)
    return bool(review and review.open)


PANEL_CONTEXTS = {
    "objective": objective_context,
    "preferences": preferences_context,
    "plan": plan_context,
    "centre": centre_context,
}


def panel_context(name: str, *, thread: Thread, **extra) -> dict:
    return PANEL_CONTEXTS[name](thread=thread, **extra)


def render_panel(name: str, *, thread: Thread, request=None, oob: bool = False, **extra) -> str:
    """The whole panel. With `oob`, its root element carries hx-swap-oob so
    htmx replaces the panel in place by id."""
    context = panel_context(name, thread=thread, oob=oob, **extra)
    return render_to_string(PANEL_TEMPLATES[name], context, request=request)


# --- patches: what changed, not whole panels -----------------------------------


def render_plan_patch(
    *, thread: Thread, ids=None, renumbered: bool = False, reading: selectors.WorkspaceReading | None = None
) -> str:
    """The touched steps and the done count; with `ids` None every step,
    marked complete (the page drops steps it has that are not in it: a
    resync). `renumbered`: the change may have renumbered steps it did not
    touch (a move, a delete), so the patch lists every step's number and the
    page shows those rather than working them out (docs/adr/0081).
    `reading`: the workspace as read now, else the plan is read."""
    patch = selectors.plan_patch(thread=thread, ids=ids, steps=reading.todos if reading is not None else None)
    numbers = " ".join(f"{pk}:{number}" for pk, number in patch.numbers) if renumbered and ids is not None else None
    context = {
        "steps_html": rows.step_rows(patch.steps),
        "removed": patch.removed,
        "complete": ids is None,
        "numbers": numbers,
        "done": patch.done,
        "total": len(patch.numbers),
    }
    return render_to_string("workspace/panels/plan.html#patch", context)


def render_plan_history_patch(*, ids) -> str:
    """A marker that the plan's history has new entries, for every open page:
    no entry and no database read, since almost no page has the history
    open and every plan write (each agent tool call that ticks a step) would
    pay for it (docs/adr/0092). It names the new entries' oldest and newest
    ids, and a page with the history open asks for what it does not show yet
    (static/js/live.js)."""
    if not ids:
        return ""
    return render_to_string("workspace/panels/plan.html#history_patch", {"oldest": min(ids), "newest": max(ids)})


def render_preferences_patch(*, thread: Thread, ids=None, reading: selectors.WorkspaceReading | None = None) -> str:
    preferences, removed = selectors.preferences_patch(
        thread=thread, ids=ids, preferences=reading.preferences if reading is not None else None
    )
    context = {"rows_html": rows.preference_rows(preferences), "removed": removed, "complete": ids is None}
    return render_to_string("workspace/panels/preferences.html#patch", context)


def render_objective_patch(*, thread: Thread, reading: selectors.WorkspaceReading | None = None) -> str:
    """The objective's read view (all the patch shows: its text, or that
    there is none yet). `reading`: the workspace as read now, else the
    objective is read."""
    if reading is None:
        context = objective_context(thread=thread)
    else:
        standing = reading.objective_text is None
        context = {
            "thread": thread,
            "objective_text": selectors.STANDING_OBJECTIVE if standing else reading.objective_text,
            "is_standing_objective": standing,
        }
    return render_to_string("workspace/panels/objective.html#patch", context)


# A patch for one page carries only the span of the text that differs from
# the version that page holds, when it keeps at least this much of it.
SPLICE_MIN_KEPT_CHARS = 1_000


def render_document_patch(
    *,
    thread: Thread,
    document: Document | None = None,
    document_html: str | None = None,
    since: tuple[int, str] | None = None,
) -> str:
    """The document's new text and preview, and its review (docs/adr/0019),
    which static/js/document_editor.js shows whether or not the editor can take the text yet.
    `document` and its preview `document_html`: as already read, else read.

    `since`: the version the one page this answers holds, and its text. The
    patch then carries the text as the span that differs from it (a restore
    of a version close to the one shown keeps most of a long document,
    which the answer sent again whole, docs/adr/0138); the page rebuilds it,
    checks it, and reads the workspace again if it cannot."""
    if document is None:
        document = selectors.document_for(thread=thread)
    context = {
        "thread": thread,
        "document": document,
        "document_html": render_markdown(document.content) if document_html is None else document_html,
        "review": selectors.document_review(thread=thread),
        # A restore says whose it was, so the other pages can tell their
        # people what it undid (docs/adr/0164).
        "restore": selectors.document_restore_shown(document),
    }
    if since is not None:
        splice = splice_from(since[1], document.content)
        if splice.kept_head + splice.kept_tail >= SPLICE_MIN_KEPT_CHARS:
            base = since[1]
            context["splice"] = {
                "since_version": since[0],
                "kept_head": utf16_units(base[: splice.kept_head]),
                "kept_tail": utf16_units(base[len(base) - splice.kept_tail :]),
                "middle": splice.middle,
                "crc32": splice.crc32,
            }
    return render_to_string("workspace/panels/centre.html#document_patch", context)


def document_patch_exceeds(document: Document, max_bytes: int) -> tuple[bool, str | None]:
    """Whether the document's patch is surely over `max_bytes` (UTF-8), told
    without rendering it: it holds the title and the text escaped (escaping
    only lengthens them) and the preview as it is, so their sizes together
    are less than its own (docs/adr/0043). With the preview when it was
    needed to tell (render_document_patch takes it)."""
    floor = utf8_size(document.title) + utf8_size(document.content)
    if floor > max_bytes:
        return True, None
    document_html = render_markdown(document.content)
    return floor + utf8_size(document_html) > max_bytes, document_html


def render_review(*, thread: Thread, message: str = "", alert: bool = False, request=None) -> str:
    """The review of the latest agent turn's document changes (docs/adr/0019),
    with the answer to what the person just asked, swapped in by its id
    before the document patch that follows it (which keeps that answer)."""
    context = {
        "thread": thread,
        "review": selectors.document_review(thread=thread),
        "review_message": message,
        "review_alert": alert,
        "review_oob": True,
    }
    return render_to_string("workspace/panels/centre.html#review", context, request=request)


def render_error(*, panel: str, target: str, message: str, row_id=None, base: dict[str, str] | None = None) -> str:
    """A refusal; `base`: the hidden fields the open form takes on (docs/adr/0125)."""
    context = {"panel": panel, "target": target, "message": message, "row_id": row_id, "base": base or {}}
    return render_to_string(f"{LIVE}#error", context)


# The surfaces whose patches a kept reading can give.
READ_SURFACES = {"objective", "preferences", "plan"}


def render_changes(thread: Thread, changes: list[Change]) -> str:
    """The workspace fragments for `changes` (one thread's). The thread's
    own changes (its title) are the conversation layer's to render."""
    html = render_changes_within(thread, changes, max_bytes=None)
    assert html is not None  # only a limit refuses
    return html


def render_changes_within(thread: Thread, changes: list[Change], *, max_bytes: int | None) -> str | None:
    """As render_changes; None, with nothing rendered, when the document's
    patch or the new artifact's centre panel alone is surely over
    `max_bytes`: a push that big is replaced by its stand-in whatever else
    it holds (conversations.live, docs/adr/0043), and an autosave of a long
    document, or a big new table, would render it only for it to be thrown
    away (docs/adr/0141)."""
    by_surface = {change.surface: change for change in changes}
    document, document_html, view = None, None, None
    new_artifact = "artifacts" in by_surface and by_surface["artifacts"].ids
    if new_artifact:
        newest = selectors.artifact_for(thread=thread, artifact_id=max(by_surface["artifacts"].ids))
        view = artifact_view(newest) if newest is not None else None
        if max_bytes is not None and view is not None and shown_size(view) > max_bytes:
            return None
    elif "document" in by_surface:
        document = selectors.document_for(thread=thread)
        if max_bytes is not None:
            too_big, document_html = document_patch_exceeds(document, max_bytes)
            if too_big:
                return None
    parts = []
    # A thread whose reading this process keeps (a turn's) takes the
    # patches' rows from it, brought up to date by its write counts: the same
    # rows a read would give, and the next model call's prompt then reads
    # only the counts (docs/adr/0127).
    announced = by_surface.keys() & READ_SURFACES
    reading = selectors.workspace_reading_kept(thread=thread, expected=announced) if announced else None
    if "objective" in by_surface:
        parts.append(render_objective_patch(thread=thread, reading=reading))
    if "preferences" in by_surface:
        parts.append(render_preferences_patch(thread=thread, ids=by_surface["preferences"].ids, reading=reading))
    if "plan" in by_surface:
        plan = by_surface["plan"]
        parts.append(render_plan_patch(thread=thread, ids=plan.ids, renumbered=plan.reordered, reading=reading))
    if "plan_history" in by_surface:
        parts.append(render_plan_history_patch(ids=by_surface["plan_history"].ids))
    if new_artifact:
        # A new artifact is shown at once in every tab (docs/adr/0072);
        # static/js/document_editor.js keeps a person's unsaved document text from being replaced.
        newest_id = max(by_surface["artifacts"].ids)
        parts.append(render_panel("centre", thread=thread, oob=True, selected_artifact_id=newest_id, view=view, agent_shown=True))
    elif document is not None:
        parts.append(render_document_patch(thread=thread, document=document, document_html=document_html))
    return "".join(parts)
