"""Agent turns with hundreds of tool calls (parallel, as a real model
batches them), through the real socket, runner and live layer.

What a person should see: every change in the database, every open tab
brought to the same state by the pushes, one plain sentence per action in
the reasoning trace (live and on reload), and a turn that ends cleanly."""

import json
import re

import pytest
from channels.db import database_sync_to_async

from conversations.models import Turn
from tests.support.fake_model import Reply, tool_call
from workspace.models import PlanChange, Preference, Todo

from .helpers import frames_until_turn_end

pytestmark = pytest.mark.django_db(transaction=True)

N = 120


def _send(message):
    return json.dumps({"message": message, "HEADERS": {"HX-Request": "true"}})


STEP_ROW = re.compile(r'<li id="step-(\d+)" class="step( is-done)?"[^>]*>.*?<span class="step-text">(.*?)</span>', re.S)
PREF_ROW = re.compile(
    r'<li id="pref-(\d+)" class="pref pref-(hard|soft)[^"]*"[^>]*>.*?<span class="pref-title">(.*?)</span>', re.S
)


STEP_ITEM = re.compile(r'<li id="turn-1-step-(\d+)" class="reasoning-step[^"]*"[^>]*>([^<]*)')


def _page_state(frames):
    """What an open tab shows after applying every push in order: each
    step's latest row (text, done), each preference's latest row."""
    steps, prefs = {}, {}
    for html in frames:
        for pk, done, text in STEP_ROW.findall(html):
            steps[int(pk)] = (text, bool(done))
        for pk, kind, title in PREF_ROW.findall(html):
            prefs[int(pk)] = (title, kind)
    return steps, prefs


@database_sync_to_async
def _stored(thread):
    return (
        {t.pk: (t.text, t.done) for t in Todo.objects.filter(thread=thread)},
        {p.pk: (p.title, p.kind) for p in Preference.objects.filter(thread=thread)},
        PlanChange.objects.filter(thread=thread).count(),
        Turn.objects.get(thread=thread, index=1),
    )


def _many_call_script():
    adds = Reply(
        tool_calls=[
            tool_call("add_todos", f"Adding step {i} to the plan.", steps=[{"text": f"Step {i}"}]) for i in range(1, N + 1)
        ]
    )
    ticks = Reply(tool_calls=[tool_call("toggle_todos", f"Ticking off step {i}.", indices=[i]) for i in range(1, N + 1)])
    renames = Reply(
        tool_calls=[
            tool_call("update_todos", f"Renaming step {i}.", updates=[{"index": i, "text": f"Step {i} (checked)"}])
            for i in range(1, N + 1, 2)
        ]
    )
    prefs = Reply(
        tool_calls=[
            tool_call("add_preferences", f"Noting rule {i}.", items=[{"title": f"Rule {i}", "kind": "soft"}])
            for i in range(1, 41)
        ]
    )
    hardening = Reply(
        tool_calls=[
            tool_call("update_preferences", f"Making rule {i} strict.", updates=[{"index": i, "kind": "hard"}])
            for i in range(1, 41, 4)
        ]
    )
    return [adds, ticks, renames, prefs, hardening, Reply(text="All done: the plan is ticked off.")]


async def test_a_turn_of_300_parallel_tool_calls_reaches_db_pushes_and_trace(owner, thread, script, sockets, async_client):
    """120 steps added, ticked and half renamed, 40 preferences added and
    10 made hard, each reply's calls in parallel: every change stored, both
    open tabs showing what is stored, one trace sentence per call, live
    and on reload."""
    script(*_many_call_script())
    socket = await sockets(thread.pk, owner)
    watcher = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Lay out 120 steps, tick them all, and note 40 rules"))
    frames = await frames_until_turn_end(socket, timeout=180)
    seen_by_other = await frames_until_turn_end(watcher, timeout=60)

    todos, prefs, history_rows, turn = await _stored(thread)
    # Every change reached the database.
    assert len(todos) == N
    assert all(done for _text, done in todos.values())
    assert sorted(text for text, _ in todos.values()) == sorted(
        [f"Step {i} (checked)" if i % 2 else f"Step {i}" for i in range(1, N + 1)]
    )
    assert len(prefs) == 40
    assert sum(kind == "hard" for _t, kind in prefs.values()) == 10
    # One plan history entry per writing call (docs/adr/0090): 120 + 120 + 60.
    assert history_rows == N + N + N // 2
    assert turn.status == Turn.Status.COMPLETE and "All done" in turn.answer

    # Both tabs end showing exactly what is stored.
    for seen in (frames, seen_by_other):
        steps, shown_prefs = _page_state(seen)
        assert steps == todos
        assert shown_prefs == prefs

    # One sentence per action in the live trace: 120+120+60+40+10 = 350.
    stream = "".join(frames)
    for i in (1, 57, N):
        assert f"Ticking off step {i}." in stream
    trace = dict(STEP_ITEM.findall(stream))
    assert len(trace) == N + N + N // 2 + 40 + 10
    assert sum(t.startswith("Ticking off step ") for t in trace.values()) == N
    assert sum(t.startswith("Noting rule ") for t in trace.values()) == 40

    # The trace on reload: the page lists every step sentence.
    await async_client.aforce_login(owner)
    page = (await async_client.get(f"/threads/{thread.pk}/workspace/")).content.decode()
    assert page.count("Ticking off step ") == N, "the reloaded trace should list every action"
    assert page.count("Adding step ") == N
    assert page.count("Making rule ") == 10
    assert "All done" in page


# --- the same tool-heavy turn, branched ("Continue from here") and exported ---------


def _chapter(chars: int) -> str:
    text, n = "", 0
    while len(text) < chars:
        n += 1
        text += f"Paragraph {n} of the chapter, with the reasoning that belongs to it.\n\n"
    return text[:chars]


@database_sync_to_async
def _everything(thread):
    from workspace import selectors
    from workspace.models import Artifact, DocumentRevision

    doc = selectors.document_for(thread=thread)
    return {
        "steps": [(s.text, s.done, s.depth) for s in selectors.plan_steps(thread=thread)],
        "prefs": sorted(Preference.objects.filter(thread=thread).values_list("title", "kind")),
        "history": PlanChange.objects.filter(thread=thread).count(),
        "artifacts": [(a.artifact_type, a.title, a.payload) for a in Artifact.objects.filter(thread=thread).order_by("pk")],
        "document": (doc.title, doc.content),
        "revisions": DocumentRevision.objects.filter(document__thread=thread).count(),
        "turns": list(Turn.objects.filter(thread=thread).order_by("index").values_list("index", "status", "answer")),
    }


async def test_the_tool_heavy_turn_is_carried_whole_by_a_branch_and_an_archive(owner, thread, script, async_client):
    """The same turn with a 150 000-character document and a 5000-row
    table: a branch and an exported-then-imported archive carry every
    step, preference, artifact, version count and trace sentence."""
    from conversations.archive import archive_bytes, import_archive
    from conversations.branching import fork_thread
    from conversations.turns import registry
    from workspace.models import Thread

    replies = _many_call_script()
    book = _chapter(150_000)
    table_rows = [[i, f"Item {i}", i * 0.5] for i in range(5000)]
    replies[-1:-1] = [
        Reply(
            tool_calls=[
                tool_call("update_document", "Writing the book.", content=book, title="Book"),
                tool_call("data_table", "Tabulating the items.", title="Items", columns=["id", "name", "value"], rows=table_rows),
            ]
        )
    ]
    script(*replies, default=Reply(text="Branch answer."))
    await registry.start_turn(thread=thread, user_message="Do everything")
    await registry.wait_for_turn(thread.pk, timeout=180)
    source = await Thread.objects.aget(pk=thread.pk)
    original = await _everything(source)
    assert len(original["steps"]) == N and len(original["artifacts"]) == 1 and original["document"][1] == book
    assert original["turns"][0][1] == Turn.Status.COMPLETE

    branch = await database_sync_to_async(fork_thread)(source=source, turn_index=1, user=owner)
    imported = await database_sync_to_async(import_archive)(raw=await database_sync_to_async(archive_bytes)(source), owner=owner)
    await async_client.aforce_login(owner)
    for copy_ in (branch, imported):
        copied = await _everything(copy_)
        for key in ("steps", "prefs", "artifacts", "document", "turns", "history"):
            assert copied[key] == original[key], (copy_, key)
        page = (await async_client.get(f"/threads/{copy_.pk}/workspace/")).content.decode()
        trace = dict(STEP_ITEM.findall(page))
        assert len(trace) == N + N + N // 2 + 40 + 10 + 2, (copy_, len(trace))
        assert "Ticking off step 120." in page and "Tabulating the items." in page


async def test_a_turn_of_one_call_per_reply_up_to_the_call_cap_ends_with_the_cap_note(owner, thread, script, sockets, settings):
    # A model that makes one tool call per reply, more replies than the
    # Execute mode's cap (25): the turn must stop at the cap with its plain
    # note (everything done so far kept), not at LangGraph's recursion limit
    # with "took too many steps", and every one of the 25 calls' changes stored.
    cap = settings.HAICO_MODEL_CALL_LIMIT
    replies = [
        Reply(tool_calls=[tool_call("add_todos", f"Adding step {i}.", steps=[{"text": f"Step {i}"}])]) for i in range(1, 40)
    ]
    script(*replies)
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Add steps one at a time"))
    frames = await frames_until_turn_end(socket, timeout=120)
    todos, _prefs, _history, turn = await _stored(thread)
    assert len(todos) == cap
    assert turn.status == Turn.Status.COMPLETE, (turn.status, turn.notice)
    assert f"limit of {cap} model calls" in turn.answer, (turn.answer, turn.notice)
    assert "too many steps" not in "".join(frames)


async def test_a_plan_of_2000_nested_steps_and_a_big_table_reach_an_open_tab(owner, thread, script, sockets):
    # Pushes too big for one message are replaced by a resync marker the
    # page acts on (docs/adr/0041): the tab must get either every row or
    # that marker, never a silently partial plan, and the turn must end.
    from conversations.live import RESYNC_WORKSPACE

    steps = [{"text": f"Step {i}", "depth": i % 8} for i in range(2000)]
    rows = [[i, f"Item {i}", i * 0.5, "x" * 20] for i in range(20_000)]
    script(
        Reply(
            tool_calls=[
                tool_call("add_todos", "Laying out the whole plan.", steps=steps),
                tool_call("data_table", "Tabulating the items.", title="Items", columns=["id", "name", "v", "note"], rows=rows),
            ]
        ),
        Reply(text="Laid out."),
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("plan it all"))
    frames = await frames_until_turn_end(socket, timeout=120)
    todos, _prefs, _history, turn = await _stored(thread)
    assert len(todos) == 2000 and turn.status == Turn.Status.COMPLETE
    stream = "".join(frames)
    shown, _ = _page_state(frames)
    assert len(shown) == 2000 or RESYNC_WORKSPACE in stream, len(shown)
