"""agent.tools.documents: update_document and append_to_document, envelope and
database effect; update_document is based on the version the model was shown
and merged with the person's concurrent edits, or refused on an overlap."""

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from agent.builder import build_agent
from agent.context import AgentContext
from agent.tools.documents import MAX_CONFLICTS_SHOWN
from tests.agent.tools.helpers import call, db
from tests.support.fake_model import Reply, ScriptedChatModel, system_text, tool_call
from tests.support.requests import as_another_request
from workspace import selectors
from workspace.models import DocumentRevision
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db(transaction=True)

REPORT = "# Review\n\nIntro paragraph.\n\nMethods paragraph.\n\nResults paragraph.\n"


def _person_saves(thread, content, *, base_version):
    return document_services.document_save(
        thread=thread, content=content, base_version=base_version, author=DocumentRevision.Author.PERSON
    )


async def test_update_document_replaces_content_and_title(thread):
    result = await call(thread, "update_document", content="# Review\n\nBody.", title="Lit review draft")
    assert result["success"] is True
    assert "Lit review draft" in result["summary"]
    document = await db(selectors.document_for, thread=thread)
    assert (document.title, document.content) == ("Lit review draft", "# Review\n\nBody.")
    assert "artifact" not in result


async def test_update_document_is_recorded_as_the_agents_revision(thread):
    await call(thread, "update_document", content="Body.", seen_version=0)
    await call(thread, "append_to_document", text="More.")
    authors = await db(
        lambda: list(
            DocumentRevision.objects.filter(document__thread=thread).order_by("version").values_list("author", flat=True)
        )
    )
    assert authors == ["agent", "agent"]


async def test_update_document_based_on_the_current_version_writes_it_as_sent(thread):
    await db(_person_saves, thread, REPORT, base_version=0)
    result = await call(thread, "update_document", content="Short.", seen_version=1)
    assert result["success"] is True and "merged" not in result["summary"]
    assert (await db(selectors.document_for, thread=thread)).content == "Short."


async def test_update_from_an_older_version_merges_the_persons_concurrent_edit(thread):
    await db(_person_saves, thread, REPORT, base_version=0)  # version 1: what the model was shown
    await db(_person_saves, thread, REPORT.replace("Intro paragraph.", "Intro the person typed."), base_version=1)

    result = await call(
        thread, "update_document", seen_version=1, content=REPORT.replace("Results paragraph.", "Results by the agent.")
    )

    assert result["success"] is True
    summary = result["summary"]
    assert "merged with the person's concurrent edits" in summary
    assert "differs from the text you sent" in summary and "version 3" in summary
    document = await db(selectors.document_for, thread=thread)
    assert document.content == REPORT.replace("Intro paragraph.", "Intro the person typed.").replace(
        "Results paragraph.", "Results by the agent."
    )


async def test_update_overlapping_the_persons_edit_fails_writes_nothing_and_shows_both_versions(thread):
    await db(_person_saves, thread, REPORT, base_version=0)
    await db(_person_saves, thread, REPORT.replace("Methods paragraph.", "Methods, as the person wants them."), base_version=1)

    result = await call(
        thread, "update_document", seen_version=1, content=REPORT.replace("Methods paragraph.", "Methods by the agent.")
    )

    assert result["success"] is False
    error = result["error"]
    assert error.startswith("Nothing was written")
    assert "you wrote from version 1; it is now version 2" in error
    assert "Redo your edit on the current text (version 2" in error
    assert "⟦as the person wants them⟧" in error  # the current text there
    assert "⟦by the agent⟧" in error  # and the agent's own version of it
    assert "Intro paragraph." in error  # with the text around it
    document = await db(selectors.document_for, thread=thread)
    assert (document.version, document.content) == (2, REPORT.replace("Methods paragraph.", "Methods, as the person wants them."))


async def test_a_conflict_report_shows_a_few_hundred_characters_around_each_overlap_and_caps_the_count(thread):
    paragraphs = [f"Paragraph {i} " + "filler words " * 40 + "end." for i in range(MAX_CONFLICTS_SHOWN + 3)]
    base = "\n\n".join(paragraphs) + "\n"
    await db(_person_saves, thread, base, base_version=0)
    await db(_person_saves, thread, base.replace("end.", "person end."), base_version=1)

    result = await call(thread, "update_document", seen_version=1, content=base.replace("end.", "agent end."))

    error = result["error"]
    assert error.count("- Overlap ") == MAX_CONFLICTS_SHOWN
    assert "and 3 more overlaps" in error
    overlap = error.split("- Overlap 1, ")[1].split("- Overlap 2")[0]
    assert 300 <= len(overlap) <= 900


async def test_update_with_no_version_seen_writes_over_the_current_text(thread):
    # Only outside a model run (a direct call): no model call recorded a version.
    await db(_person_saves, thread, REPORT, base_version=0)
    result = await call(thread, "update_document", content="Replaced.")
    assert result["success"] is True
    assert (await db(selectors.document_for, thread=thread)).content == "Replaced."


async def test_update_document_without_content_fails_and_writes_nothing(thread):
    result = await call(thread, "update_document", title="Only a title")
    assert result["success"] is False
    assert "content" in result["error"] and "Field required" in result["error"]
    document = await db(selectors.document_for, thread=thread)
    assert document.pk is None


async def test_append_to_document_adds_to_the_end(thread):
    await db(document_services.document_save, thread=thread, content="First line")
    result = await call(thread, "append_to_document", text="Second line")
    assert result["success"] is True
    document = await db(selectors.document_for, thread=thread)
    # A paragraph of its own: one line break would join it to the first in Markdown.
    assert document.content == "First line\n\nSecond line"


async def test_append_blank_text_fails_with_service_message(thread):
    result = await call(thread, "append_to_document", text="   ")
    assert result == {"success": False, "error": "Text to append cannot be empty."}


# --- through the agent: the version each model call was shown is the base --------------


async def _turn(thread, script):
    model = ScriptedChatModel(script=script)
    agent = build_agent(model=model, checkpointer=InMemorySaver())
    await agent.ainvoke(
        {"messages": [HumanMessage("Improve the report")]},
        {"configurable": {"thread_id": "docs"}},
        context=AgentContext(thread=thread, turn_index=1),
    )
    return model


def _tool_results(model):
    return [m.content for m in model.requests[-1] if m.type == "tool"]


async def test_the_person_typing_while_the_model_thinks_is_merged_into_its_update(thread):
    await db(_person_saves, thread, REPORT, base_version=0)

    def thinking(messages):
        # The person saves a new intro while the model writes its update from version 1.
        as_another_request(
            lambda: _person_saves(thread, REPORT.replace("Intro paragraph.", "Intro typed meanwhile."), base_version=1)
        )
        return Reply(
            tool_calls=[
                tool_call(
                    "update_document", "Rewriting the results.", content=REPORT.replace("Results paragraph.", "New results.")
                )
            ]
        )

    model = await _turn(thread, [thinking, Reply(text="Done.")])

    assert 'version="1"' in system_text(model.requests[0])
    assert 'version="3"' in system_text(model.requests[1])  # the merged version, shown next
    [result] = _tool_results(model)
    assert '"success": true' in result and "merged with the person's concurrent edits" in result
    document = await db(selectors.document_for, thread=thread)
    assert document.content == REPORT.replace("Intro paragraph.", "Intro typed meanwhile.").replace(
        "Results paragraph.", "New results."
    )


async def test_edits_of_one_step_merged_with_each_other_are_told_as_the_models_own_not_the_persons(thread):
    await db(_person_saves, thread, "Intro: One word here.\n\nResults: Two words there.\n", base_version=0)
    model = await _turn(
        thread,
        [
            Reply(
                tool_calls=[
                    tool_call("replace_in_document", "Changing one.", old_text="One word", new_text="ONE WORD"),
                    tool_call("replace_in_document", "Changing two.", old_text="Two words", new_text="TWO WORDS"),
                ]
            ),
            Reply(text="Done."),
        ],
    )
    first, second = _tool_results(model)
    assert "merged" not in first
    assert "merged with your own other edits of this step" in second and "person" not in second
    document = await db(selectors.document_for, thread=thread)
    assert document.content == "Intro: ONE WORD here.\n\nResults: TWO WORDS there.\n"


async def test_an_overlapping_update_fails_and_the_redo_from_the_version_shown_next_succeeds(thread):
    await db(_person_saves, thread, REPORT, base_version=0)
    mine = REPORT.replace("Methods paragraph.", "Methods the person chose.")

    def thinking(messages):
        as_another_request(lambda: _person_saves(thread, mine, base_version=1))
        return Reply(
            tool_calls=[
                tool_call(
                    "update_document",
                    "Rewriting the methods.",
                    content=REPORT.replace("Methods paragraph.", "Methods the agent chose."),
                )
            ]
        )

    redo = Reply(
        tool_calls=[
            tool_call(
                "update_document", "Adding to the person's methods.", content=mine.replace("chose.", "chose, with controls.")
            )
        ]
    )
    model = await _turn(thread, [thinking, redo, Reply(text="Done.")])

    first_result, redo_result = (m.content for m in model.requests[-1] if m.type == "tool")
    assert '"success": false' in first_result and "Nothing was written" in first_result
    assert 'version="2"' in system_text(model.requests[1])  # the redo was written from version 2
    assert '"success": true' in redo_result and "merged" not in redo_result
    document = await db(selectors.document_for, thread=thread)
    assert (document.version, document.content) == (3, mine.replace("chose.", "chose, with controls."))


# --- targeted edits: replace_in_document and insert_in_document ---------------------


async def _revisions(thread):
    return await db(lambda: DocumentRevision.objects.filter(document__thread=thread).count())


async def test_replace_in_document_replaces_the_one_matching_passage_as_a_new_version(thread):
    await db(_person_saves, thread, REPORT, base_version=0)

    result = await call(
        thread, "replace_in_document", seen_version=1, old_text="Methods paragraph.", new_text="Methods, rewritten."
    )

    assert result["success"] is True
    assert "version 2" in result["summary"]
    document = await db(selectors.document_for, thread=thread)
    assert document.content == REPORT.replace("Methods paragraph.", "Methods, rewritten.")
    latest = await db(lambda: DocumentRevision.objects.filter(document__thread=thread).order_by("-version").first())
    assert (latest.version, latest.author, await db(lambda: latest.content)) == (2, "agent", document.content)


async def test_replace_in_document_with_no_match_fails_saying_zero_matches_and_writes_nothing(thread):
    await db(_person_saves, thread, REPORT, base_version=0)

    result = await call(thread, "replace_in_document", seen_version=1, old_text="Discussion paragraph.", new_text="X")

    assert result["success"] is False
    assert "was not found" in result["error"] and "(0 matches)" in result["error"]
    assert "Nothing was changed" in result["error"]
    assert (await db(selectors.document_for, thread=thread)).content == REPORT
    assert await _revisions(thread) == 1


async def test_replace_in_document_with_two_matches_fails_saying_how_many_and_writes_nothing(thread):
    await db(_person_saves, thread, REPORT, base_version=0)

    result = await call(thread, "replace_in_document", seen_version=1, old_text=" paragraph.", new_text=" part.")

    assert result["success"] is False
    assert "found 3 times" in result["error"] and "(3 matches)" in result["error"]
    assert "more of the surrounding text" in result["error"]
    assert (await db(selectors.document_for, thread=thread)).content == REPORT


async def test_replace_in_document_counts_two_matches_as_two(thread):
    await db(_person_saves, thread, "Alpha. Beta. Alpha.\n", base_version=0)

    result = await call(thread, "replace_in_document", seen_version=1, old_text="Alpha.", new_text="Gamma.")

    assert result["success"] is False
    assert "(2 matches)" in result["error"]
    assert (await db(selectors.document_for, thread=thread)).content == "Alpha. Beta. Alpha.\n"


async def test_insert_in_document_inserts_right_after_the_passage(thread):
    await db(_person_saves, thread, REPORT, base_version=0)

    result = await call(
        thread, "insert_in_document", seen_version=1, after_text="Intro paragraph.", text="\n\nBackground paragraph."
    )

    assert result["success"] is True
    document = await db(selectors.document_for, thread=thread)
    assert document.content == REPORT.replace("Intro paragraph.", "Intro paragraph.\n\nBackground paragraph.")
    assert document.version == 2


async def test_insert_in_document_after_an_ambiguous_passage_fails(thread):
    await db(_person_saves, thread, REPORT, base_version=0)
    result = await call(thread, "insert_in_document", seen_version=1, after_text="paragraph.", text=" More.")
    assert result["success"] is False and "(3 matches)" in result["error"]
    assert await _revisions(thread) == 1


async def test_a_targeted_edit_is_matched_in_the_version_shown_and_merged_with_the_persons_edit(thread):
    await db(_person_saves, thread, REPORT, base_version=0)  # version 1: what the model was shown
    await db(_person_saves, thread, REPORT.replace("Intro paragraph.", "Intro the person typed."), base_version=1)

    result = await call(
        thread, "replace_in_document", seen_version=1, old_text="Results paragraph.", new_text="Results by the agent."
    )

    assert result["success"] is True and "merged" in result["summary"]
    document = await db(selectors.document_for, thread=thread)
    assert document.content == REPORT.replace("Intro paragraph.", "Intro the person typed.").replace(
        "Results paragraph.", "Results by the agent."
    )


async def test_a_targeted_edit_of_a_passage_the_person_changed_meanwhile_is_refused(thread):
    await db(_person_saves, thread, REPORT, base_version=0)
    await db(_person_saves, thread, REPORT.replace("Methods paragraph.", "Methods, as the person wants them."), base_version=1)

    result = await call(
        thread, "replace_in_document", seen_version=1, old_text="Methods paragraph.", new_text="Methods by the agent."
    )

    assert result["success"] is False
    assert result["error"].startswith("Nothing was written")
    assert (await db(selectors.document_for, thread=thread)).content == REPORT.replace(
        "Methods paragraph.", "Methods, as the person wants them."
    )


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("update_document", {"content": REPORT.replace("Intro", "Opening")}),
        ("replace_in_document", {"old_text": "Intro paragraph.", "new_text": "Opening paragraph."}),
        ("insert_in_document", {"after_text": "Intro paragraph.", "text": " More."}),
    ],
)
async def test_an_edit_from_a_version_the_document_never_had_is_refused_as_unknown(thread, tool, arguments):
    """The model's edit names a version above the document's (none it was shown): refused, saying the
    version is unknown and which is current, never as an overlap with the person's edits."""
    await db(_person_saves, thread, REPORT, base_version=0)
    result = await call(thread, tool, seen_version=5, **arguments)
    assert result["success"] is False
    assert "version 5 of the document is unknown" in result["error"] and "version 1" in result["error"], result
    assert "person edited" not in result["error"]
    document = await db(selectors.document_for, thread=thread)
    assert (document.content, document.version) == (REPORT, 1)
