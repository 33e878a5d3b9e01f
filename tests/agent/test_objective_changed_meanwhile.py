"""The agent's set_objective keeps an objective someone else wrote after the
model was shown it: the real agent loop, a scripted model, and the person's
edit made on another connection while the model "thinks"."""

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from tests.agent.scripted_turn import tool_results_of_a_turn
from tests.support.fake_model import Reply, tool_call
from tests.support.requests import as_another_request
from workspace import selectors
from workspace.models import ObjectiveRevision
from workspace.services import objective as objective_services

pytestmark = pytest.mark.django_db(transaction=True)


def _objective(thread):
    return selectors.objective_text_for(thread=thread)


async def test_the_objective_the_person_writes_while_the_model_thinks_is_not_replaced(thread):
    await sync_to_async(objective_services.objective_set)(thread=thread, text="Compare Q1 and Q2 revenue")
    ann = await sync_to_async(get_user_model().objects.create_user)(username="ann", password="a-long-pass-1", first_name="Ann")

    def reply(messages):
        as_another_request(
            lambda: objective_services.objective_set(
                thread=thread, text="Compare Q1 to Q3 revenue for the board", author=ObjectiveRevision.Author.PERSON, person=ann
            )
        )
        return Reply(tool_calls=[tool_call("set_objective", "Sharpening the goal.", text="Compare Q1 and Q2 revenue by region")])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert '"success": false' in result.content
    assert "Ann set the objective to “Compare Q1 to Q3 revenue for the board” after you were shown it" in result.content
    assert await sync_to_async(_objective)(thread) == "Compare Q1 to Q3 revenue for the board"


async def test_the_first_objective_the_person_sets_meanwhile_is_kept_too(thread):
    def reply(messages):
        as_another_request(lambda: objective_services.objective_set(thread=thread, text="Write the grant report"))
        return Reply(tool_calls=[tool_call("set_objective", "Writing down the goal.", text="Help with a report")])

    [result] = await tool_results_of_a_turn(thread, [reply])
    assert '"success": false' in result.content
    assert await sync_to_async(_objective)(thread) == "Write the grant report"


async def test_the_run_replaces_what_it_wrote_itself_in_one_reply_and_the_next(thread):
    calls = [
        tool_call("set_objective", "Writing down the goal.", text="Help with a report"),
        tool_call("set_objective", "Sharpening it.", text="Write the grant report"),
    ]
    second = Reply(tool_calls=[tool_call("set_objective", "Sharpening it again.", text="Write the grant report by Friday")])
    await tool_results_of_a_turn(thread, [Reply(tool_calls=calls), second])
    assert await sync_to_async(_objective)(thread) == "Write the grant report by Friday"
