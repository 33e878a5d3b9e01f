"""The static system prompt covers every part of core seed §3.1 and names every tool."""

import re

import pytest

from agent.prompt import SYSTEM_PROMPT
from agent.tools.registry import build_tools


def test_every_registered_tool_is_in_the_tool_guide():
    guide = SYSTEM_PROMPT.split("# Tool guide", 1)[1].split("\n# ", 1)[0]
    missing = [name for name in [tool.name for tool in build_tools()] if not re.search(rf"^- {name}:", guide, flags=re.M)]
    assert missing == []
    assert len([tool.name for tool in build_tools()]) == 16


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
    ],
)
def test_prompt_states_each_rule(rule):
    assert rule in SYSTEM_PROMPT


def test_static_prompt_has_no_workspace_content():
    # The workspace block is appended per call; the static text must not carry
    # one, or the cacheable prefix would differ between threads.
    assert "<objective>\n" not in SYSTEM_PROMPT
    assert "</workspace>" not in SYSTEM_PROMPT
