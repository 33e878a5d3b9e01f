"""How long the trajectory map of a big family takes to assemble and render.

The family of the issue's benchmark: a root thread and 20 branches, each
with 50 turns of its own (1 050 nodes), forked from the root and from each
other at turns spread along their parents. Assembly is the four queries and
the pure layout (conversations.trajectory.reads.family_graph); render is the map
partial (render_map). The target (<= 50 ms for both) is about one page of
one member; the push after a turn ends renders once per member, so its cost
is also shown. Production settings (DEBUG off), SQLite.

Run: .venv/bin/python -m bench.trajectory_map [--repeats 30]
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

set_up_django(prefix="haico-trajectory-", database_file="trajectory.sqlite3")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from conversations import trajectory  # noqa: E402
from conversations.models import BranchLink, Turn  # noqa: E402
from conversations.services import thread_create  # noqa: E402
from conversations.trajectory.render import MapMarkup  # noqa: E402
from workspace import content_store  # noqa: E402
from workspace.models import ContentBlob, Thread, WorkspaceSnapshot  # noqa: E402

BRANCHES = 20
TURNS = 50


def add_turns(thread, first: int, count: int) -> None:
    indices = range(first, first + count)
    message = "Please tighten the second paragraph and add a sentence on costs for turn {}"
    document = content_store.store_text(ContentBlob, "x" * 200)
    empty_list = content_store.store_text(ContentBlob, "[]")
    WorkspaceSnapshot.objects.bulk_create(
        WorkspaceSnapshot(
            thread=thread,
            turn_index=i,
            user_message=message.format(i),
            document_body=document,
            preferences_body=empty_list,
            todos_body=empty_list,
        )
        for i in indices
    )
    Turn.objects.bulk_create(
        Turn(thread=thread, index=i, user_message=message.format(i), status=Turn.Status.COMPLETE, answer="Done.") for i in indices
    )
    Thread.objects.filter(pk=thread.pk).update(turn_index=first + count - 1)


def big_family(owner) -> list[Thread]:
    root = thread_create(owner=owner, title="Root")
    add_turns(root, 1, TURNS)
    family = [(root, 0)]
    for n in range(BRANCHES):
        parent, parent_point = family[n // 2]  # half fork the root's line, half each other
        point = parent_point + 1 + (n * 7) % TURNS
        branch = thread_create(owner=owner, title=f"Branch {n + 1}")
        BranchLink.objects.create(thread=branch, parent=parent, branch_point_turn=point, status=BranchLink.Status.ACTIVE)
        add_turns(branch, point + 1, TURNS)
        family.append((branch, point))
    return [thread for thread, _point in family]


CPU = {}  # name -> median CPU time (ms): the machine is shared, wall time waits for it


def timed(function, repeats: int, name: str = "") -> tuple[float, object]:
    function()  # compile templates, warm caches
    samples, cpu, result = [], [], None
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = function()
        samples.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    CPU[name] = statistics.median(cpu)
    return statistics.median(samples), result


def main(repeats: int) -> None:
    call_command("migrate", verbosity=0)
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    family = big_family(owner)
    current = Thread.objects.get(pk=family[-1].pk)
    assemble_ms, graph = timed(lambda: trajectory.family_graph(thread=current), repeats, "assemble")
    render_ms, html = timed(lambda: trajectory.render_map(graph), repeats, "render")
    both_ms, _ = timed(lambda: trajectory.render_map(trajectory.family_graph(thread=current)), repeats, "both")

    def push():
        # What a turn end used to render (the whole map for each member, without the sends).
        markup = MapMarkup(trajectory.family_graph(thread=current))
        return [markup.member_map(member.pk) for member in markup.graph.threads]

    def patches():
        # What a turn end renders now (docs/adr/0047): each member's node patch for the current thread's last turn.
        return trajectory.turn_ended_patches(thread=current, turn_index=current.turn_index)

    push_ms, maps = timed(push, repeats, "push")
    patches_ms, node_patches = timed(patches, repeats, "patches")
    print(
        f"HAICO trajectory map bench ({repeats} repeats, medians; root + {BRANCHES} branches x {TURNS} turns: "
        f"{len(graph.nodes)} nodes, {len(graph.edges)} edges, {len(graph.threads)} lanes)"
    )
    print(f"  (wall / CPU; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"  assemble (4 queries + layout)  {assemble_ms:6.1f} / {CPU['assemble']:5.1f} ms")
    print(f"  render (map partial)           {render_ms:6.1f} / {CPU['render']:5.1f} ms   {len(html) / 1024:6.1f} KB")
    print(
        f"  assemble + render              {both_ms:6.1f} / {CPU['both']:5.1f} ms   (target <= 50 ms: "
        f"wall {'OK' if both_ms <= 50 else 'OVER'}, CPU {'OK' if CPU['both'] <= 50 else 'OVER'})"
    )
    print(
        f"  whole maps for all {len(graph.threads)} members   {push_ms:6.1f} / {CPU['push']:5.1f} ms   "
        f"{sum(map(len, maps)) / 1024:6.1f} KB"
    )
    print(
        f"  a turn end's node patches        {patches_ms:6.1f} / {CPU['patches']:5.1f} ms   "
        f"{sum(map(len, node_patches.values())) / 1024:6.1f} KB ({max(map(len, node_patches.values()))} bytes at most each)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    main(parser.parse_args().repeats)
