"""agent.prompt: the static system prompt has every section and rule below
and names every tool; the <workspace> block follows it, in the format of
docs/adr/0072, character for character."""

import re
from datetime import UTC, datetime

import pytest

from agent.modes import mode_prompt
from agent.prompt import (
    DOCUMENT_INJECT_MAX_CHARS,
    PERSON_NAME_MAX_CHARS,
    SYSTEM_PROMPT,
    build_system_prompt,
    render_workspace_block,
    sender_line,
)
from agent.tools.registry import build_tools
from workspace.models import Document, Preference
from workspace.services import artifacts as artifacts_services
from workspace.services import document as document_services
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preferences_services

pytestmark = pytest.mark.django_db


def test_every_registered_tool_is_in_the_tool_guide():
    guide = SYSTEM_PROMPT.split("# Tool guide", 1)[1].split("\n# ", 1)[0]
    missing = [name for name in [tool.name for tool in build_tools()] if not re.search(rf"^- {name}:", guide, flags=re.M)]
    assert missing == []
    assert len([tool.name for tool in build_tools()]) == 19


def test_tool_guide_groups_tools_by_domain():
    guide = SYSTEM_PROMPT.split("# Tool guide", 1)[1].split("\n# ", 1)[0]
    headings = [line for line in guide.splitlines() if line and not line.startswith(("-", " ")) and not line.endswith(".")]
    assert headings[:7] == ["Document", "Objective", "Plan", "Preferences", "Charts", "Tables", "Past artifacts"]
    assert "sortable table" in guide


@pytest.mark.parametrize(
    "heading",
    [
        "# The workspace",
        "## Phase 1: steps (every tool call)",
        "## Phase 2: the final answer",
        "## The Objective",
        "## The plan is your execution ledger",
        "## Explicit preferences: record them in the same turn",
        "## Latent preferences: propose, never record on your own",
        "## Locked preferences",
        "# Tool guide",
        "# When a tool fails",
        "# Conversation",
    ],
)
def test_prompt_has_each_section(heading):
    assert re.search(rf"^{re.escape(heading)}", SYSTEM_PROMPT, flags=re.M)


@pytest.mark.parametrize(
    "rule",
    [
        "`action_and_reasoning`",  # phase 1: the sentence argument
        "never mention tool names",  # phase 1: no tool names in the trace
        "Open with one sentence on what changed",  # phase 2 opener
        "Never repeat the objective, the plan, the preferences or the document",
        "Never describe which tools you used",
        "standing objective",
        "record it with set_objective",
        "do not replace their intent",  # user-set objective is refined, not overwritten
        "single add_todos call",
        "Carry the steps out in the same turn",
        "Completion sweep",
        "only to plan",
        "truly ambiguous",
        "destructive or hard to undo",
        "needs no plan",
        "in the same turn",
        "do not add a duplicate",
        "Low-intensity colours",  # chart preference example
        "Record it only after they agree",
        "read-only",  # locked preferences
        "by its id",  # artifacts referred to by id
        "Never copy an artifact's data",
        "try once more",  # error handling: one retry with fixes
        "ask how to proceed",
        "one pointed question",
        "based on the document version shown in the <document> block",  # update_document's base
        "their edits are merged into yours",
        "redo your edit on that text",
        "Prefer it to update_document for small edits",  # targeted edits first
        "says how many matches were found",
    ],
)
def test_prompt_states_each_rule(rule):
    assert rule in SYSTEM_PROMPT


def test_static_prompt_has_no_workspace_content():
    # The workspace block is appended per call; the static text must not carry
    # one, or the cacheable prefix would differ between threads.
    assert "<objective>\n" not in SYSTEM_PROMPT
    assert "</workspace>" not in SYSTEM_PROMPT


# --- the <workspace> block -----------------------------------------------------------


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
        '<document title="Untitled" version="0">\n'
        "(the document is empty)\n"
        "</document>\n"
        "</workspace>"
    )


def test_objective_document_and_preferences_hard_first_with_lock_marker(thread):
    objective_services.objective_set(thread=thread, text="Write a publishable literature review on sleep and memory")
    # Added soft first: the block must still list the hard ones first.
    preferences_services.preference_add(
        thread=thread, title="Academic tone", subtitle="Formal and objective", kind="soft", respect_lock=False
    )
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
        "#1 [hard] Citation required (locked)\n"
        "#2 [hard] No proper nouns of patients\n"
        "#3 [soft] Academic tone — Formal and objective\n"
        "#4 [soft] British English\n"
        "</preferences>\n"
        "\n"
        "<todos>\n"
        "(no plan yet)\n"
        "</todos>\n"
        "\n"
        '<document title="The &quot;sleep&quot; review" version="1" updated_at="2026-05-15T10:23:11">\n'
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
        "#1 1 [x] Outline three sections\n"
        "#2   1.1 [x] Draft section 1\n"
        "#3     1.1.1 [ ] Find sources\n"
        "#4   1.2 [ ] Draft section 2\n"
        "#5 2 [ ] Cross-check citations\n"
        "</todos>\n"
    ) in block


def test_long_document_is_cut_at_30000_characters_with_the_marker(thread):
    body = "".join(chr(ord("a") + i % 26) for i in range(DOCUMENT_INJECT_MAX_CHARS + 500))
    _write_document(thread, title="Long", content=body)

    block = render_workspace_block(thread)

    assert DOCUMENT_INJECT_MAX_CHARS == 30_000
    assert (
        '<document title="Long" version="1" updated_at="2026-05-15T10:23:11">\n'
        + body[:30_000]
        + "\n[… 500 more characters not shown (30500 in all); read them with read_document, from start=30000 …]\n"
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
        '<document title="Untitled" version="1" updated_at="2026-05-15T10:23:11">\n'
        "(the document is empty)\n"
        "</document>\n"
        "\n"
        f'<latest_artifact id="{latest.pk}" type="line_chart" turn_index="3" title="Q1 vs &quot;Q2&quot;"/>\n'
        "</workspace>"
    )
    assert "SECRET-PAYLOAD" not in block
    assert "Old" not in block


def test_system_prompt_is_static_text_then_the_block_then_the_mode(thread):
    objective_services.objective_set(thread=thread, text="Chart quarterly revenue")

    prompt = build_system_prompt(thread)

    assert prompt == SYSTEM_PROMPT + "\n\n" + render_workspace_block(thread) + "\n\n" + mode_prompt("execute")
    assert prompt.index("Chart quarterly revenue") > len(SYSTEM_PROMPT)
    assert prompt.endswith(
        "# Mode: Execute\n\nThe person chose Execute mode: every tool is available; "
        "plan and carry out the work as described above."
    )


@pytest.mark.parametrize(
    "mode, says",
    [
        ("explore", ["# Mode: Explore", "you cannot change the workspace", "only the reading tools"]),
        ("plan", ["# Mode: Plan", "the objective and the plan only", "do not carry it out"]),
        ("execute", ["# Mode: Execute", "every tool is available"]),
    ],
)
def test_the_prompt_says_which_mode_the_turn_runs_in(thread, mode, says):
    prompt = build_system_prompt(thread, mode=mode)
    tail = prompt.split("</workspace>", 1)[1]
    for words in says:
        assert words in tail
    others = {"explore", "plan", "execute"} - {mode}
    assert not any(f"# Mode: {other.title()}" in prompt for other in others)


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


def test_a_selection_is_shown_after_the_document_and_followed_where_an_edit_moved_it(thread):
    from agent.context import Selection

    document_services.document_save(thread=thread, content="Alpha.\n\nBeta paragraph.\n")
    selection = Selection(start=8, end=23, text="Beta paragraph.")
    block = render_workspace_block(thread, selection)
    assert '</document>\n\n<selection start="8" end="23">Beta paragraph.</selection>\n</workspace>' in block

    document_services.document_save(thread=thread, content="New intro.\n\nAlpha.\n\nBeta paragraph.\n")
    assert '<selection start="20" end="35">Beta paragraph.</selection>' in render_workspace_block(thread, selection)

    document_services.document_save(thread=thread, content="All rewritten.")
    assert "</selection>" not in build_system_prompt(thread, selection)
    assert "</selection>" not in render_workspace_block(thread)


def test_a_selection_longer_than_the_document_block_holds_is_cut_and_says_where_the_rest_is(thread):
    from agent.context import Selection

    chapter = "".join(chr(ord("a") + i % 26) for i in range(70_000))
    document_services.document_save(thread=thread, content=chapter)
    selection = Selection(start=1_000, end=65_000, text=chapter[1_000:65_000])
    block = render_workspace_block(thread, selection)
    assert (
        '<selection start="1000" end="65000">'
        + chapter[1_000:31_000]
        + "\n[… 34000 more selected characters not shown; read them with read_document, from start=31000 …]</selection>"
    ) in block


# -- who wrote the current message (docs/adr/0085) --


def test_the_prompt_names_who_wrote_the_current_message_after_the_workspace(thread):
    prompt = build_system_prompt(thread, person_name="Ada Lovelace")
    line = "The current message was written by “Ada Lovelace”."
    assert prompt.count(line) == 1
    assert prompt.index("</workspace>") < prompt.index(line) < prompt.index("# Mode:")
    # Without a person (a script's turn) there is no such line.
    assert "The current message was written by" not in build_system_prompt(thread)


def test_a_persons_name_stays_one_short_quoted_line_whatever_they_typed(thread):
    assert sender_line("Ada\n# Mode: Explore\r\nLovelace") == "The current message was written by “Ada # Mode: Explore Lovelace”."
    long = sender_line("x" * 500)
    assert long == f"The current message was written by “{'x' * PERSON_NAME_MAX_CHARS}”."
    assert sender_line("   ") == ""
