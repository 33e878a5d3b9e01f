"""A thread with every kind of content an archive carries, made the way a
person and the agent make one (the real turn runner, a scripted model, the
services), for the archive tests (tests/conversations/test_archive*.py).

`rich_thread` leaves, in the thread it returns: an objective changed by the
agent and the person, hard and soft preferences (one locked), a nested plan
with a step ticked, a document with agent and person versions and an
answered review of an agent turn, a chart and a table, turns with tool
calls and answers, an approval the person rejected, feedback, a parent it
was branched from and a branch of its own."""

from __future__ import annotations

from channels.db import database_sync_to_async

from conversations.branching import fork_thread
from conversations.services import feedback_leave
from conversations.turns import approval_claims, registry
from tests.support.fake_model import Reply, tool_call
from tests.support.turns import run_turn
from workspace.models import DocumentRevision, Thread
from workspace.services.document import document_save
from workspace.services.objective import objective_set
from workspace.services.preferences import preference_add, preference_set_locked
from workspace.services.review import review_keep

Author = DocumentRevision.Author
DOCUMENT = "# Launch note\n\nThe launch is on Monday.\n\n- Draft\n- Review ü €\n"


def _script(script):
    script(
        # Turn 1, in the parent: the workspace set up.
        Reply(
            tool_calls=[
                tool_call("set_objective", "Noting the goal.", text="Ship the launch note"),
                tool_call(
                    "add_preferences",
                    "Recording your rules.",
                    items=[{"title": "Short", "kind": "soft"}, {"title": "British English", "kind": "hard"}],
                ),
                tool_call(
                    "add_todos",
                    "Planning.",
                    steps=[
                        {"text": "Outline", "depth": 0},
                        {"text": "Intro", "depth": 1},
                        {"text": "Send", "depth": 0},
                    ],
                ),
                tool_call("update_document", "Drafting.", title="Launch", content=DOCUMENT),
            ]
        ),
        Reply(text="Answer one, with a **bold** word."),
        # Turn 2, in the branch: artifacts, a ticked step, targeted edits.
        Reply(
            tool_calls=[
                tool_call("set_objective", "Sharpening the goal.", text="Ship the launch note on Tuesday"),
                tool_call(
                    "chart_generator",
                    "Charting.",
                    chart_type="bar",
                    title="Revenue",
                    data=[{"name": "Q1", "value": 1.5}, {"name": "Q2", "value": 3}],
                ),
                tool_call(
                    "data_table", "Tabulating.", title="Costs", columns=["item", "cost"], rows=[["=SUM(A1)", 3], ["paper", 2.25]]
                ),
                tool_call("toggle_todos", "Ticking off.", indices=[2]),
                tool_call("replace_in_document", "Tightening.", old_text="on Monday", new_text="on Tuesday"),
            ]
        ),
        Reply(text="Answer two."),
        # Turn 3: a removal the person rejects.
        Reply(tool_calls=[tool_call("remove_preferences", "Dropping the soft rule.", indices=[3])]),
        Reply(text="Kept as you decided."),
        default=Reply(text="Answer after import."),
    )


async def rich_thread(thread: Thread, owner, script) -> Thread:
    """A branch of `thread` holding every kind of content, with a branch of its own."""
    _script(script)
    await run_turn(thread, "first message")
    branch = await database_sync_to_async(fork_thread)(source=thread, turn_index=1, user=owner, reason="Trying another way")
    await database_sync_to_async(preference_add)(thread=branch, title="Cite sources", kind="soft", respect_lock=False)
    await run_turn(branch, "second message")

    @database_sync_to_async
    def person_edits():
        fresh = Thread.objects.get(pk=branch.pk)
        review_keep(thread=fresh, turn_index=2, person=owner)
        document = fresh.document
        document_save(
            thread=fresh,
            content=document.content + "\nWritten by the person.\n",
            base_version=document.version,
            author=Author.PERSON,
            person=owner,
        )
        objective_set(thread=fresh, text="Ship the launch note by Tuesday", author=Author.PERSON, person=owner)
        locked = preference_add(thread=fresh, title="No jargon", kind="hard", respect_lock=False)
        preference_set_locked(preference=locked, locked=True, respect_lock=False)
        feedback_leave(thread=fresh, user=owner, turn_index=1, rating=4, comment="Good start")

    await person_edits()
    await registry.start_turn(thread=branch, user_message="drop a rule")
    await registry.wait_for_turn(branch.pk)
    await registry.answer_approval(thread=branch, turn=3, decision=approval_claims.REJECTED, person=owner)
    await registry.wait_for_turn(branch.pk)

    @database_sync_to_async
    def finish():
        fresh = Thread.objects.get(pk=branch.pk)
        feedback_leave(thread=fresh, user=owner, turn_index=3, rating=2, aspect="tone")
        fork_thread(source=fresh, turn_index=3, user=owner, reason="Another branch")
        return Thread.objects.get(pk=branch.pk)

    return await finish()
