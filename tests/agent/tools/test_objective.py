"""agent.tools.objective: set_objective, envelope and database effect."""

import pytest

from tests.agent.tools.helpers import call, db
from workspace import selectors

pytestmark = pytest.mark.django_db(transaction=True)


async def test_set_objective_stores_the_text(thread):
    result = await call(thread, "set_objective", text="Write a 2-page review of CRISPR delivery methods")
    assert result["success"] is True
    assert await db(selectors.objective_text_for, thread=thread) == "Write a 2-page review of CRISPR delivery methods"


async def test_set_objective_is_recorded_as_the_agents_change(thread):
    await call(thread, "set_objective", text="Compare two drafts")
    history = await db(selectors.objective_history, thread=thread)
    assert [(e.text, e.author) for e in history] == [("Compare two drafts", "agent"), (None, None)]


async def test_set_objective_empty_fails_and_keeps_standing_objective(thread):
    result = await call(thread, "set_objective", text="")
    assert result == {"success": False, "error": "Objective cannot be empty."}
    assert await db(selectors.objective_text_for, thread=thread) is None
