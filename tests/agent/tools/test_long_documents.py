"""A document longer than the prompt shows (docs/adr/0109): the model reads
the rest with read_document, and update_document, which replaces all of the
text, is refused until it has: written from the part it was shown, the
rewrite would drop the rest without anyone being asked."""

import json

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext, Seen
from agent.prompt import DOCUMENT_INJECT_MAX_CHARS
from tests.agent.tools.helpers import call, db
from tests.support.fake_model import Reply, ScriptedChatModel, system_text, tool_call
from workspace import selectors
from workspace.models import DocumentRevision
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db(transaction=True)


def _chapter(chars: int) -> str:
    """Numbered paragraphs, so any part of the text says where it is."""
    text, n = "", 0
    while len(text) < chars:
        n += 1
        text += f"Paragraph {n} of the chapter, with the reasoning that belongs to it.\n\n"
    return text[:chars]


THESIS = _chapter(45_000)


def _person_saves(thread, content):
    return document_services.document_save(thread=thread, title="Thesis", content=content, author=DocumentRevision.Author.PERSON)


async def test_read_document_returns_the_part_asked_for_and_says_what_follows(thread):
    await db(_person_saves, thread, THESIS)

    middle = await call(thread, "read_document", start=30_000, length=10_000)
    assert middle["success"] is True
    header, text = middle["summary"].split("\n\n", 1)
    assert header == (
        "Characters 30000 to 40000 of 45000 of 'Thesis' (version 1). 5000 more characters follow: read on from start=40000."
    )
    assert text == THESIS[30_000:40_000]

    end = await call(thread, "read_document", start=40_000)
    assert end["summary"].split("\n\n", 1) == [
        "Characters 40000 to 45000 of 45000 of 'Thesis' (version 1). That is the end.",
        THESIS[40_000:],
    ]
    past = await call(thread, "read_document", start=45_000)
    assert past == {"success": False, "error": "start=45000 is past the end: the document has 45000 characters (version 1)."}
    too_much = await call(thread, "read_document", start=0, length=30_001)
    assert too_much["success"] is False and "length" in too_much["error"]


def test_the_whole_document_counts_as_seen_once_its_unshown_part_was_read():
    seen = Seen(document_version=3, document_length=45_000, document_shown_chars=30_000)
    assert not seen.saw_the_whole_document()
    seen.document_read.append((3, 35_000, 45_000))  # a gap from 30 000 to 35 000
    assert not seen.saw_the_whole_document()
    seen.document_read.append((2, 30_000, 35_000))  # of another version
    assert not seen.saw_the_whole_document()
    seen.document_read.append((3, 29_000, 36_000))
    assert seen.saw_the_whole_document()
    assert Seen(document_version=1, document_length=500, document_shown_chars=500).saw_the_whole_document()


async def _turn(thread, script):
    model = ScriptedChatModel(script=script)
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    state = await agent.ainvoke(
        {"messages": [HumanMessage("Tighten the whole chapter")]},
        {"configurable": {"thread_id": "long"}},
        context=AgentContext(thread=thread, turn_index=1),
    )
    return model, state


async def test_a_rewrite_from_the_part_shown_is_refused_unasked_and_goes_through_once_the_rest_was_read(thread):
    await db(_person_saves, thread, THESIS)
    shown = THESIS[:DOCUMENT_INJECT_MAX_CHARS]
    # One change in the part shown and one in the rest: a small rewrite, that no approval is asked for.
    tightened = THESIS.replace("Paragraph 2 of", "Paragraph two of").replace("Paragraph 600 of", "Paragraph six hundred of")

    model, state = await _turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call(
                        "update_document",
                        "Tightening the chapter.",
                        content=shown.replace("Paragraph 2 of", "Paragraph two of"),
                    )
                ]
            ),
            Reply(tool_calls=[tool_call("read_document", "Reading the rest of the chapter.", start=30_000)]),
            Reply(tool_calls=[tool_call("update_document", "Tightening the whole chapter.", content=tightened)]),
            Reply(text="Done."),
        ],
    )

    assert "[… 15000 more characters not shown (45000 in all); read them with read_document, from start=30000 …]" in system_text(
        model.requests[0]
    )
    refused, read, written = (m.content for m in model.requests[-1] if m.type == "tool")
    assert '"success": false' in refused and "you have not seen all of it" in refused
    assert "(version 1 has 45000 characters; the <document> block shows the first 30000)" in refused
    assert json.loads(read)["summary"].endswith("That is the end.\n\n" + THESIS[30_000:])
    assert '"success": true' in written
    # Nobody was asked to approve the removal the first call would have made.
    assert "__interrupt__" not in state
    document = await db(selectors.document_for, thread=thread)
    assert (document.version, document.content) == (2, tightened)


async def test_a_rewrite_after_the_runs_own_targeted_edit_of_a_document_it_read_through_needs_no_second_read(thread):
    await db(_person_saves, thread, THESIS)
    renamed = THESIS.replace("Paragraph 600 of", "Paragraph six hundred of")
    tightened = renamed.replace("Paragraph 2 of", "Paragraph two of")

    model, state = await _turn(
        thread,
        [
            Reply(tool_calls=[tool_call("read_document", "Reading the rest of the chapter.", start=30_000)]),
            Reply(
                tool_calls=[
                    tool_call(
                        "replace_in_document",
                        "Naming paragraph 600 in words.",
                        old_text="Paragraph 600 of",
                        new_text="Paragraph six hundred of",
                    )
                ]
            ),
            Reply(tool_calls=[tool_call("update_document", "Tightening the whole chapter.", content=tightened)]),
            Reply(text="Done."),
        ],
    )

    # Version 2 is the run's own edit of a version it had read through: it knows all of it.
    written = [m.content for m in model.requests[-1] if m.type == "tool"][-1]
    assert '"success": true' in written, written
    document = await db(selectors.document_for, thread=thread)
    assert (document.version, document.content) == (3, tightened)


async def test_a_rewrite_after_the_person_changed_the_unshown_part_needs_that_part_read_again(thread):
    await db(_person_saves, thread, THESIS)
    theirs = THESIS[:-20] + "The person's new ending."

    script = [
        Reply(tool_calls=[tool_call("read_document", "Reading the rest of the chapter.", start=30_000)]),
        Reply(
            tool_calls=[
                tool_call(
                    "replace_in_document", "Naming paragraph 2 in words.", old_text="Paragraph 2 of", new_text="Paragraph two of"
                )
            ]
        ),
        Reply(tool_calls=[tool_call("update_document", "Tightening the whole chapter.", content=THESIS)]),
        Reply(text="Stopped."),
    ]
    model = ScriptedChatModel(script=script)
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "long"}}
    context = AgentContext(thread=thread, turn_index=1)
    # The person saves a new ending after the model read the document and
    # before its edit: the version it edits has a tail it has not read.
    await agent.ainvoke(
        {"messages": [HumanMessage("Tighten the whole chapter")]}, config, context=context, interrupt_after=["tools"]
    )
    await db(_person_saves, thread, theirs)
    await agent.ainvoke(None, config, context=context)

    results = [m.content for m in model.requests[-1] if m.type == "tool"]
    assert '"success": true' in results[1]
    assert '"success": false' in results[2] and "you have not seen all of it" in results[2]
    document = await db(selectors.document_for, thread=thread)
    assert document.content.endswith("The person's new ending.")


async def test_a_selection_edit_in_a_long_document_of_text_as_people_write_it_with_the_person_typing_meanwhile(thread):
    from agent.context import Selection
    from tests.support.unicode_text import FAMILY, PARAS, big_document
    from workspace.services import review as review_services

    def person_saves(content, base_version=None):
        return document_services.document_save(
            thread=thread, title="Notes", content=content, author=DocumentRevision.Author.PERSON, base_version=base_version
        )

    text = big_document(80_000)
    await db(person_saves, text)
    await db(lambda: type(thread).objects.filter(pk=thread.pk).update(turn_index=1))
    passage = "50. " + PARAS[50 % len(PARAS)]  # after 30 000 characters with astral ones among them
    start = text.index(passage)
    assert start > 30_000
    rewritten = "50. 会议记录已更新 🇫🇮 e\u0301"
    model = ScriptedChatModel(
        script=[
            Reply(
                tool_calls=[tool_call("replace_in_document", "Rewriting the selection.", old_text=passage, new_text=rewritten)]
            ),
            Reply(text="Done."),
        ]
    )
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "selection"}}
    context = AgentContext(thread=thread, turn_index=1, selection=Selection(start=start, end=start + len(passage), text=passage))
    await agent.ainvoke({"messages": [HumanMessage("Rewrite this")]}, config, context=context, interrupt_before=["tools"])
    # The person edits an emoji line elsewhere while the agent's call is on its way.
    theirs = text.replace("0. Le café est prêt. " + FAMILY, "0. Le café est prêt!! " + FAMILY + " 🎉", 1)
    await db(person_saves, theirs, 1)
    await agent.ainvoke(None, config, context=context)

    # The selection's offsets are code points, as Python counts them.
    assert f'<selection start="{start}" end="{start + len(passage)}">{passage}</selection>' in system_text(model.requests[0])
    document = await db(selectors.document_for, thread=thread)
    assert document.content == theirs.replace(passage, rewritten)
    review = await db(selectors.document_review, thread=thread)
    assert review is not None and len(review.hunks) == 1  # only the agent's edit is listed
    assert (await db(review_services.review_undo, thread=thread, turn_index=1)).undone == 1
    document = await db(selectors.document_for, thread=thread)
    assert document.content == theirs  # the person's emoji line stays, the selection is back
