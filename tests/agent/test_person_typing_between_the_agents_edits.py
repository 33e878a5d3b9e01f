"""The agent's targeted edits of a 150 000-character document while the
person types in it: their editor saves (from another request,
based on the version it last had, which lags behind the agent's writes)
between the agent's model calls and between the calls of one reply. The
person's words must never be lost or overwritten, and the agent's edits
must all land once."""

import json

import pytest
from asgiref.sync import sync_to_async

from tests.agent.scripted_turn import tool_results_of_a_turn
from tests.support.fake_model import Reply, tool_call
from tests.support.requests import as_another_request
from workspace import selectors
from workspace.models import DocumentRevision
from workspace.services import document as document_services

pytestmark = pytest.mark.django_db(transaction=True)


def _chapter(chars: int) -> str:
    text, n = "", 0
    while len(text) < chars:
        n += 1
        text += f"Paragraph {n} of the chapter, with the reasoning that belongs to it.\n\n"
    return text[:chars]


BOOK = _chapter(150_000)


class Editor:
    """The person's tab: the text and version it last had, one save behind."""

    def __init__(self, thread, user):
        self.thread, self.user = thread, user
        self.version, self.text = None, None

    def sync(self):
        doc = selectors.document_for(thread=self.thread)
        self.version, self.text = doc.version, doc.content

    def type_after(self, anchor: str, words: str):
        """Type `words` after `anchor` in the tab's (possibly stale) text and save from its version."""
        at = self.text.index(anchor) + len(anchor)
        typed = self.text[:at] + words + self.text[at:]
        saved = document_services.document_save(
            thread=self.thread, content=typed, base_version=self.version, author=DocumentRevision.Author.PERSON, person=self.user
        )
        # The save came back (merged or not): the tab now has that version.
        self.version, self.text = saved.document.version, saved.document.content


async def test_the_persons_words_typed_between_the_agents_edits_of_a_long_document_all_stay(thread, owner):
    """Three model calls of passage edits and an append; before each, the
    person's tab saves a note from the version it last had (behind the
    agent's writes, then caught up, then right beside an agent edit). Each
    note and each agent edit is in the text exactly once."""
    await sync_to_async(document_services.document_save)(
        thread=thread, title="Book", content=BOOK, author=DocumentRevision.Author.PERSON, person=owner
    )
    editor = Editor(thread, owner)
    await sync_to_async(editor.sync)()
    typed = []

    def person_types(anchor, words, *, resync=False):
        def act():
            if resync:
                editor.sync()
            editor.type_after(anchor, words)

        as_another_request(act)
        typed.append(words)

    def step1(messages):
        # The tab is at version 1; the person types near the end.
        person_types("Paragraph 2000 of the chapter", " [person: a note near the end]")
        return Reply(
            tool_calls=[
                tool_call(
                    "replace_in_document",
                    "Tightening paragraph 5.",
                    old_text="Paragraph 5 of the chapter,",
                    new_text="Paragraph 5 (tightened),",
                ),
                tool_call(
                    "replace_in_document",
                    "Tightening paragraph 7.",
                    old_text="Paragraph 7 of the chapter,",
                    new_text="Paragraph 7 (tightened),",
                ),
                tool_call("read_document", "Reading on.", start=90_000, length=30_000),
            ]
        )

    def step2(messages):
        # The tab did not get the agent's two edits yet: it saves from its own version.
        person_types("Paragraph 1000 of the chapter", " [person: a middle note]")
        return Reply(
            tool_calls=[
                tool_call(
                    "insert_in_document",
                    "Adding a citation.",
                    after_text="Paragraph 1300 of the chapter,",
                    text=" (see Smith 2020)",
                ),
                tool_call(
                    "replace_in_document",
                    "Fixing paragraph 9.",
                    old_text="Paragraph 9 of the chapter,",
                    new_text="Paragraph 9 (fixed),",
                ),
            ]
        )

    def step3(messages):
        # Now the tab catches up, and the person types right next to an agent edit.
        person_types("Paragraph 9 (fixed),", " [person: next to the fix]", resync=True)
        return Reply(
            tool_calls=[
                tool_call("append_to_document", "Adding the summary.", text="## Summary\n\nAll paragraphs were reviewed."),
            ]
        )

    results = await tool_results_of_a_turn(thread, [step1, step2, step3])
    doc = await sync_to_async(selectors.document_for)(thread=thread)
    content = doc.content
    for words in typed:
        assert content.count(words) == 1, f"the person's {words!r} was lost or doubled"
    for agent_text in (
        "Paragraph 5 (tightened),",
        "Paragraph 7 (tightened),",
        "(see Smith 2020)",
        "Paragraph 9 (fixed),",
        "## Summary",
    ):
        assert content.count(agent_text) == 1, (agent_text, [json.loads(r.content) for r in results])
    assert "Paragraph 5 of the chapter," not in content and "Paragraph 9 of the chapter," not in content
    # Nothing else of the book went missing.
    assert content.count("Paragraph 1999 of the chapter") == 1 and content.count("Paragraph 3 of the chapter") == 1
    assert len(content) < 151_000
