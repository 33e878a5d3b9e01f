"""What a plan write costs with the history's push as a marker (docs/adr/0092)
against the push that read the new entries back and rendered them
(docs/adr/0090), in one process, alternating.

Each sample ticks or unticks one step through the service
(`todo_set_done`, as a person's click or an agent's tool call does), whose
commit runs the live layer's subscriber: every patch of the change rendered
for the thread's open tabs. Sending is left out (the push's text is kept,
not sent), so the figures are the writer's: the write and the render.
"old" renders the history's part of the push as before: the new entries
read with their person, each rendered (`plan.html#history_entry`).

Run: .venv/bin/python -m bench.plan_history_push [--samples 300]
Medians; the machine is noisy: compare old and new of the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import as_if_every_thread_were_open, set_up_django  # noqa: E402

set_up_django(prefix="haico-bench-plan-push-", database_file="bench.sqlite3")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.template.loader import render_to_string  # noqa: E402

from conversations import live  # noqa: E402
from conversations.services import thread_create  # noqa: E402
from workspace import panels  # noqa: E402
from workspace.events import Change  # noqa: E402
from workspace.models import PlanChange  # noqa: E402
from workspace.services import plan as plan_services  # noqa: E402

NEW = panels.render_plan_history_patch


def old_render_for(thread):
    def old_render_plan_history_patch(*, ids) -> str:
        """The push of docs/adr/0090: the new entries read back and rendered."""
        entries = list(PlanChange.objects.filter(thread=thread, pk__in=list(ids)).select_related("person").order_by("-id"))
        if not entries:
            return ""
        rows = "".join(render_to_string("workspace/panels/plan.html#history_entry", {"entry": e}) for e in entries)
        return f'<div hx-swap-oob="beforeend:#live-inbox"><template data-live-patch="plan-history">{rows}</template></div>'

    return old_render_plan_history_patch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=300)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    as_if_every_thread_were_open()
    person = get_user_model().objects.create_user(username="ada", first_name="Ada", last_name="Byron")
    thread = thread_create(owner=person, title="Bench")
    steps = [plan_services.todo_add(thread=thread, text=f"Step {n}") for n in range(8)]

    pushed: list[str] = []
    live.publisher.publish = lambda thread_id, html, **_: pushed.append(html)  # type: ignore[method-assign]
    history_only = [Change(thread_id=thread.pk, surface="plan_history", ids=frozenset())]

    times: dict[str, list[float]] = {"old": [], "new": []}
    renders: dict[str, list[float]] = {"old": [], "new": []}
    sizes: dict[str, int] = {}
    old = old_render_for(thread)
    for n in range(2 * args.samples + 20):
        variant = "old" if n % 2 == 0 else "new"
        panels.render_plan_history_patch = old if variant == "old" else NEW
        pushed.clear()
        start = time.perf_counter()
        step = steps[n % len(steps)]
        plan_services.todo_set_done(todo=step, done=not step.done, author="person", person=person)
        elapsed = time.perf_counter() - start
        step.refresh_from_db()
        newest = PlanChange.objects.filter(thread=thread).latest("id").pk
        history_only[0] = Change(thread_id=thread.pk, surface="plan_history", ids=frozenset({newest}))
        start = time.perf_counter()
        panels.render_changes(thread, history_only)
        render = time.perf_counter() - start
        if n >= 20:  # warmed up
            times[variant].append(elapsed * 1000)
            renders[variant].append(render * 1000)
            sizes[variant] = len("".join(pushed).encode())
    panels.render_plan_history_patch = NEW

    print(f"{'':<4} {'toggle + push (ms)':>19} {'history push alone (ms)':>24} {'push bytes':>11}")
    for variant in ("old", "new"):
        toggle, alone = statistics.median(times[variant]), statistics.median(renders[variant])
        print(f"{variant:<4} {toggle:>19.3f} {alone:>24.3f} {sizes[variant]:>11}")
    saved = statistics.median(times["old"]) - statistics.median(times["new"])
    print(f"medians of {args.samples} each, alternating; the marker saves {saved:.3f} ms per plan write")


if __name__ == "__main__":
    main()
