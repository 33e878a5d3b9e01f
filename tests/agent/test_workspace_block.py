"""The <workspace> block, character for character (core seed §3.2)."""

from datetime import UTC, datetime

import pytest

from agent.prompt import DOCUMENT_INJECT_MAX_CHARS, SYSTEM_PROMPT, build_system_prompt, render_workspace_block
from workspace.models import Document, Preference
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db

STANDING = (
    "Understand what the user is trying to achieve, clearing up any ambiguity and "
    "asking again if needed, then state it as a clear, specific objective."
)
FIXED = datetime(2026, 5, 15, 10, 23, 11, tzinfo=UTC)


def _write_document(thread, *, title="Untitled", content=""):
    document_services.document_save(thread=thread, title=title, content=content)
    Document.objects.filter(thread=thread).update(updated_at=FIXED)


def test_empty_workspace(thread):
    assert render_workspace_block(thread) == (
        "<workspace>\n"
        "<objective>\n"
        f"{STANDING}\n"
        "</objective>\n"
        "\n"
        "<preferences>\n"
        "(none recorded yet)\n"
        "</preferences>\n"
        "\n"
        "<todos>\n"
        "(no plan yet)\n"
        "</todos>\n"
        "\n"
        '<document title="Untitled">\n'
        "(the document is empty)\n"
        "</document>\n"
        "</workspace>"
    )


def test_objective_document_and_preferences_hard_first_with_lock_marker(thread):
    objective_services.objective_set(thread=thread, text="Write a publishable literature review on sleep and memory")
    # Added soft first: the block must still list the hard ones first.
    preferences_services.preference_add(thread=thread, title="Academic tone", subtitle="Formal and objective", kind="soft", respect_lock=False)
    cite = preferences_services.preference_add(thread=thread, title="Citation required", kind="hard", respect_lock=False)
    preferences_services.preference_add(thread=thread, title="No proper nouns of patients", kind="hard", respect_lock=False)
    preferences_services.preference_add(thread=thread, title="British English", kind="soft", respect_lock=False)
    Preference.objects.filter(pk=cite.pk).update(locked=True)
    _write_document(thread, title='The "sleep" review', content="# Intro\n\nSleep matters.")

    assert render_workspace_block(thread) == (
        "<workspace>\n"
        "<objective>\n"
        "Write a publishable literature review on sleep and memory\n"
        "</objective>\n"
        "\n"
        "<preferences>\n"
        "- [hard] Citation required (locked)\n"
        "- [hard] No proper nouns of patients\n"
        "- [soft] Academic tone — Formal and objective\n"
        "- [soft] British English\n"
        "</preferences>\n"
        "\n"
        "<todos>\n"
        "(no plan yet)\n"
        "</todos>\n"
        "\n"
        '<document title="The &quot;sleep&quot; review" updated_at="2026-05-15T10:23:11">\n'
        "# Intro\n"
        "\n"
        "Sleep matters.\n"
        "</document>\n"
        "</workspace>"
    )


def test_nested_todos_get_dotted_numbers_indentation_and_checkboxes(thread):
    plan_services.todos_add_outline(
        thread=thread,
        steps=[
            {"text": "Outline three sections", "depth": 0},
            {"text": "Draft section 1", "depth": 1},
            {"text": "Find sources", "depth": 2},
            {"text": "Draft section 2", "depth": 1},
            {"text": "Cross-check citations", "depth": 0},
        ],
    )
    plan_services.todos_toggle_by_index(thread=thread, indices=[1, 2])

    block = render_workspace_block(thread)

    assert (
        "<todos>\n"
        "1 [x] Outline three sections\n"
        "  1.1 [x] Draft section 1\n"
        "    1.1.1 [ ] Find sources\n"
        "  1.2 [ ] Draft section 2\n"
        "2 [ ] Cross-check citations\n"
        "</todos>\n"
    ) in block


def test_long_document_is_cut_at_30000_characters_with_the_marker(thread):
    body = "".join(chr(ord("a") + i % 26) for i in range(DOCUMENT_INJECT_MAX_CHARS + 500))
    _write_document(thread, title="Long", content=body)

    block = render_workspace_block(thread)

    assert DOCUMENT_INJECT_MAX_CHARS == 30_000
    assert (
        '<document title="Long" updated_at="2026-05-15T10:23:11">\n'
        + body[:30_000]
        + "\n[… truncated; use document tools to read the full content …]\n"
        "</document>\n"
        "</workspace>"
    ) in block
    assert body[:30_001] not in block


def test_document_of_exactly_30000_characters_is_not_marked_truncated(thread):
    _write_document(thread, title="Edge", content="x" * 30_000)

    block = render_workspace_block(thread)

    assert "x" * 30_000 + "\n</document>" in block
    assert "truncated" not in block


def test_latest_artifact_is_a_pointer_line_without_payload(thread):
    artifacts_services.artifact_create(thread=thread, artifact_type="bar_chart", title="Old", payload={"data": []}, turn_index=1)
    latest = artifacts_services.artifact_create(
        thread=thread,
        artifact_type="line_chart",
        title='Q1 vs "Q2"',
        payload={"data": [{"label": "Q1", "value": 120}, {"label": "SECRET-PAYLOAD", "value": 180}]},
        turn_index=3,
    )
    _write_document(thread)

    block = render_workspace_block(thread)

    assert block.endswith(
        '<document title="Untitled" updated_at="2026-05-15T10:23:11">\n'
        "(the document is empty)\n"
        "</document>\n"
        "\n"
        f'<latest_artifact id="{latest.pk}" type="line_chart" turn_index="3" title="Q1 vs &quot;Q2&quot;"/>\n'
        "</workspace>"
    )
    assert "SECRET-PAYLOAD" not in block
    assert "Old" not in block


def test_system_prompt_is_static_text_then_the_block(thread):
    objective_services.objective_set(thread=thread, text="Chart quarterly revenue")

    prompt = build_system_prompt(thread)

    assert prompt == SYSTEM_PROMPT + "\n\n" + render_workspace_block(thread)
    assert prompt.index("Chart quarterly revenue") > len(SYSTEM_PROMPT)


def test_the_prompt_never_reads_an_artifact_payload(thread):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    artifacts_services.artifact_create(
        thread=thread, artifact_type="data_table", title="Big", payload={"rows": [[i] for i in range(5000)]}, turn_index=1
    )
    with CaptureQueriesContext(connection) as queries:
        text = build_system_prompt(thread)
    assert '<latest_artifact id="' in text and 'title="Big"/>' in text
    assert not any('"payload"' in q["sql"] for q in queries.captured_queries)
