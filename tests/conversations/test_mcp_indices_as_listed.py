"""An MCP client's #N names the row it was last listed at #N (docs/adr/0117).

The owner works in the browser (the services the page's views call) while
their MCP client (the real `call_tool` entry point) acts on the plan and
the preferences by the indices its latest listing gave it."""

import json

import pytest

from conversations.mcp_server import THREAD_FIELD, call_tool
from conversations.tokens import token_create
from workspace.models import Preference, Todo
from workspace.services import objective as objective_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)

WHY = "Doing what my user asked."


@pytest.fixture
def token(owner):
    return token_create(user=owner, name="Desk client")[0]


def _call(token, thread, name, **arguments):
    result = call_tool(token, name, {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, **arguments})
    return json.loads(result.text) if name != "get_workspace" else result.text


def _plan(thread) -> list[tuple[str, bool]]:
    return [(t.text, t.done) for t in Todo.objects.filter(thread=thread).order_by("position")]


def _three_steps(thread):
    plan_services.todos_add_outline(
        thread=thread,
        steps=[{"text": "Outline", "depth": 0}, {"text": "Draft", "depth": 0}, {"text": "Cite sources", "depth": 0}],
    )


def _first_step_added_in_the_browser(thread, text):
    """Added, then dragged to the top, as the plan panel does."""
    step = plan_services.todo_add(thread=thread, text=text)
    plan_services.todo_place(todo=step, before=Todo.objects.filter(thread=thread).order_by("position").first())


def test_a_step_the_owner_adds_above_does_not_turn_the_clients_tick_onto_another_step(thread, token):
    _three_steps(thread)
    assert "#3 3 [ ] Cite sources" in _call(token, thread, "get_workspace")
    # In the browser, meanwhile: a new first step.
    _first_step_added_in_the_browser(thread, "Gather notes")

    answer = _call(token, thread, "toggle_todos", indices=[3])

    assert answer["success"], answer
    assert _plan(thread) == [("Gather notes", False), ("Outline", False), ("Draft", False), ("Cite sources", True)]
    # The client is told, and given the plan as its next indices count it.
    assert "#1 1 [ ] Gather notes" in answer["listed_now"]
    assert "#4 4 [x] Cite sources" in answer["listed_now"]
    answer = _call(token, thread, "toggle_todos", indices=[4])
    assert _plan(thread)[3] == ("Cite sources", False)
    assert "listed_now" not in answer


def test_a_step_the_owner_removed_is_not_replaced_by_the_next_one(thread, token):
    _three_steps(thread)
    _call(token, thread, "list_todos")
    plan_services.todo_delete(todo=Todo.objects.get(thread=thread, text="Draft"))

    answer = _call(token, thread, "remove_todos", indices=[2])

    assert not answer["success"]
    assert "removed since" in answer["error"]
    assert _plan(thread) == [("Outline", False), ("Cite sources", False)]
    assert "#2 2 [ ] Cite sources" in answer["listed_now"]


def test_a_step_the_owner_ticked_meanwhile_is_not_unticked_by_the_clients_tick(thread, token):
    _three_steps(thread)
    _call(token, thread, "get_workspace")
    plan_services.todo_set_done(todo=Todo.objects.get(thread=thread, text="Draft"), done=True)

    answer = _call(token, thread, "toggle_todos", indices=[2])

    assert _plan(thread)[1] == ("Draft", True)
    assert "already marked done" in json.dumps(answer)


def test_the_clients_own_changes_keep_its_numbering_so_a_second_call_is_not_refused(thread, token):
    """After its own tick, its own untick runs: what it changed itself is
    not someone else's change since its listing."""
    _three_steps(thread)
    _call(token, thread, "get_workspace")

    _call(token, thread, "toggle_todos", indices=[2])
    _call(token, thread, "add_todos", steps=[{"text": "Check quotes", "depth": 0}], parent_index=2)
    answer = _call(token, thread, "toggle_todos", indices=[2, 3])

    assert answer["success"] and "listed_now" not in answer, answer
    assert _plan(thread) == [("Outline", False), ("Draft", False), ("Check quotes", True), ("Cite sources", False)]


def test_a_preference_the_owner_adds_first_does_not_turn_the_clients_removal_onto_another(thread, token):
    for title in ("Short sentences", "British English"):
        preference_services.preference_add(thread=thread, title=title, kind="soft", respect_lock=False)
    assert "#2 [soft] British English" in _call(token, thread, "list_preferences")["summary"]
    # A hard preference goes before the soft ones: "British English" is now #3.
    preference_services.preference_add(thread=thread, title="Cite every figure", kind="hard", respect_lock=False)

    answer = _call(token, thread, "remove_preferences", indices=[2])

    assert answer["success"], answer
    assert sorted(Preference.objects.filter(thread=thread).values_list("title", flat=True)) == [
        "Cite every figure",
        "Short sentences",
    ]
    assert "#1 [hard] Cite every figure" in answer["listed_now"]


def test_an_objective_the_owner_wrote_after_the_clients_listing_stays(thread, token, owner):
    objective_services.objective_set(thread=thread, text="A short essay", author="person", person=owner)
    _call(token, thread, "get_workspace")
    objective_services.objective_set(thread=thread, text="A 2 000-word essay for the journal", author="person", person=owner)

    refused = _call(token, thread, "set_objective", text="A short essay on tides")

    assert not refused["success"] and "A 2 000-word essay for the journal" in refused["error"]
    assert thread.objective.__class__.objects.get(thread=thread).text == "A 2 000-word essay for the journal"
    # Told what it is now, the client may write over it knowingly.
    assert _call(token, thread, "set_objective", text="A 2 000-word essay on tides")["success"]


def test_a_client_that_never_listed_counts_in_the_rows_as_they_are(thread, token):
    _three_steps(thread)
    _first_step_added_in_the_browser(thread, "Gather notes")

    answer = _call(token, thread, "toggle_todos", indices=[1])

    assert answer["success"] and "listed_now" not in answer
    assert _plan(thread)[0] == ("Gather notes", True)


def test_one_tokens_listing_does_not_number_another_tokens_calls(thread, token, owner):
    other = token_create(user=owner, name="Phone client")[0]
    _three_steps(thread)
    _call(other, thread, "get_workspace")
    _first_step_added_in_the_browser(thread, "Gather notes")

    _call(token, thread, "toggle_todos", indices=[3])

    assert _plan(thread)[2] == ("Draft", True)


def test_every_call_named_as_listing_or_writing_by_index_is_a_tool_a_client_has():
    from conversations.mcp_server import PART_LISTED, PART_WRITTEN, mcp_tools

    names = {tool.name for tool in mcp_tools()}
    assert set(PART_LISTED) | set(PART_WRITTEN) <= names
