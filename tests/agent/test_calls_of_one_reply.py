"""Several tool calls of one model reply touching the same row or passage:
the real compiled agent with a scripted model (tests/agent/scripted_turn.py),
nobody but the agent writing.

A model batches its calls: it renames a preference in one call and makes it
hard in the next, ticks a step and then drops it. Each call of the reply was
written from the same workspace block; the agent's own earlier call of the
reply is not someone else's change, so it must neither block the later call
nor be reported as the person's."""

import asyncio
import json
from types import SimpleNamespace

import pytest
from asgiref.sync import sync_to_async
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphInterrupt

from agent.builder import build_agent
from agent.context import AgentContext
from agent.middleware import CallOrderMiddleware
from tests.agent.scripted_turn import document_stored, envelopes_of, preferences_stored, steps_stored, tool_results_of_a_turn
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call
from tests.support.requests import as_another_request
from workspace import selectors
from workspace.models import DocumentRevision, PlanChange, Preference, Todo
from workspace.services import document as document_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

pytestmark = pytest.mark.django_db(transaction=True)


async def _a_soft_spelling_rule(thread):
    await sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": "British spelling", "kind": "soft"}], respect_lock=True
    )


async def _collect_and_draft(thread):
    await sync_to_async(plan_services.todos_add_outline)(thread=thread, steps=[{"text": "Collect"}, {"text": "Draft"}])


# --- the agent's own edit of a row is not someone else's ----------------------------


async def test_a_preference_renamed_and_made_hard_by_two_calls_of_one_reply_gets_both(thread):
    """Reply: update_preferences #1 title, then update_preferences #1 kind.
    The second call compares the row with what the model was shown; the
    first call's rename is the agent's own, so the kind change lands too
    (it was refused as "edited after you were shown it")."""
    await _a_soft_spelling_rule(thread)
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "update_preferences", "Rewording the spelling rule.", updates=[{"index": 1, "title": "British English"}]
                    ),
                    tool_call("update_preferences", "Making the spelling rule strict.", updates=[{"index": 1, "kind": "hard"}]),
                ]
            )
        ],
    )
    envelopes = envelopes_of(results)
    assert await preferences_stored(thread) == [("British English", "", "hard")], envelopes
    assert all(e["success"] and not e.get("skipped") for e in envelopes), envelopes


async def test_a_preference_renamed_and_made_hard_by_two_entries_of_one_call_gets_both(thread):
    """One update_preferences call, updates=[{#1 title}, {#1 kind}]: the
    batch's first entry does not block its second."""
    await _a_soft_spelling_rule(thread)
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "update_preferences",
                        "Rewording the spelling rule and making it strict.",
                        updates=[{"index": 1, "title": "British English"}, {"index": 1, "kind": "hard"}],
                    )
                ]
            )
        ],
    )
    [envelope] = envelopes_of(results)
    assert await preferences_stored(thread) == [("British English", "", "hard")], envelope
    assert envelope["success"] and not envelope.get("skipped"), envelope


async def test_a_step_renamed_and_ticked_then_dropped_by_three_calls_of_one_reply_is_dropped(thread):
    """Reply: update_todos #2, toggle_todos #2, remove_todos #2. The rename
    and the tick land; the removal compares the step's text and mark with
    what the model was shown, and both changes are the agent's own, so the
    step goes (it was kept as "changed after you were shown it")."""
    await _collect_and_draft(thread)
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "update_todos", "Naming the draft step better.", updates=[{"index": 2, "text": "Draft the report"}]
                    ),
                    tool_call("toggle_todos", "Ticking off the draft.", indices=[2]),
                    tool_call("remove_todos", "Dropping the finished draft step.", indices=[2]),
                ]
            )
        ],
    )
    envelopes = envelopes_of(results)
    assert all(e["success"] and not e.get("skipped") for e in envelopes), envelopes
    assert await steps_stored(thread) == [("Collect", False, 0)], envelopes


async def test_a_step_rewritten_by_two_entries_of_one_call_gets_the_last_text(thread):
    """One update_todos call rewriting step #2 twice (a model correcting
    itself within the batch): the second entry is written over the first,
    not refused as "rewritten after you were shown it"."""
    await _collect_and_draft(thread)
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "update_todos",
                        "Naming the draft step better.",
                        updates=[{"index": 2, "text": "Draft it"}, {"index": 2, "text": "Draft the report"}],
                    )
                ]
            )
        ],
    )
    [envelope] = envelopes_of(results)
    assert envelope["success"] and not envelope.get("skipped"), envelope
    assert await steps_stored(thread) == [("Collect", False, 0), ("Draft the report", False, 0)]


async def test_a_step_the_person_rewrote_meanwhile_still_keeps_their_text(thread):
    """The counterpart (a pin, passing before the fix too): what the
    agent's own calls wrote counts as seen, not what the person wrote. The person renames step #2 while the model
    writes its reply (ticking #1, renaming #2): the tick lands, the
    rename is refused and the person's text stays."""
    await _collect_and_draft(thread)

    def person_renames():
        step = Todo.objects.get(thread=thread, text="Draft")
        plan_services.todo_update_text(todo=step, text="Draft (the person's)", author=DocumentRevision.Author.PERSON)

    def reply(messages):
        # After the prompt was built: the model was shown "Draft".
        as_another_request(person_renames)
        return Reply(
            tool_calls=[
                tool_call("toggle_todos", "Ticking off collecting.", indices=[1]),
                tool_call("update_todos", "Naming the draft step better.", updates=[{"index": 2, "text": "Draft the report"}]),
            ]
        )

    results = await tool_results_of_a_turn(thread, [reply])
    ticked, renamed = envelopes_of(results)
    assert ticked["success"] and not ticked.get("skipped"), ticked
    assert "rewritten after you were shown it" in json.dumps(renamed), renamed
    assert await steps_stored(thread) == [("Collect", True, 0), ("Draft (the person's)", False, 0)]


# --- the person's edit of a step the reply edits twice stays ------------------------
# What a call records as the run's own is only the field it wrote: a tick
# checks and writes the mark, a rename the text; the other field is
# recorded as the model was shown it, so the person's change of it
# meanwhile is still found by the reply's next call of the step.


def _person_renames_draft(thread):
    step = Todo.objects.get(thread=thread, text="Draft")
    plan_services.todo_update_text(todo=step, text="Draft (the person's)", author=DocumentRevision.Author.PERSON)


def _person_ticks_draft(thread):
    plan_services.todos_toggle_by_index(thread=thread, indices=[2], author=DocumentRevision.Author.PERSON)
    assert Todo.objects.get(thread=thread, text="Draft").done


async def test_a_tick_then_a_rename_of_a_step_the_person_renamed_meanwhile_keeps_the_persons_text(thread):
    """The model is shown "Draft"; while it writes, the person renames
    step #2. The reply ticks #2, then renames it: the tick lands (it checks
    the mark only) and must not record the person's text as the run's own,
    so the rename is refused and the person's text stays, as when the
    rename comes alone (the test above)."""
    await _collect_and_draft(thread)

    def reply(messages):
        as_another_request(lambda: _person_renames_draft(thread))
        return Reply(
            tool_calls=[
                tool_call("toggle_todos", "Ticking off the draft.", indices=[2]),
                tool_call("update_todos", "Naming the draft step better.", updates=[{"index": 2, "text": "Draft the report"}]),
            ]
        )

    results = await tool_results_of_a_turn(thread, [reply])
    ticked, renamed = envelopes_of(results)
    assert await steps_stored(thread) == [("Collect", False, 0), ("Draft (the person's)", True, 0)], (ticked, renamed)
    assert "rewritten after you were shown it" in json.dumps(renamed), renamed


async def test_a_tick_then_a_removal_of_a_step_the_person_renamed_meanwhile_keeps_the_step(thread):
    """As above, the person renames step #2 while the model writes; the
    reply ticks #2, then removes it (no sub-steps: nothing asked). The
    removal is refused and the person's renamed step stays."""
    await _collect_and_draft(thread)

    def reply(messages):
        as_another_request(lambda: _person_renames_draft(thread))
        return Reply(
            tool_calls=[
                tool_call("toggle_todos", "Ticking off the draft.", indices=[2]),
                tool_call("remove_todos", "Dropping the finished draft step.", indices=[2]),
            ]
        )

    results = await tool_results_of_a_turn(thread, [reply])
    ticked, removed = envelopes_of(results)
    assert [s[0] for s in await steps_stored(thread)] == ["Collect", "Draft (the person's)"], (ticked, removed)


async def test_a_rename_then_a_tick_of_a_step_the_person_ticked_meanwhile_leaves_the_persons_tick(thread):
    """The model is shown "Draft" not done; while it writes, the person
    ticks step #2. The reply renames #2, then toggles it (meaning: tick it).
    The rename lands (it checks the text only) and must not record the
    person's tick as the run's own, so the toggle leaves the step ticked
    and says it already was: the agent never unticks a step the person
    ticked (docs/adr/0115)."""
    await _collect_and_draft(thread)

    def reply(messages):
        as_another_request(lambda: _person_ticks_draft(thread))
        return Reply(
            tool_calls=[
                tool_call("update_todos", "Naming the draft step better.", updates=[{"index": 2, "text": "Draft the report"}]),
                tool_call("toggle_todos", "Ticking off the draft.", indices=[2]),
            ]
        )

    results = await tool_results_of_a_turn(thread, [reply])
    renamed, ticked = envelopes_of(results)
    assert await steps_stored(thread) == [("Collect", False, 0), ("Draft the report", True, 0)], (renamed, ticked)


async def test_the_persons_preference_edit_meanwhile_survives_two_edits_of_one_reply(thread):
    """A pin (passing before the fix too): a preference's edit is refused
    when any of its title, subtitle or kind changed since it was shown, so
    what an edit records (the row as it is after it) holds no one else's
    change. The person rewrites #1's subtitle while the model writes; the
    reply rewords #1, then makes it hard: both are refused, the person's
    subtitle stays."""
    await sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": "British spelling", "kind": "soft"}], respect_lock=True
    )

    def person_edits():
        preference_services.preferences_update_by_index(
            thread=thread, updates=[{"index": 1, "subtitle": "colour, not color"}], respect_lock=True
        )

    def reply(messages):
        as_another_request(person_edits)
        return Reply(
            tool_calls=[
                tool_call("update_preferences", "Rewording.", updates=[{"index": 1, "title": "British English"}]),
                tool_call("update_preferences", "Hardening.", updates=[{"index": 1, "kind": "hard"}]),
            ]
        )

    await tool_results_of_a_turn(thread, [reply])
    rows = await sync_to_async(lambda: list(Preference.objects.filter(thread=thread).values_list("title", "subtitle", "kind")))()
    assert rows == [("British spelling", "colour, not color", "soft")]


# --- an overlap with the agent's own edit is said to be its own ----------------------


async def test_two_conflicting_passage_edits_of_one_reply_say_the_overlap_is_the_agents_own(thread):
    """Reply: replace_in_document "alpha beta" -> "ALPHA BETA", then
    "beta gamma" -> "b. gamma". Both change "beta", differently; nobody else
    writes. The first lands; the second is refused with nothing written,
    and the model is told it overlapped its own other edit, not that "the
    person edited the same passages" (which it would pass on to a person who
    typed nothing)."""
    await sync_to_async(document_services.document_save)(
        thread=thread, title="Notes", content="alpha beta gamma delta", author=DocumentRevision.Author.PERSON
    )
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call("replace_in_document", "Capitalising two words.", old_text="alpha beta", new_text="ALPHA BETA"),
                    tool_call("replace_in_document", "Abbreviating.", old_text="beta gamma", new_text="b. gamma"),
                ]
            )
        ],
    )
    first, second = envelopes_of(results)
    assert first["success"] is True
    assert (await document_stored(thread)) == ("ALPHA BETA gamma delta", 2)
    assert second["success"] is False
    assert "your own other edits of this step" in second["error"], second["error"]
    assert "person" not in second["error"], second["error"]


async def test_a_passage_edit_overlapping_the_persons_edit_still_says_it_is_theirs(thread):
    """The counterpart (a pin, passing before the fix too): the person
    rewrites "beta" while the model writes its reply; its edit of "beta"
    is refused as overlapping the person's edit."""
    await sync_to_async(document_services.document_save)(
        thread=thread, title="Notes", content="alpha beta gamma delta", author=DocumentRevision.Author.PERSON
    )

    def person_types():
        document_services.document_save(
            thread=thread, content="alpha BETA! gamma delta", base_version=1, author=DocumentRevision.Author.PERSON
        )

    def reply(messages):
        as_another_request(person_types)
        return Reply(tool_calls=[tool_call("replace_in_document", "Abbreviating.", old_text="beta gamma", new_text="b. gamma")])

    [refused] = envelopes_of(await tool_results_of_a_turn(thread, [reply]))
    assert refused["success"] is False and "the person edited the same passages" in refused["error"], refused
    assert (await document_stored(thread)) == ("alpha BETA! gamma delta", 2)


# --- the calls of one reply run in the model's order ---------------------------------


async def test_a_step_dropped_then_renamed_in_one_reply_is_dropped_and_the_rename_refused(thread):
    """Reply: remove_todos #2, then update_todos #2 (the trace lists
    "Dropping…" before "Renaming…"). As the model wrote them: the step goes,
    and the rename is refused because step #2 was removed. Before, the
    removal's approval check awaited the database and the rename overtook
    it: the step the model dropped stayed, renamed."""
    await _collect_and_draft(thread)
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call("remove_todos", "Dropping the draft step.", indices=[2]),
                    tool_call("update_todos", "Renaming the draft step.", updates=[{"index": 2, "text": "Draft v2"}]),
                ]
            )
        ],
    )
    removed, renamed = envelopes_of(results)
    assert await steps_stored(thread) == [("Collect", False, 0)], (removed, renamed)
    assert removed["success"] is True and not removed.get("skipped"), removed
    assert renamed["success"] is False and "removed since" in renamed["error"], renamed


async def test_a_rewrite_then_an_append_in_one_reply_are_versions_in_that_order(thread):
    """Reply: update_document (the new draft), then append_to_document (its
    conclusion). The rewrite is version 2 and replaces the text cleanly;
    the append is version 3. Before, the append overtook the rewrite's
    approval check, and the rewrite was told it was "merged with the
    person's concurrent edits", though nobody else wrote."""
    await sync_to_async(document_services.document_save)(
        thread=thread, title="Report", content="Old notes.", author=DocumentRevision.Author.PERSON
    )
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call("update_document", "Writing the draft.", content="# Report\n\nOld notes, now an introduction."),
                    tool_call("append_to_document", "Adding the conclusion.", text="## Conclusion\n\nIt holds."),
                ]
            )
        ],
    )
    rewrite, append = envelopes_of(results)
    assert "version 2" in rewrite["summary"] and "merged" not in rewrite["summary"], rewrite
    assert append["success"] is True, append
    assert await document_stored(thread) == ("# Report\n\nOld notes, now an introduction.\n\n## Conclusion\n\nIt holds.", 3)


async def test_many_calls_of_one_reply_reach_the_plan_history_in_the_models_order(thread):
    """Six calls alternating a removal (which the approval check looks at
    in the database first) and a rename (which it does not): the plan's
    history lists them in the order of the reply."""
    await sync_to_async(plan_services.todos_add_outline)(thread=thread, steps=[{"text": f"S{i}"} for i in range(1, 7)])
    calls = []
    for i in (6, 4, 2):
        calls.append(tool_call("remove_todos", f"Dropping S{i}.", indices=[i]))
        calls.append(tool_call("update_todos", f"Renaming S{i - 1}.", updates=[{"index": i - 1, "text": f"S{i - 1}'"}]))
    results = await tool_results_of_a_turn(thread, [Reply(tool_calls=calls)])
    assert all(e["success"] and not e.get("skipped") for e in envelopes_of(results)), envelopes_of(results)
    history = await sync_to_async(
        lambda: list(PlanChange.objects.filter(thread=thread).order_by("pk").values_list("summary", flat=True))
    )()
    assert history[1:] == [
        "Removed “S6”",
        "Renamed “S5” to “S5'”",
        "Removed “S4”",
        "Renamed “S3” to “S3'”",
        "Removed “S2”",
        "Renamed “S1” to “S1'”",
    ], history
    assert await steps_stored(thread) == [("S1'", False, 0), ("S3'", False, 0), ("S5'", False, 0)]


async def test_a_rewrite_merged_with_the_agents_own_append_of_the_same_reply_says_so(thread):
    """Reply: append_to_document, then update_document written from the
    version the model was shown. The rewrite is merged with the append
    that came first, and the model is told that was its own other edit,
    not "the person's concurrent edits", as the targeted edits already say."""
    await sync_to_async(document_services.document_save)(
        thread=thread, title="Report", content="Old notes.", author=DocumentRevision.Author.PERSON
    )
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call("append_to_document", "Adding the conclusion.", text="## Conclusion\n\nIt holds."),
                    tool_call("update_document", "Writing the draft.", content="# Report\n\nOld notes, now an introduction."),
                ]
            )
        ],
    )
    append, rewrite = envelopes_of(results)
    assert append["success"] is True and rewrite["success"] is True, (append, rewrite)
    assert "merged with your own other edits of this step" in rewrite["summary"], rewrite
    assert "person" not in rewrite["summary"], rewrite
    assert await document_stored(thread) == ("# Report\n\nOld notes, now an introduction.\n\n## Conclusion\n\nIt holds.", 3)


async def test_sixty_calls_mixing_removals_and_edits_of_the_same_rows_run_once_each_in_order(thread):
    """20 steps; one reply of 60 calls: for steps 20, 19, ... 1 (from the
    end, so the indices as shown stay valid) rename #i, tick #i and, for
    even i, remove #i; then rename the odd ones again. Every call succeeds
    once, the plan history lists them in the reply's order, and the odd
    steps are left renamed twice and ticked."""
    await sync_to_async(plan_services.todos_add_outline)(thread=thread, steps=[{"text": f"S{i}"} for i in range(1, 21)])
    calls, expected = [], []
    for i in range(20, 0, -1):
        calls.append(tool_call("update_todos", f"Renaming S{i}.", updates=[{"index": i, "text": f"S{i}'"}]))
        expected.append(f"Renamed “S{i}” to “S{i}'”")
        calls.append(tool_call("toggle_todos", f"Ticking S{i}.", indices=[i]))
        expected.append(f"Ticked “S{i}'”")
        if i % 2 == 0:
            calls.append(tool_call("remove_todos", f"Dropping S{i}.", indices=[i]))
            expected.append(f"Removed “S{i}'”")
    assert len(calls) == 50
    # 10 more: rename the odd ones a second time, in order.
    for i in range(19, 0, -2):
        calls.append(tool_call("update_todos", f"Renaming S{i} again.", updates=[{"index": i, "text": f"S{i}''"}]))
        expected.append(f"Renamed “S{i}'” to “S{i}''”")
    results = await tool_results_of_a_turn(thread, [Reply(tool_calls=calls)])
    envelopes = envelopes_of(results)
    assert len(envelopes) == 60
    assert all(e["success"] and not e.get("skipped") for e in envelopes), [
        e for e in envelopes if not e["success"] or e.get("skipped")
    ][:3]
    history = await sync_to_async(
        lambda: list(PlanChange.objects.filter(thread=thread).order_by("pk").values_list("summary", flat=True))
    )()
    assert history[1:] == expected
    assert await steps_stored(thread) == [(f"S{i}''", True, 0) for i in range(1, 21, 2)]


async def test_a_call_that_fails_in_the_middle_of_a_reply_does_not_stop_or_reorder_the_rest(thread):
    """A reply renames #1, calls with an index out of range, calls an
    unknown tool, renames #2: four results in order, the two
    bad ones failed, both renames landed, in order in the history."""
    await _collect_and_draft(thread)
    results = await tool_results_of_a_turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call("update_todos", "Renaming 1.", updates=[{"index": 1, "text": "Collect all"}]),
                    tool_call("remove_todos", "Dropping 99.", indices=[99]),
                    tool_call("no_such_tool", "Doing magic."),
                    tool_call("update_todos", "Renaming 2.", updates=[{"index": 2, "text": "Draft it"}]),
                ]
            )
        ],
    )
    assert len(results) == 4
    history = await sync_to_async(
        lambda: list(PlanChange.objects.filter(thread=thread).order_by("pk").values_list("summary", flat=True))
    )()
    assert history[1:] == ["Renamed “Collect” to “Collect all”", "Renamed “Draft” to “Draft it”"]
    assert [s[0] for s in await steps_stored(thread)] == ["Collect all", "Draft it"]


@pytest.mark.parametrize("mode", ["explore", "plan"])
async def test_calls_not_allowed_in_the_mode_are_refused_in_place_and_the_others_run_in_order(thread, mode):
    """In Explore or Plan mode one reply: update_todos #1, append_to_document,
    update_todos #2. The results come in the reply's order; the document untouched in
    both modes; in Plan the two renames land in order, in Explore nothing is written."""
    await _collect_and_draft(thread)
    model = ScriptedChatModel(
        script=[
            Reply(
                tool_calls=[
                    tool_call("update_todos", "Renaming 1.", updates=[{"index": 1, "text": "Collect all"}]),
                    tool_call("append_to_document", "Adding a note.", text="A note."),
                    tool_call("update_todos", "Renaming 2.", updates=[{"index": 2, "text": "Draft it"}]),
                ]
            ),
            Reply(text="Done."),
        ]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    await agent.ainvoke(
        {"messages": [HumanMessage("Go on")]},
        {"configurable": {"thread_id": str(thread.pk)}},
        context=AgentContext(thread=thread, turn_index=1, mode=mode),
    )
    results = [m for m in model.requests[-1] if isinstance(m, ToolMessage)]
    assert [r.name for r in results] == ["update_todos", "append_to_document", "update_todos"]
    document = await sync_to_async(selectors.document_for)(thread=thread)
    assert document is None or "A note." not in (document.content or "")
    history = await sync_to_async(
        lambda: list(PlanChange.objects.filter(thread=thread).order_by("pk").values_list("summary", flat=True))
    )()
    if mode == "plan":
        assert history[1:] == ["Renamed “Collect” to “Collect all”", "Renamed “Draft” to “Draft it”"]
    else:
        assert history[1:] == []


# --- the gate never holds up a call for one that ended ------------------------------


def _call(context):
    return SimpleNamespace(runtime=SimpleNamespace(context=context), tool_call={"id": "call"})


async def _queued(context, *handlers):
    """Start one call per handler through the gate, in order, each queued
    behind the one before."""
    gate = CallOrderMiddleware()
    tasks = []
    for handler in handlers:
        tasks.append(asyncio.create_task(gate.awrap_tool_call(_call(context), handler)))
        await asyncio.sleep(0)
    return tasks


async def test_a_call_stopped_while_it_runs_or_waits_does_not_hold_up_the_calls_after_it(thread):
    """The Stop button cancels a reply's calls: the one running, and one
    waiting its turn. A call queued after them still runs (the gate is let
    go, and the cancelled waiter leaves the queue)."""
    context = AgentContext(thread=thread)
    started = asyncio.Event()

    async def slow(request):
        started.set()
        await asyncio.sleep(3600)

    async def quick(request):
        return "ran"

    running, waiting, after = await _queued(context, slow, quick, quick)
    await started.wait()
    running.cancel()
    waiting.cancel()
    assert await asyncio.wait_for(after, timeout=5) == "ran"
    assert waiting.cancelled() and not context.calls.locked()


async def test_a_call_that_pauses_for_approval_or_fails_lets_the_next_call_run(thread):
    """An approval's interrupt, or an error, ends the call holding the
    gate: the next call of the reply runs."""
    context = AgentContext(thread=thread)

    async def asks(request):
        raise GraphInterrupt(())

    async def fails(request):
        raise RuntimeError("boom")

    async def quick(request):
        return "ran"

    paused, failed, after = await _queued(context, asks, fails, quick)
    assert await asyncio.wait_for(after, timeout=5) == "ran"
    with pytest.raises(GraphInterrupt):
        await paused
    with pytest.raises(RuntimeError):
        await failed
    assert not context.calls.locked()
