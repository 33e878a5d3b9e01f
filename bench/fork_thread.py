"""How long forking a long thread takes (conversations.branching.fork_thread).

A thread of 200 turns, each started through the turn guard (so each has its
snapshot and turn row), with a 30 000-character document, 30 plan steps, 10
preferences and 5 artifacts, and a checkpointer history of 4 messages per
turn (the message, a tool call, its result, the answer). Forking at turn
200 copies the live rows and seeds 800 messages; forking at turn 100 reads
the workspace from turn 101's snapshot and seeds 400. Each fork is a new
thread, run in its three phases; the target is <= 300 ms at turn 200.
Production settings (DEBUG off), SQLite.

Run: .venv/bin/python -m bench.fork_thread [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import set_up_django  # noqa: E402

set_up_django(prefix="haico-fork-", database_file="fork.sqlite3")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402

from agent.seeding import seed_history  # noqa: E402
from conversations.branching import fork_thread  # noqa: E402
from conversations.services import thread_create  # noqa: E402
from conversations.turns import slot  # noqa: E402
from workspace import selectors  # noqa: E402
from workspace.models import Thread  # noqa: E402
from workspace.services import artifacts as artifact_services  # noqa: E402
from workspace.services import document as document_services  # noqa: E402
from workspace.services import plan as plan_services  # noqa: E402
from workspace.services import preferences as preference_services  # noqa: E402

TURNS = 200
PARAGRAPH = "A paragraph of the working draft that says something about costs and timing. " * 4


def long_thread(owner) -> Thread:
    thread = thread_create(owner=owner, title="Long thread")
    for n in range(10):
        preference_services.preference_add(thread=thread, title=f"Preference {n}", respect_lock=False)
    for n in range(30):
        plan_services.todo_add(thread=thread, text=f"Step {n}")
    for n in range(5):
        artifact_services.artifact_create(
            thread=thread,
            artifact_type="data_table",
            title=f"Table {n}",
            payload={"columns": ["Name", "Value"], "rows": [[f"row {i}", i] for i in range(20)]},
            turn_index=0,
        )
    content = "\n\n".join(PARAGRAPH for _ in range(30_000 // len(PARAGRAPH)))
    messages = []
    for turn in range(1, TURNS + 1):
        thread.refresh_from_db()
        index, _snapshot = slot.turn_begin(thread=thread, user_message=f"Tighten paragraph {turn}")
        document_services.document_save(
            thread=thread,
            title="Draft",
            content=content + f"\n\nTurn {turn}.",
            base_version=selectors.document_for(thread=thread).version,
        )
        slot.turn_finish(thread=thread, turn_index=index)
        call = {"name": "update_document", "args": {"content": "…"}, "id": f"call-{turn}", "type": "tool_call"}
        messages += [
            HumanMessage(f"Tighten paragraph {turn}", id=f"h{turn}"),
            AIMessage("", tool_calls=[call], id=f"a{turn}"),
            ToolMessage(f'{{"ok": true, "turn": {turn}}}', tool_call_id=f"call-{turn}", id=f"t{turn}"),
            AIMessage(f"Paragraph {turn} is tighter now.", id=f"r{turn}"),
        ]
    seed_history(thread.pk, messages)
    return Thread.objects.get(pk=thread.pk)


def timed_forks(source: Thread, owner, turn_index: int, repeats: int) -> tuple[float, float]:
    fork_thread(source=source, turn_index=turn_index, user=owner)  # warm
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fork_thread(source=source, turn_index=turn_index, user=owner)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def main(repeats: int) -> None:
    call_command("migrate", verbosity=0)
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    source = long_thread(owner)
    print(
        f"HAICO fork bench ({repeats} repeats, medians; {TURNS} turns, 30 000-character document, "
        f"{4 * TURNS} checkpointer messages)"
    )
    print(f"  (wall / CPU; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for turn_index in (TURNS, TURNS // 2):
        wall, cpu = timed_forks(source, owner, turn_index, repeats)
        verdict = f"  (target <= 300 ms: {'OK' if wall <= 300 else 'OVER'})" if turn_index == TURNS else ""
        print(f"  fork at turn {turn_index:<4}  {wall:7.1f} / {cpu:6.1f} ms{verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    main(parser.parse_args().repeats)
