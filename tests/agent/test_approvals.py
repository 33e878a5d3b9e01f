"""agent.approvals: which calls ask first (the document threshold, plan steps
with sub-steps, preferences), and the pause and resume on a real compiled
agent and checkpointer (docs/adr/0017)."""

import pytest
from asgiref.sync import sync_to_async
from langchain_core.messages import HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent.approval_request import DETAILS_MAX, cut_text
from agent.approvals import (
    DOCUMENT,
    DOCUMENT_MIN_CHARS,
    DOCUMENT_REMOVED_SHARE,
    PLAN,
    PREFERENCES,
    WRITERS,
    _may_wait,
    _waited_for,
    approval_request,
    removed_share,
)
from agent.builder import build_agent
from agent.context import AgentContext, PausedCall, ResumedCall
from agent.steps import REASON_MAX_CHARS
from agent.tools.registry import tool_specs
from tests.support.fake_model import Reply, ScriptedChatModel, tool_call
from workspace import selectors
from workspace.models import DOCUMENT_TITLE_MAX_CHARS, DocumentRevision
from workspace.services import document as document_services
from workspace.services import plan as plan_services
from workspace.services import preferences as preference_services

PARAGRAPHS = [f"Paragraph {n}: " + "words about the topic " * 4 for n in range(1, 11)]
REPORT = "\n\n".join(PARAGRAPHS)


def _document(thread, content):
    return document_services.document_save(thread=thread, content=content, author=DocumentRevision.Author.PERSON)


def _ask(thread, name, **args):
    """The request as its JSON (what the checkpointer and the turn row hold), or None."""
    asked = approval_request(thread, {"name": name, "id": "call-1", "args": {**args, "action_and_reasoning": "Why."}})
    return asked.to_json() if asked is not None else None


def test_the_removed_share_counts_what_goes():
    assert removed_share("", "anything") == 0.0
    assert removed_share(REPORT, REPORT + "\n\nMore.") == 0.0
    assert removed_share(REPORT, "") == 1.0
    half = "\n\n".join(PARAGRAPHS[:5])
    assert 0.45 < removed_share(REPORT, half) < 0.55


@pytest.mark.django_db
def test_replacing_the_document_asks_only_when_it_removes_a_large_share(thread):
    _document(thread, REPORT)
    keeps_most = "\n\n".join(PARAGRAPHS[:8]) + "\n\nA new ending."
    assert removed_share(REPORT, keeps_most) < DOCUMENT_REMOVED_SHARE
    assert _ask(thread, "update_document", content=keeps_most) is None
    asked = _ask(thread, "update_document", content="\n\n".join(PARAGRAPHS[:3]), title="Short")
    assert asked["kind"] == "document" and "about 70% of its text would be removed" in asked["summary"]
    assert asked["document"]["old"] == REPORT and asked["document"]["new_title"] == "Short"
    assert asked["call_id"] == "call-1" and asked["reason"] == "Why."


@pytest.mark.django_db
def test_a_short_document_is_replaced_without_asking(thread):
    _document(thread, "x" * (DOCUMENT_MIN_CHARS - 1))
    assert _ask(thread, "update_document", content="") is None


@pytest.mark.django_db
def test_removing_plan_steps_asks_only_for_steps_with_sub_steps(thread):
    plan_services.todos_add_outline(
        thread=thread,
        steps=[
            {"text": "Research", "depth": 0},
            {"text": "Find papers", "depth": 1},
            {"text": "Read", "depth": 1},
            {"text": "Write", "depth": 0},
        ],
    )
    assert _ask(thread, "remove_todos", indices=[4]) is None
    assert _ask(thread, "remove_todos", indices=[2, 99]) is None  # a leaf, and one the tool refuses
    asked = _ask(thread, "remove_todos", indices=[1, 4])
    assert asked["summary"] == "Remove 2 plan steps together with 2 sub-steps."
    assert asked["details"] == ["“Research” and its 2 sub-steps", "“Write”"]


@pytest.mark.django_db
def test_removing_preferences_asks_unless_every_target_is_locked(thread):
    preference_services.preferences_add(
        thread=thread, items=[{"title": "Formal", "kind": "soft"}, {"title": "Cite", "kind": "hard"}], respect_lock=False
    )
    cite = next(p for p in selectors.preferences_for(thread=thread) if p.title == "Cite")
    cite.locked = True
    cite.save(update_fields=["locked"])
    assert _ask(thread, "remove_preferences", indices=[1]) is None  # hard first: Cite, locked
    assert _ask(thread, "remove_preferences", indices=[1, 2])["details"] == ["“Formal” (soft)"]
    assert _ask(thread, "add_preferences", items=[]) is None


@pytest.mark.django_db
def test_a_call_whose_reason_the_tool_refuses_asks_nothing(thread):
    """The reason is one plain sentence, at most REASON_MAX_CHARS: a longer
    one is refused by the tool, nothing changed, so no card asks about it
    (nor holds a reason a thread's archive would not take back)."""
    preference_services.preferences_add(thread=thread, items=[{"title": "Formal", "kind": "soft"}], respect_lock=False)

    def asked(reason):
        return approval_request(
            thread, {"name": "remove_preferences", "id": "call-1", "args": {"indices": [1], "action_and_reasoning": reason}}
        )

    assert asked("Dropping the rule because the style guide changed. " * 240) is None
    assert asked("x" * REASON_MAX_CHARS).reason == "x" * REASON_MAX_CHARS


def test_a_cards_text_over_its_limit_is_cut_with_a_mark_within_it():
    cut = cut_text("word " * 3_000, 10_000)
    assert len(cut) <= 10_000 and cut.endswith("… (cut here: longer than 10 000 characters)")
    assert cut_text("short", 10_000) == "short"


@pytest.mark.django_db
def test_a_removal_of_more_preferences_than_a_card_lists_says_how_many_more(thread):
    preference_services.preferences_add(
        thread=thread, items=[{"title": f"Rule {n}", "kind": "soft"} for n in range(1, DETAILS_MAX + 6)], respect_lock=False
    )
    asked = _ask(thread, "remove_preferences", indices=list(range(1, DETAILS_MAX + 6)))
    assert asked["summary"] == f"Remove {DETAILS_MAX + 5} preferences."
    assert len(asked["details"]) == DETAILS_MAX and asked["details"][-1] == "and 6 more"


@pytest.mark.django_db
def test_a_replacement_the_document_cannot_hold_asks_nothing_and_the_tool_refuses_it(thread, settings):
    settings.HAICO_DOCUMENT_MAX_CHARS = 5_000
    _document(thread, REPORT)
    assert _ask(thread, "update_document", content="y" * 5_001) is None
    assert _ask(thread, "update_document", content="Short.", title="T" * (DOCUMENT_TITLE_MAX_CHARS + 1)) is None
    assert _ask(thread, "update_document", content="Short.", title="T" * DOCUMENT_TITLE_MAX_CHARS) is not None


def _graph(model):
    return build_agent(model=model, checkpointer=InMemorySaver())


@pytest.mark.django_db(transaction=True)
async def test_an_approved_replacement_keeps_what_the_person_wrote_meanwhile(thread):
    await sync_to_async(_document)(thread, REPORT)
    short = "\n\n".join(PARAGRAPHS[:2])
    model = ScriptedChatModel(
        script=[Reply(tool_calls=[tool_call("update_document", "Cutting it down.", content=short)]), Reply(text="Cut.")]
    )
    graph = _graph(model)
    config = {"configurable": {"thread_id": str(thread.pk)}}
    context = AgentContext(thread=thread, turn_index=1)
    await graph.ainvoke({"messages": [HumanMessage("shorten it")]}, config, context=context)
    state = await graph.aget_state(config)
    [pending] = state.interrupts
    assert pending.value["kind"] == "document"
    version = pending.value["document"]["version"]
    assert (await sync_to_async(selectors.document_for)(thread=thread)).content == REPORT  # nothing written yet

    # The person adds a line at the end while the question waits.
    await sync_to_async(document_services.document_save)(
        thread=thread, content=REPORT + "\n\nMy own note.", base_version=version, author=DocumentRevision.Author.PERSON
    )
    answer = ResumedCall(call_id=pending.value["call_id"], approved=True, document_version=version)
    resumed = AgentContext(thread=thread, turn_index=1, resuming=answer)
    await graph.ainvoke(Command(resume={pending.id: {"approved": True, "document_version": version}}), config, context=resumed)
    content = (await sync_to_async(selectors.document_for)(thread=thread)).content
    assert content.startswith(short) and content.endswith("My own note.")
    assert not (await graph.aget_state(config)).interrupts


@pytest.mark.django_db(transaction=True)
async def test_a_rejection_stands_even_if_the_call_no_longer_needs_asking(thread):
    await sync_to_async(_document)(thread, REPORT)
    model = ScriptedChatModel(
        script=[Reply(tool_calls=[tool_call("update_document", "Clearing it.", content="")]), Reply(text="Left it.")]
    )
    graph = _graph(model)
    config = {"configurable": {"thread_id": str(thread.pk)}}
    await graph.ainvoke({"messages": [HumanMessage("clear")]}, config, context=AgentContext(thread=thread, turn_index=1))
    [pending] = (await graph.aget_state(config)).interrupts
    # Meanwhile the person empties the document themselves: replacing it would remove nothing now.
    await sync_to_async(_document)(thread, "")
    await sync_to_async(_document)(thread, "Fresh start by the person, long enough? no.")
    answer = ResumedCall(call_id=pending.value["call_id"], approved=False)
    result = await graph.ainvoke(
        Command(resume={pending.id: {"approved": False}}),
        config,
        context=AgentContext(thread=thread, turn_index=1, resuming=answer),
    )
    [tool_result] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert '"rejected": true' in tool_result.content
    assert (await sync_to_async(selectors.document_for)(thread=thread)).content.startswith("Fresh start")


@pytest.mark.parametrize(
    "resuming",
    [None, ResumedCall(call_id="another-call", approved=True), ResumedCall(call_id="", approved=True)],
    ids=["no resume information", "another call named", "no call named"],
)
@pytest.mark.django_db(transaction=True)
async def test_an_approval_answer_the_run_was_not_told_about_runs_nothing(thread, resuming):
    await sync_to_async(_document)(thread, REPORT)
    model = ScriptedChatModel(
        script=[Reply(tool_calls=[tool_call("update_document", "Clearing it.", content="")]), Reply(text="Left it.")]
    )
    graph = _graph(model)
    config = {"configurable": {"thread_id": str(thread.pk)}}
    await graph.ainvoke({"messages": [HumanMessage("clear")]}, config, context=AgentContext(thread=thread, turn_index=1))
    [pending] = (await graph.aget_state(config)).interrupts
    # LangGraph hands the call an approval, but the run does not name that call as answered.
    result = await graph.ainvoke(
        Command(resume={pending.id: {"approved": True}}),
        config,
        context=AgentContext(thread=thread, turn_index=1, resuming=resuming),
    )
    [tool_result] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert tool_result.status == "error" and "no answer to it is known" in tool_result.content
    assert (await sync_to_async(selectors.document_for)(thread=thread)).content == REPORT
    assert not (await graph.aget_state(config)).interrupts


@pytest.mark.django_db(transaction=True)
async def test_a_call_of_a_tool_that_never_asks_runs_without_an_approval_lookup(thread, monkeypatch):
    # Only the kinds of call that may ask are looked at in the database (one
    # trip to the database thread fewer for every other step of a turn).
    from agent import approvals

    looked_up = []
    real = approvals.approval_request
    monkeypatch.setattr(approvals, "approval_request", lambda *args: looked_up.append(args[1]["name"]) or real(*args))
    model = ScriptedChatModel(
        script=[
            Reply(tool_calls=[tool_call("set_objective", "Setting the goal.", text="Ship the report")]),
            Reply(tool_calls=[tool_call("update_document", "Writing it.", content="A short report.")]),
            Reply(text="Done."),
        ]
    )
    config = {"configurable": {"thread_id": str(thread.pk)}}
    await _graph(model).ainvoke({"messages": [HumanMessage("go")]}, config, context=AgentContext(thread=thread, turn_index=1))
    assert looked_up == ["update_document"]
    assert (await sync_to_async(selectors.document_for)(thread=thread)).content == "A short report."
    assert (await sync_to_async(selectors.objective_for)(thread=thread)).text == "Ship the report"


@pytest.mark.django_db
def test_while_a_plan_card_waits_only_later_calls_changing_what_it_lists_are_held_back(thread):
    """The card removes "Find papers" with its sub-step "Paper A" (#2, #3 of
    the plan as shown). Held back: a rename, a tick or a removal naming a
    listed step, a removal of "Research" that takes them with it, an
    addition under a listed step. Run: calls on other steps, an addition at
    the top level, the preferences, a call the tool refuses for its index."""
    plan_services.todos_add_outline(
        thread=thread,
        steps=[
            {"text": "Research", "depth": 0},
            {"text": "Find papers", "depth": 1},
            {"text": "Paper A", "depth": 2},
            {"text": "Write", "depth": 0},
        ],
    )
    ids = tuple(t.pk for t in selectors.todos_for(thread=thread))
    context = AgentContext(thread=thread)
    context.seen.plan_shown = ids
    context.paused.append(PausedCall(position=1, name="remove_todos", kind=PLAN, listed=ids[1:3]))

    def held(name, **args):
        call = {"name": name, "id": "later", "args": args}
        return _may_wait(call, context) and _waited_for(thread, call, context) is not None

    assert held("update_todos", updates=[{"index": 4, "text": "Write it"}, {"index": 3, "text": "Paper B"}])
    assert held("toggle_todos", indices=[2])
    assert held("remove_todos", indices=[1])
    assert held("add_todos", parent_index=2, steps=[{"text": "Paper C"}])
    assert not held("update_todos", updates=[{"index": 4, "text": "Write it"}])
    assert not held("toggle_todos", indices=[1, 4])
    assert not held("remove_todos", indices=[4, 99])
    assert not held("add_todos", steps=[{"text": "Publish"}])
    assert not held("add_preferences", items=[{"title": "Short", "kind": "soft"}])
    assert not held("list_todos")


@pytest.mark.django_db
def test_while_a_document_card_waits_every_later_write_of_the_document_is_held_back(thread):
    context = AgentContext(thread=thread)
    context.paused.append(PausedCall(position=2, name="update_document", kind=DOCUMENT, listed=None))
    for name in WRITERS[DOCUMENT]:
        assert _waited_for(thread, {"name": name, "id": "later", "args": {}}, context) is not None
    assert not _may_wait({"name": "read_document", "id": "later", "args": {}}, context)
    assert not _may_wait({"name": "toggle_todos", "id": "later", "args": {"indices": [1]}}, context)


def test_the_writers_a_card_may_hold_back_are_every_writing_tool_of_its_surface():
    """A new writing tool of the document, the plan or the preferences is
    held back while a card about its surface waits (agent.approvals.WRITERS)."""
    modules = {DOCUMENT: "agent.tools.documents", PLAN: "agent.tools.todos", PREFERENCES: "agent.tools.preferences"}
    for kind, module in modules.items():
        writers = {spec.name for spec in tool_specs() if spec.body.__module__ == module and not spec.read_only}
        assert writers == WRITERS[kind], kind
