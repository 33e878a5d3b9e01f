"""Script-injection payloads for the XSS regression suite (tests/browser/test_xss.py).

Every payload, if it ever ran, would call `__xss(<code>)`; the code says
which field and which payload (`describe`). The browser test installs a
recorder for `__xss` in every page before any of its scripts run, so a
payload that executes anywhere is reported, even on a page the test has
since left.

`seed` runs inside the server under test (`manage.py shell`, see
`seed_command`): it writes what the browser test does not type or script,
through the same services the app uses, and prints what it wrote as JSON.
"""

from __future__ import annotations

import html

# Each takes the payload's code as {n}; all are plain text to the app.
PAYLOADS: list[tuple[str, str]] = [
    ("script tag", "<script>__xss({n})</script>"),
    ("img onerror", "<img src=x onerror=__xss({n})>"),
    ("svg onload", "<svg onload=__xss({n})>"),
    ("attribute breakout (double quote)", '"><img src=x onerror=__xss({n})>'),
    ("attribute breakout (single quote)", "'><svg/onload=__xss({n})>"),
    ("textarea breakout", "</textarea><script>__xss({n})</script>"),
    ("title / template / script breakout", "</title></template></script><img src=x onerror=__xss({n})>"),
    ("bare javascript: URL", "javascript:__xss({n})"),
    ("markdown javascript: link", "[link](javascript:__xss({n}))"),
    ("markdown mixed-case javascript: link", "[upper](JaVaScRiPt:__xss({n}))"),
    ("markdown entity-encoded javascript: link", "[entity](&#106;avascript:__xss({n}))"),
    ("markdown autolink", "<javascript:__xss({n})>"),
    ("markdown data: link", "[data](data:text/html,<script>__xss({n})</script>)"),
    ("markdown link breaking out of href", '[ok](https://example.com/"onmouseover="__xss({n}))'),
    ("raw HTML link", '<a href="javascript:__xss({n})">raw link</a>'),
    ("template syntax", "{{{{ __xss({n}) }}}}{{% if 1 %}}<b>{{{{7*7}}}}</b>{{% endif %}}"),
    ("details ontoggle", "<details open ontoggle=__xss({n})>"),
    ("htmx attributes", '<div hx-get="/" hx-trigger="load" hx-on:htmx:load="__xss({n})">'),
    ("HTML entities", "&lt;img src=x onerror=__xss({n})&gt;"),
    ("JSON escapes", "\\u003cimg src=x onerror=__xss({n})\\u003e"),
    (
        "fullwidth brackets and right-to-left override",
        "\uff1cscript\uff1e__xss({n})\uff1c/script\uff1e \u202e<img src=x onerror=__xss({n})>",
    ),
    ("iframe srcdoc", '<iframe srcdoc="<script>parent.__xss({n})</script>"></iframe>'),
    ("math/style mutation", "<math><mtext><table><mglyph><style><img src=x onerror=__xss({n})>"),
]
# Payloads whose markdown rendering decodes them (the text shown differs from
# the text written; still never markup).
MARKDOWN_DECODED = {"HTML entities", "markdown entity-encoded javascript: link", "markdown link breaking out of href"}

# Every field a person or the agent can fill, and what only the server writes.
FIELDS = [
    "thread title",  # 0
    "objective (person)",
    "preference title (person)",
    "preference subtitle (person)",
    "plan step (person)",
    "document title (person)",
    "document text (person)",
    "chat message",
    "objective (agent)",
    "preference title (agent)",
    "preference subtitle (agent)",  # 10
    "plan step (agent)",
    "document title (agent)",
    "document text (agent)",
    "reasoning sentence",
    "answer",
    "chart title",
    "chart description",
    "chart label",
    "chart series name",
    "chart axis title",  # 20
    "table title",
    "table description",
    "table column",
    "table cell",
    "document artifact title",
    "document artifact text",
    "unknown artifact type",
    "unknown artifact payload",
    "activity log message",
    "thread title (list)",  # 30
    "thread title (renamed)",
    "moderation detail",
    "feedback comment",
    "branch reason",
    "search query",
    "model name",
    "chat message (no model)",
]


def field_no(field: str) -> int:
    return FIELDS.index(field)


def code(field: str, i: int) -> int:
    return field_no(field) * 100 + i


def payload(field: str, i: int) -> str:
    return PAYLOADS[i][1].format(n=code(field, i))


def every(field: str) -> list[str]:
    return [payload(field, i) for i in range(len(PAYLOADS))]


def joined(field: str, sep: str = " ") -> str:
    return sep.join(every(field))


def packed(field: str, limit: int, start: int = 0) -> str:
    """As many payloads (from `start` on, wrapping) as fit in `limit` characters."""
    chosen: list[str] = []
    for k in range(len(PAYLOADS)):
        candidate = payload(field, (start + k) % len(PAYLOADS))
        if len(" ".join([*chosen, candidate])) <= limit:
            chosen.append(candidate)
    return " ".join(chosen)


def markdown_text(field: str) -> list[str]:
    """What a markdown field's payloads read as once rendered."""
    shown = []
    for i, (name, _template) in enumerate(PAYLOADS):
        if name in MARKDOWN_DECODED:
            continue
        shown.append(html.unescape(payload(field, i)) if name == "HTML entities" else payload(field, i))
    return shown


def describe(value) -> str:
    """ "field «…», payload «…»" for a code a payload passed to __xss."""
    try:
        number = int(value)
        return f"field «{FIELDS[number // 100]}», payload «{PAYLOADS[number % 100][0]}»"
    except (ValueError, IndexError):
        return f"unknown code {value!r}"


# --- seeding inside the server under test ---------------------------------------------


def seed(*, username: str, thread_id: str | None = None, staff_username: str | None = None, workspace: bool = False) -> dict:
    """Write what the browser does not: threads titled with each payload,
    artifacts the tools cannot make (a read-only document, an unknown type
    stored before types were checked,
    a payload its renderer refuses), activity log entries and, with
    `workspace`, a whole workspace plus a turn's snapshot, feedback, a branch
    and a moderation action (for the admin pages)."""
    from django.contrib.auth import get_user_model

    from conversations import services as conversation_services
    from conversations.models import BranchLink, ModerationAction
    from conversations.turns import slot
    from workspace.models import Artifact, Thread
    from workspace.services import artifacts as artifact_services
    from workspace.services import document as document_services
    from workspace.services import objective as objective_services
    from workspace.services import plan as plan_services
    from workspace.services import preferences as preference_services

    owner = get_user_model().objects.get(username=username)
    for i in range(len(PAYLOADS)):
        conversation_services.thread_create(owner=owner, title=payload("thread title (list)", i))
    if thread_id is None:
        thread = conversation_services.thread_create(owner=owner, title=packed("thread title", 200))
    else:
        thread = Thread.objects.get(pk=thread_id)

    if workspace:
        objective_services.objective_set(thread=thread, text=joined("objective (person)"))
        for i in range(len(PAYLOADS)):
            preference_services.preference_add(
                thread=thread,
                title=payload("preference title (person)", i),
                subtitle=payload("preference subtitle (person)", i),
                kind="hard" if i % 2 else "soft",
                respect_lock=False,
            )
            plan_services.todo_add(thread=thread, text=payload("plan step (person)", i))
        document_services.document_save(
            thread=thread, title=packed("document title (person)", 200), content=joined("document text (person)", "\n\n")
        )
        artifact_services.artifact_create(
            thread=thread, artifact_type="bar_chart", title=packed("chart title", 200), payload=chart_payload(), turn_index=1
        )
        artifact_services.artifact_create(
            thread=thread, artifact_type="data_table", title=packed("table title", 200), payload=table_payload(), turn_index=1
        )

    created = {
        "document": artifact_services.artifact_create(
            thread=thread,
            artifact_type="document",
            title=packed("document artifact title", 200),
            payload={"title": packed("document artifact title", 200), "content": joined("document artifact text", "\n\n")},
            turn_index=1,
        ).pk,
        # Written as a row, not through artifact_create, which now refuses a
        # type that is not a name: a thread imported before that check may
        # still hold one, and every page must show it as text.
        "unknown": Artifact.objects.create(
            thread=thread,
            artifact_type=payload("unknown artifact type", 1),
            title=packed("unknown artifact payload", 200),
            payload={p: p for p in every("unknown artifact payload")},
            turn_index=1,
        ).pk,
        "invalid": artifact_services.artifact_create(
            thread=thread,
            artifact_type="line_chart",
            title=packed("chart title", 200, start=5),
            payload={"title": packed("chart title", 200, start=5), "data": joined("chart label")},
            turn_index=1,
        ).pk,
    }
    conversation_services.activity_log(thread=thread, message=joined("activity log message"), level="warning", turn_index=1)
    conversation_services.activity_log(thread=thread, message=joined("activity log message", "\n"), level="error", turn_index=1)

    if workspace:
        turn, _snapshot = slot.turn_begin(thread=thread, user_message=joined("chat message", "\n\n"))
        slot.turn_finish(thread=thread, turn_index=turn)
        conversation_services.feedback_add(
            thread=thread, user=owner, turn_index=turn, rating=1, comment=joined("feedback comment")
        )
        fork = conversation_services.thread_create(owner=owner, title=packed("thread title", 200, start=7))
        BranchLink.objects.create(thread=fork, parent=thread, branch_point_turn=turn, reason=packed("branch reason", 500))
        if staff_username:
            staff = get_user_model().objects.get(username=staff_username)
            conversation_services.moderation_record(
                thread=thread,
                staff_user=staff,
                action=ModerationAction.Action.LOCK_PREFERENCE,
                detail=packed("moderation detail", 500),
            )
    return {"thread": str(thread.pk), "artifacts": created}


def seed_command(**kwargs) -> str:
    """The `manage.py shell -c` code that runs `seed(**kwargs)` and prints its result."""
    return f"import json; from tests.support.xss import seed; print(json.dumps(seed(**{kwargs!r})))"


# --- what the scripted agent writes -------------------------------------------------------

SERIES = [1, 3, 17]  # the payloads used as series names (they must be the same in every point)


def chart_payload() -> dict:
    """A chart tool's arguments (and, as stored, its payload's essentials)."""
    series = [payload("chart series name", i) for i in SERIES]
    return {
        "title": packed("chart title", 200),
        "description": joined("chart description"),
        "data": [
            {"name": label, **{s: 10 * (k + 1) + j for j, s in enumerate(series)}} for k, label in enumerate(every("chart label"))
        ],
        "series": series,
        "x_axis_title": packed("chart axis title", 200),
        "y_axis_title": packed("chart axis title", 200, start=9),
    }


def table_payload() -> dict:
    return {
        "title": packed("table title", 200),
        "description": joined("table description"),
        "columns": every("table column"),
        "rows": [every("table cell"), list(range(len(PAYLOADS)))],
    }
