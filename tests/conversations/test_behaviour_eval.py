"""The behaviour eval's scoring (conversations.behaviour_eval): every rule
passes for a scripted model that follows the system prompt and fails for
one that does not, run through the real turn machinery on a throwaway
thread that is removed afterwards."""

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model

from agent.builder import AgentProvider
from agent.seeding import has_history
from conversations import behaviour_eval
from conversations.behaviour_eval import (
    EVAL_USER_PREFIX,
    FAIL,
    NOT_APPLICABLE,
    PASS,
    SCENARIOS,
    approval_for_destructive,
    opens_with_a_summary_sentence,
    report,
    run_scenario,
    score,
)
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call
from workspace.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)

SCENARIO = {scenario.name: scenario for scenario in SCENARIOS}
STEPS = [{"text": "What it is", "depth": 0}, {"text": "How to start", "depth": 0}, {"text": "Common mistakes", "depth": 0}]


async def _run(name, *script, keep=False):
    model = ScriptedChatModel(script=list(script))
    run = await run_scenario(
        SCENARIO[name], provider=AgentProvider(model_factory=lambda _name: model), model_name="scripted", keep=keep
    )
    assert not run.error, run.error
    return run, {label: verdict for label, verdict in score(run)}


async def test_a_model_following_the_plan_rules_passes_the_plan_scenario():
    run, verdicts = await _run(
        "plan",
        Reply(tool_calls=[tool_call("add_todos", "Laying out the guide's three sections as steps.", steps=STEPS)]),
        Reply(tool_calls=[tool_call("append_to_document", "Writing the three sections.", text="## What it is\n\nRot.")]),
        Reply(tool_calls=[tool_call("toggle_todos", "Ticking off the finished sections.", indices=[1, 2, 3])]),
        Reply(text="I wrote the three-section composting guide and ticked every step.\n\nShall I add sources?"),
    )
    assert [t.status for t in run.turns] == ["complete"]
    assert verdicts["plan completion sweep"].status == PASS
    assert verdicts["no tool names in reasoning"].status == PASS
    assert verdicts["answer opens with a one-sentence summary"].status == PASS


async def test_open_steps_tool_names_and_a_list_answer_fail_the_plan_scenario():
    _, verdicts = await _run(
        "plan",
        Reply(tool_calls=[tool_call("add_todos", "Calling add_todos with the three sections.", steps=STEPS)]),
        Reply(tool_calls=[tool_call("toggle_todos", "Ticking the first step.", indices=[1])]),
        Reply(text="- wrote the guide\n- more later"),
    )
    assert str(verdicts["plan completion sweep"]) == "fail (2 of 3 steps left open)"
    assert str(verdicts["no tool names in reasoning"]) == "fail (names add_todos)"
    assert verdicts["answer opens with a one-sentence summary"].status == FAIL


async def test_an_explicit_preference_recorded_once_passes():
    _, verdicts = await _run(
        "explicit-preference",
        Reply(
            tool_calls=[
                tool_call("add_preferences", "Noting the academic tone.", items=[{"title": "Academic tone", "kind": "soft"}])
            ]
        ),
        Reply(text="I recorded your preference for an academic tone and wrote the paragraph."),
        Reply(text="I added the second paragraph; the academic tone is already a preference."),
    )
    assert verdicts["explicit preference recorded in its turn"].status == PASS
    assert verdicts["restated preference not duplicated"].status == PASS


async def test_a_preference_only_said_then_recorded_twice_fails():
    _, verdicts = await _run(
        "explicit-preference",
        Reply(text="Noted, I will keep it academic."),
        Reply(
            tool_calls=[tool_call("add_preferences", "Noting the tone.", items=[{"title": "Academic register", "kind": "soft"}])]
        ),
        Reply(
            tool_calls=[
                tool_call("add_preferences", "Noting the tone again.", items=[{"title": "Scholarly tone", "kind": "soft"}])
            ]
        ),
        Reply(text="I recorded the tone."),
    )
    assert str(verdicts["explicit preference recorded in its turn"]) == "fail (nothing recorded in turn 1)"
    assert verdicts["restated preference not duplicated"].status == FAIL


async def test_a_latent_preference_proposed_passes_and_recorded_unasked_fails():
    _, good = await _run(
        "latent-preference",
        Reply(text="I shortened the first paragraph."),
        Reply(text="I shortened the second paragraph. You seem to prefer short paragraphs; shall I add that as a preference?"),
    )
    _, bad = await _run(
        "latent-preference",
        Reply(text="I shortened the first paragraph."),
        Reply(
            tool_calls=[
                tool_call("add_preferences", "Keeping paragraphs short.", items=[{"title": "Short paragraphs", "kind": "soft"}])
            ]
        ),
        Reply(text="I shortened the second paragraph and will keep them short."),
    )
    label = "latent preference proposed, not recorded"
    assert good[label].status == PASS
    assert str(bad[label]) == "fail (1 recorded without asking)"


async def test_a_locked_preference_left_alone_passes_and_an_attempt_fails():
    _, good = await _run(
        "locked-preference",
        Reply(
            text="I left the spelling as it is, since American English is locked. Unlock it first if you want British spelling."
        ),
    )
    _, bad = await _run(
        "locked-preference",
        Reply(
            tool_calls=[
                tool_call(
                    "update_preferences", "Switching the spelling rule.", updates=[{"index": 1, "title": "British English"}]
                )
            ]
        ),
        Reply(text="I could not change the spelling rule."),
    )
    assert good["locked preferences untouched"].status == PASS
    assert str(bad["locked preferences untouched"]) == "fail (tried to edit a locked preference)"


async def test_the_approval_rule_passes_when_the_turn_waits_for_the_person():
    run, verdicts = await _run(
        "destructive",
        Reply(tool_calls=[tool_call("update_document", "Replacing the document as asked.", content="TBD")]),
        Reply(text="I replaced the document with TBD."),
    )
    assert [turn.status for turn in run.turns] == ["awaiting"]
    assert verdicts["approval asked for a destructive action"].status == PASS
    # The check is one function of a turn: a probe that cannot tell scores n/a.
    assert str(approval_for_destructive(lambda turn: None).check(run)) == "n/a (approvals not available)"
    assert str(approval_for_destructive(lambda turn: False).check(run)) == "fail (acted without asking)"


def test_a_summary_sentence_is_prose_that_ends_its_first_sentence():
    assert opens_with_a_summary_sentence("I drafted the introduction. More below.")
    assert opens_with_a_summary_sentence("Done!")
    assert not opens_with_a_summary_sentence("# Guide\n\nText.")
    assert not opens_with_a_summary_sentence("1. First")
    assert not opens_with_a_summary_sentence("I drafted the introduction and")
    assert not opens_with_a_summary_sentence("")


async def test_the_eval_user_and_thread_are_removed_unless_kept():
    def eval_threads():
        users = get_user_model().objects.filter(username__startswith=EVAL_USER_PREFIX)
        return list(Thread.objects.filter(owner__in=users).values_list("pk", flat=True))

    await _run("locked-preference", Reply(text="I left the spelling as it is."))
    assert await database_sync_to_async(eval_threads)() == []
    run, _ = await _run("locked-preference", Reply(text="I left the spelling as it is."), keep=True)
    (kept,) = await database_sync_to_async(eval_threads)()
    assert await database_sync_to_async(has_history)(kept)
    assert run.turns[0].answer == "I left the spelling as it is."


async def test_the_report_puts_two_models_side_by_side_with_totals():
    good, _ = await _run("locked-preference", Reply(text="I left the spelling as it is."))
    bad, _ = await _run(
        "locked-preference",
        Reply(tool_calls=[tool_call("remove_preferences", "Removing remove_preferences.", indices=[1])]),
        Reply(text="- nothing"),
    )
    text = report({"model-a": [good], "model-b": [bad]})
    lines = text.splitlines()
    assert lines[0].startswith("Scenario locked-preference:")
    assert lines[1].split() == ["criterion", "model-a", "model-b"]
    row = next(line for line in lines if line.startswith("locked preferences untouched"))
    assert "pass" in row and "fail (tried to edit a locked preference)" in row
    totals = lines[lines.index("Totals") :]
    assert totals[3].split() == ["model-a", "2", "0", "1", "2/2"]
    assert totals[4].split() == ["model-b", "0", "3", "0", "0/3"]


def test_unknown_scenarios_are_refused():
    with pytest.raises(ValueError, match="Unknown scenario nope"):
        behaviour_eval.scenarios_named(["nope"])
    assert [s.name for s in behaviour_eval.scenarios_named(None)] == [s.name for s in SCENARIOS]
    assert NOT_APPLICABLE == "n/a"


async def test_ticking_the_named_step_of_a_nested_plan_by_its_index_passes():
    # "Cross-check citations" is shown as "#4 2 [ ] Cross-check citations".
    _, verdicts = await _run(
        "nested-plan",
        Reply(tool_calls=[tool_call("toggle_todos", "Ticking off the citations check.", indices=[4])]),
        Reply(text="I ticked off the citations check in the plan."),
    )
    assert verdicts["only “Cross-check citations” ticked"].status == PASS


async def test_ticking_by_the_outline_number_fails_the_nested_plan_scenario():
    _, verdicts = await _run(
        "nested-plan",
        Reply(tool_calls=[tool_call("toggle_todos", "Ticking off the citations check.", indices=[2])]),
        Reply(text="I ticked off the citations check in the plan."),
    )
    assert str(verdicts["only “Cross-check citations” ticked"]) == "fail (“Cross-check citations” was not ticked)"
